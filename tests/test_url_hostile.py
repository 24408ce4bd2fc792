"""A URL Python's urlsplit refuses (an unclosed IPv6 bracket, a port that is no number)
is read as far as it goes: it never drops the SQL scan of the repository or the
PgBouncer whose DATABASE_URL holds it."""

from __future__ import annotations

from advisor.model import EnvVar, Source
from advisor.read.sql.drivers import connection_string_hazards


def test_an_unclosed_bracket_still_gives_the_hazard_and_hides_the_password():
    found = connection_string_hazards(
        'url = "jdbc:postgresql://app:s3cret@[fd00::1/orders?ssl=true"', "App.java", 3)
    (hazard,) = found
    assert hazard.kind == "protocol-prepare" and "prepareThreshold not set" in hazard.detail
    assert "s3cret" not in hazard.detail and "app:***@" in hazard.detail


def test_a_bracket_in_a_python_literal_does_not_drop_the_others(tmp_path):
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions
    from advisor.rules import load_rules

    (tmp_path / ".git").mkdir()
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "db.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: pgbouncer}\nspec:\n"
        "  template:\n    spec:\n      containers:\n        - name: pgbouncer\n"
        "          image: bitnami/pgbouncer:1.22.1\n          env:\n"
        "            - {name: POSTGRESQL_HOST, value: db}\n"
        "            - {name: PGBOUNCER_POOL_MODE, value: transaction}\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "odd.py").write_text('EXAMPLE = "postgresql://u:p@[::1/db?x=1"\n')
    (tmp_path / "app" / "jobs.sql").write_text("LISTEN jobs;\n")
    registry = load_rules()
    result = run_check([str(tmp_path)], CheckOptions(cache=False), registry)
    codes = [f.code for f in result.findings]
    assert "PA902" not in codes and not [f for f in result.findings if "Invalid IPv6" in
                                         f.message]
    assert any(f.code.startswith("PA4") and "LISTEN" in f.message for f in result.findings), \
        [(f.code, f.message[:80]) for f in result.findings]


def test_a_pgbouncer_database_url_with_a_variable_port_keeps_the_pooler():
    from advisor.read.sources.operators.containers import pooler_config_from_env

    env = (EnvVar(name="DATABASE_URL", value="postgres://app@db:$(DB_PORT)/orders",
                  source=Source(path="k8s/pgb.yaml", line=9)),
           EnvVar(name="POOL_MODE", value="transaction", source=Source(path="k8s/pgb.yaml",
                                                                      line=11)))
    settings, databases = pooler_config_from_env(env)
    assert settings["pool_mode"].value == "transaction"
    (db,) = databases
    assert db.dbname == "orders" and db.port == 5432


def test_kubernetes_dollar_escapes_in_env_values():
    """Kubernetes expands `$(VAR)` from variables defined earlier, keeps an unknown
    reference as written, and reads `$$` as one `$` (so `$$(A)` is the text `$(A)`)."""
    from advisor.read.sources.k8s import k8s_objects
    from advisor.read.workloads import configmap_index, workloads

    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
        "  template:\n    spec:\n      containers:\n        - name: web\n"
        "          image: web:1\n          env:\n"
        "            - {name: HOST, value: db}\n"
        "            - {name: URL, value: 'postgres://app@$(HOST):5432/$(NOPE)'}\n"
        "            - {name: LITERAL, value: 'keep $$(HOST) and pa$$word'}\n")
    objects, problems = k8s_objects(text, "k8s/web.yaml")
    assert not problems
    (load,) = workloads(objects, configmap_index(objects))
    env = {e.name: e.value for e in load.containers[0].env}
    assert env["URL"] == "postgres://app@db:5432/$(NOPE)"
    assert env["LITERAL"] == "keep $(HOST) and pa$word"
