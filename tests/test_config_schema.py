"""advisor.config.settings.Settings (what the engine reads, a msgspec Struct) and
advisor.config.schema.SettingsFile (the file's pydantic schema) stay in step."""

from pathlib import Path

import pytest

from advisor.config.schema import SettingsFile
from advisor.config.settings import Settings, load_settings
from advisor.read.fs import InputError


def test_same_fields_and_defaults():
    defaults = Settings()
    ours = {name: getattr(defaults, name) for name in Settings.__struct_fields__}
    origin = ours.pop("origin")
    assert origin is None
    assert ours.pop("folder") == ""  # where the file is, like origin: not a user key
    assert ours.pop("cpu_sources") == {}  # where node-cpus is set: not a user key
    schema = SettingsFile()
    assert set(ours) == set(SettingsFile.model_fields)
    assert ours == {name: getattr(schema, name) for name in ours}


def test_loaded_file_becomes_the_dataclass(tmp_path: Path):
    cfg = tmp_path / ".pool-advisor.toml"
    cfg.write_text('fail-on = "error"\nheadroom = 4\nnode-cpus = 8\n'
                   '[[servers]]\nname = "rds"\nmax_connections = 400\nmemory = "16GiB"\n'
                   '[rules.PA301]\nnodes_per_query = 3\n')
    settings = load_settings(cfg, "cfg.toml")
    assert isinstance(settings, Settings)
    assert (settings.fail_on, settings.headroom, settings.node_cpus) == ("error", 4, 8)
    assert settings.servers[0].memory == 16 * 1024**3
    assert settings.rules == {"PA301": {"nodes_per_query": 3}}
    assert settings.origin == "cfg.toml"


def test_unknown_key_is_an_error_at_its_line(tmp_path: Path):
    cfg = tmp_path / ".pool-advisor.toml"
    cfg.write_text('headroom = 2\n\n[[servers]]\nname = "x"\nmax_conections = 3\n')
    with pytest.raises(InputError) as info:
        load_settings(cfg, "cfg.toml")
    assert info.value.line == 5 and "unknown key" in info.value.message


def test_no_file_builds_no_pydantic_model():
    assert load_settings(None) == Settings()


@pytest.mark.parametrize(("table", "message"), [
    ("[rules.PA301]\nnodes_per_query = 0\n",
     "[rules.PA301] nodes_per_query: Input should be greater than or equal to 1"),
    ("[rules.PA103]\nthreads_per_core = 9\n",
     "[rules.PA103] threads_per_core: Input should be less than or equal to 8"),
    ("[rules.PA301]\nnodes = 3\n", "[rules.PA301] nodes: Unexpected keyword argument"),
    ("[rules.PA411]\ninclude_scoped_set = 'maybe'\n",
     "[rules.PA411] include_scoped_set: Input should be a valid boolean"),
])
def test_rule_options_are_validated(tmp_path: Path, table: str, message: str):
    from advisor.engine.check import run_check
    from advisor.engine.options import UsageError

    (tmp_path / ".pool-advisor.toml").write_text(table)
    (tmp_path / "postgresql.conf").write_text("max_connections = 10\n")
    with pytest.raises(UsageError) as info:
        run_check([str(tmp_path)])
    assert message in str(info.value)


def test_rule_options_reach_the_rule(tmp_path: Path):
    from advisor.budget.slots import MemoryOptions
    from advisor.engine.check import project_settings
    from advisor.engine.evaluate import memory_options
    from advisor.engine.options import CheckOptions
    from advisor.rules import load_rules

    (tmp_path / ".pool-advisor.toml").write_text(
        '[rules.PA301]\nnodes_per_query = "3"\nbackend_overhead = "3MB"\n')
    settings = project_settings([str(tmp_path)], CheckOptions())
    assert memory_options(settings, load_rules()) == MemoryOptions(
        nodes_per_query=3, backend_overhead="3MB")


def test_pa301_options_shape_the_checked_budget(tmp_path: Path):
    import shutil

    from advisor.engine.check import run_check

    shutil.copytree(Path(__file__).resolve().parent.parent / "fixtures" / "acme-shop",
                    tmp_path / "shop")
    (tmp_path / "shop" / ".pool-advisor.toml").write_text(
        "[rules.PA301]\nnodes_per_query = 3\n")
    budget = run_check([str(tmp_path / "shop")]).budgets[0]
    assert budget.memory is not None
    assert any("3 sort/hash nodes per query" in a for a in budget.memory.assumptions)


@pytest.mark.parametrize(("name", "prefix"), [(".pool-advisor.toml", ""),
                                              ("pyproject.toml", "tool.pool-advisor.")])
def test_a_workload_declared_twice_is_an_error_at_the_second(tmp_path: Path, name: str,
                                                             prefix: str):
    # audit 13d: one declaration per database a client uses (Sourcegraph's frontend)
    # kept only the last, and the other servers lost its connections unsaid
    cfg = tmp_path / name
    block = '[[{p}workloads]]\nname = "frontend"\nconnections = 30\ntarget = "{t}"\n'
    cfg.write_text(("[tool.pool-advisor]\n" if prefix else "")
                   + block.format(p=prefix, t="pgsql") + "\n"
                   + block.format(p=prefix, t="codeintel-db"))
    with pytest.raises(InputError) as info:
        load_settings(cfg, name)
    first = 2 if prefix else 1
    assert info.value.line == first + 5
    assert f"'frontend' is declared twice (line {first})" in info.value.message
