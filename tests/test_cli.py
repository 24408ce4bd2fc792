"""The CLI end to end: exit codes, formats, rules/explain, stdin, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_helpers import REPO, run_cli

ACME = REPO / "fixtures" / "acme-shop"
ACME_BOUNCER = REPO / "fixtures" / "acme-shop-pgbouncer"


def test_version():
    out = run_cli("--version")
    assert out.returncode == 0
    assert out.stdout.startswith("pool-advisor ")


def test_demo_reports_800_over_97_with_sources():
    out = run_cli("check", str(ACME), "-v", env={"COLUMNS": "200"})
    assert out.returncode == 1, out.stderr
    text = out.stdout
    # Paths are relative to the repository holding the fixture: this checkout.
    at = "fixtures/acme-shop/"
    assert f"40 (HPA maxReplicas, {at}k8s/hpa.yaml:12)" in text
    assert f"20 (HikariCP maximumPoolSize, {at}k8s/configmap.yaml:13)" in text
    assert "= 800" in text
    assert f"97 usable = 100 (max_connections, {at}k8s/postgres-config.yaml:" in text
    assert "3 (superuser_reserved_connections, default: PostgreSQL 15 default)" in text
    assert "PA101 [error] postgres: peak 800 connections > 97 usable, over by 703" in text
    assert "not subtracted" in text and "autovacuum" in text
    assert "Traceback" not in out.stderr


def test_pgbouncer_variant_fits():
    out = run_cli("check", str(ACME_BOUNCER))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "fits" in out.stdout


def test_json_schema_fields():
    out = run_cli("check", "--format", "json", str(ACME))
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["schema_version"] == 1
    (budget,) = data["budgets"]
    assert budget["max_connections"] == 100 and budget["usable"] == 97
    assert budget["peak"] == 800
    assert budget["terms"]["max_connections"]["source"]["path"] \
        == "fixtures/acme-shop/k8s/postgres-config.yaml"
    finding = next(f for f in data["findings"] if f["code"] == "PA101")
    assert finding["name"] == "oversubscribed-server"
    assert finding["location"]["path"] and finding["location"]["line"]
    assert finding["related"] and finding["fix"]["description"]


def test_json_round_trips():
    from advisor.report.json import load, render
    from advisor.rules import load_rules

    out = run_cli("check", "--format", "json", str(ACME))
    result = load(out.stdout)
    assert json.loads(render(result, load_rules())) == json.loads(out.stdout)


def test_json_streamed_is_the_rendered_text(monkeypatch, tmp_path):
    """check --format json to stdout is written as it is encoded (report.json.write):
    byte for byte what render() returns, however the chunks are batched, and what the
    CLI printed for a file written with --output (the rendered text)."""
    import io

    from advisor.report import json as json_report
    from tests.report_samples import sample_registry, sample_result

    result, registry = sample_result(), sample_registry()
    whole = json_report.render(result, registry)
    for per_write in (1, 7, 300, json_report.WRITE_SIZE):  # characters gathered per write
        monkeypatch.setattr(json_report, "WRITE_SIZE", per_write)
        out = io.StringIO()
        json_report.write(result, registry, out)
        assert out.getvalue() == whole
    streamed = run_cli("check", "--format", "json", "--no-cache", str(ACME))
    written = tmp_path / "report.json"
    run_cli("check", "--format", "json", "--no-cache", "-o", str(written), str(ACME))
    assert streamed.stdout == written.read_text(encoding="utf-8")


def test_fail_on_error_and_select_ignore():
    assert run_cli("check", "--ignore", "PA101", "--fail-on", "error", str(ACME)
                   ).returncode == 0
    assert run_cli("check", "--select", "oversubscribed-server", str(ACME)).returncode == 1
    bad = run_cli("check", "--select", "PA999x", str(ACME))
    assert bad.returncode == 2 and "unknown rule" in bad.stderr


def test_rules_and_explain():
    listing = run_cli("rules")
    assert listing.returncode == 0
    assert "PA101  oversubscribed-server" in listing.stdout
    doc = run_cli("explain", "oversubscribed-server")
    assert doc.returncode == 0 and "## Why is this bad" in doc.stdout
    assert run_cli("explain", "PA101").stdout == doc.stdout
    assert run_cli("explain", "nope").returncode == 2


def test_stdin_stream():
    text = "\n---\n".join(p.read_text() for p in sorted((ACME / "k8s").glob("*.yaml")))
    out = run_cli("check", "-", stdin=text)
    assert out.returncode == 1
    assert "<stdin>:" in out.stdout and "= 800" in out.stdout


def test_missing_path_is_usage_error():
    out = run_cli("check", "/nonexistent/path")
    assert out.returncode == 2 and "no such file" in out.stderr


def test_no_color_and_plain_when_not_a_tty():
    out = run_cli("check", str(ACME))
    assert "\033[" not in out.stdout


@pytest.mark.parametrize("name,content,needle", [
    ("binary.yaml", b"apiVersion: v1\x00\x01kind: x", "binary file"),
    ("latin1.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: caf\xe9}\n".encode(
        "latin-1"), "not valid UTF-8"),
    ("truncated.yaml", b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n"
     b"  replicas: [3\n", "invalid YAML"),
    ("dup.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {x: '1'\n",
     "invalid YAML"),
])
def test_bad_input_is_a_finding_with_location_and_others_still_checked(
        tmp_path: Path, name, content, needle):
    import shutil

    shutil.copytree(ACME, tmp_path / "repo")
    (tmp_path / "repo" / "k8s" / name).write_bytes(content)
    out = run_cli("check", str(tmp_path / "repo"))
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 1
    assert f"k8s/{name}:" in out.stdout and needle in out.stdout
    assert "PA901" in out.stdout
    assert "PA101" in out.stdout  # the other files still produced their findings


def test_dangling_symlink_is_reported_not_fatal(tmp_path: Path):
    import shutil

    shutil.copytree(ACME, tmp_path / "repo")
    (tmp_path / "repo" / "k8s" / "gone.yaml").symlink_to(tmp_path / "repo" / "k8s" / "nope.yaml")
    out = run_cli("check", str(tmp_path / "repo"))
    assert "Traceback" not in out.stderr
    assert "k8s/gone.yaml" in out.stdout and "PA901" in out.stdout
    assert "PA101" in out.stdout


def test_unreadable_file(tmp_path: Path):
    import os
    import shutil

    if os.geteuid() == 0:
        pytest.skip("root reads files regardless of mode bits")
    shutil.copytree(ACME, tmp_path / "repo")
    target = tmp_path / "repo" / "k8s" / "secret.yaml"
    target.write_text("apiVersion: v1\nkind: Secret\n")
    target.chmod(0)
    out = run_cli("check", str(tmp_path / "repo"))
    assert "cannot read" in out.stdout


def test_symlink_outside_root_not_followed(tmp_path: Path):
    import shutil

    outside = tmp_path / "outside.yaml"
    outside.write_text((ACME / "k8s" / "hpa.yaml").read_text())
    shutil.copytree(ACME, tmp_path / "repo")
    (tmp_path / "repo" / "k8s" / "link.yaml").symlink_to(outside)
    out = run_cli("check", str(tmp_path / "repo"))
    assert "outside the scanned root" in out.stdout
    assert "Traceback" not in out.stderr


def test_config_unknown_key_is_error_with_line(tmp_path: Path):
    import shutil

    shutil.copytree(ACME, tmp_path / "repo")
    (tmp_path / "repo" / ".pool-advisor.toml").write_text(
        'fail-on = "error"\n\n[[servers]]\nname = "x"\nmax_conections = 5\n')
    out = run_cli("check", str(tmp_path / "repo"))
    assert out.returncode == 2
    assert ".pool-advisor.toml:5" in out.stderr and "max_conections" in out.stderr


def test_pyproject_config_and_annotation_suppression(tmp_path: Path):
    import shutil

    shutil.copytree(ACME, tmp_path / "repo")
    (tmp_path / "repo" / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.pool-advisor]\nignore = ["PA301"]\nheadroom = 7\n')
    out = run_cli("check", str(tmp_path / "repo"))
    assert "7 (headroom" in out.stdout
    pg = tmp_path / "repo" / "k8s" / "postgres.yaml"
    pg.write_text(pg.read_text().replace(
        "  name: postgres\n  namespace: shop\nspec:\n  serviceName",
        "  name: postgres\n  namespace: shop\n  annotations:\n"
        "    pool-advisor.io/ignore: PA101\nspec:\n  serviceName"))
    out = run_cli("check", str(tmp_path / "repo"))
    assert "PA101" not in out.stdout, out.stdout


def test_inline_suppression_comment(tmp_path: Path):
    import shutil

    shutil.copytree(ACME, tmp_path / "repo")
    conf = tmp_path / "repo" / "k8s" / "postgres-config.yaml"
    conf.write_text(conf.read_text().replace(
        "    max_connections = 100\n",
        "    # pool-advisor: ignore[PA101] capacity raised in the next release\n"
        "    max_connections = 100\n"))
    out = run_cli("check", str(tmp_path / "repo"))
    assert "PA101" not in out.stdout, out.stdout


def test_default_text_is_the_budget_once_then_one_line_per_finding():
    out = run_cli("check", str(ACME), env={"COLUMNS": "80"})
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    budget = lines[:lines.index("")]
    # The arithmetic is wrapped to the terminal; the server's verdict line stays whole.
    assert all(len(x) <= 80 for x in budget[1:]), "the budget is wrapped to the terminal"
    assert sum("= 800" in x for x in lines) == 1, "the arithmetic is printed once"
    (finding,) = [x for x in lines if " PA101 " in x]
    assert finding.startswith(f"{ACME.name}/k8s/postgres-config.yaml:10: PA101 [error] ") or \
        re.match(r"^\S+postgres-config.yaml:10: PA101 \[error\] postgres: peak 800", finding)
    assert "not subtracted" not in out.stdout  # -v only


def test_statistics_counts_per_rule():
    out = run_cli("check", str(ACME), "--statistics")
    assert out.returncode == 1
    assert re.search(r"^1  PA101  oversubscribed-server +\[error\]$", out.stdout, re.M)
    assert "PA101 [error]" not in out.stdout


def test_output_dash_is_stdout_and_an_unwritable_output_is_exit_2(tmp_path):
    out = run_cli("check", str(ACME), "-o", "-", "-f", "json")
    assert out.returncode == 1 and json.loads(out.stdout)["summary"]["error"] == 1
    bad = run_cli("check", str(ACME), "-o", str(tmp_path / "missing" / "r.json"))
    assert bad.returncode == 2
    assert bad.stderr.startswith("pool-advisor: cannot write the report to ")
    assert "Traceback" not in bad.stderr and bad.stdout == ""


def test_write_renders_several_formats_from_one_run(tmp_path):
    out = run_cli("check", str(ACME), "-f", "json", "-o", str(tmp_path / "r.json"),
                  "--write", f"sarif={tmp_path / 'r.sarif'}", "--write", "github=-")
    assert out.returncode == 1, out.stderr
    assert json.loads((tmp_path / "r.sarif").read_text())["runs"][0]["results"]
    assert out.stdout.startswith("::error file=")
    assert run_cli("check", str(ACME), "--write", "pdf=x").returncode == 2


def test_colour_follows_no_color_and_force_color():
    forced = run_cli("check", str(ACME), env={"NO_COLOR": "", "FORCE_COLOR": "1"})
    assert "\033[1;31mOVER by 703\033[0m" in forced.stdout
    assert "[\033[31merror\033[0m]" in forced.stdout
    both = run_cli("check", str(ACME), env={"NO_COLOR": "1", "FORCE_COLOR": "1"})
    assert "\033[" not in both.stdout
    piped = run_cli("check", str(ACME), env={"NO_COLOR": ""})
    assert "\033[" not in piped.stdout  # not a terminal


def test_rules_output_is_aligned_for_every_name():
    out = run_cli("rules")
    rows = out.stdout.splitlines()
    starts = {len(r) - len(r.split("  ", 1)[1].lstrip()) for r in rows}  # name column
    severity_at = {r.index(r.split()[2], len(r.split()[0]) + 2 + len(r.split()[1])) for r in rows}
    assert len(starts) == 1 and len(severity_at) == 1, rows


def test_values_outside_a_root_without_git_suggest_the_root_that_holds_both(tmp_path: Path):
    # an unpacked archive (no .git): the root is the chart's folder (audit s23 D7)
    (tmp_path / "charts" / "x").mkdir(parents=True)
    (tmp_path / "charts" / "x" / "Chart.yaml").write_text("apiVersion: v2\nname: x\n"
                                                          "version: 1.0.0\n")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "v.yaml").write_text("replicaCount: 2\n")
    out = run_cli("check", "charts/x", "--values", "examples/v.yaml", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert "is outside the scanned root" in out.stderr
    assert out.stderr.rstrip().endswith("(no .git above the checked path: the root is its "
                                        "folder); give --root . to scan a folder that holds "
                                        "both")
