
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import report_samples as rs
from fake_github import MAX_BODY, FakeGitHub, serve
from gfm import parse, table_rows
from msgspec.structs import replace

from advisor.ci.comment import (
    MARKER,
    CommentError,
    GitHub,
    Target,
    build_body,
    next_link,
    resolve_target,
)
from advisor.model import CheckResult, Finding, Location, Severity

REPO = Path(__file__).resolve().parent.parent
TOKEN = "ghs_s3cr3tT0kenValue"

def run_cli(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("GITHUB_", "POOL_ADVISOR_"))}
    clean.update(PYTHONPATH=str(REPO), **(env or {}))
    return subprocess.run([sys.executable, "-m", "advisor", "comment", *args], env=clean,
                          capture_output=True, text=True, timeout=60, cwd=REPO)


def write_result(path: Path, result: CheckResult) -> Path:
    """As `pool-advisor check --format json` writes it."""
    from advisor.report import json as json_report

    path.write_text(json_report.render(result, rs.sample_registry()))
    return path


@pytest.fixture
def gh():
    fake = FakeGitHub(token=TOKEN)
    fake.add_pr("octo", "shop", 7, comments=["LGTM", "please fix the pool size"])
    with serve(fake) as running:
        yield running


def _post(gh, tmp_path, result=None, *extra, env=None):
    results = write_result(tmp_path / "result.json", result or rs.sample_result())
    return run_cli(["--json", str(results), "--repo", "octo/shop", "--pr", "7", *extra],
                   {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": gh.api_url, **(env or {})})


def _assert_clean(proc):
    assert TOKEN not in proc.stdout and TOKEN not in proc.stderr


def test_creates_then_edits_the_same_comment(gh, tmp_path):
    first = _post(gh, tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("pool-advisor: created https://github.test/octo/shop/pull/7")
    thread = gh.comments("octo", "shop", 7)
    assert len(thread) == 3 and thread[2]["body"].startswith(MARKER)
    ours = thread[2]["id"]

    second = _post(gh, tmp_path, rs.clean_result())
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("pool-advisor: updated")
    assert len(gh.comments("octo", "shop", 7)) == 3, "a second comment was created"
    patch = gh.mutations()[-1]
    assert (patch.method, patch.path) == ("PATCH", f"/repos/octo/shop/issues/comments/{ours}")
    assert set(patch.body) == {"body"} and "**fits**" in patch.body["body"]

    before = len(gh.mutations())
    third = _post(gh, tmp_path, rs.clean_result())
    assert third.stdout.startswith("pool-advisor: unchanged")
    assert len(gh.mutations()) == before, "an identical comment was re-sent"

    for r in gh.requests:
        # Header names are case-insensitive; the fake records them lower-cased.
        assert r.headers["authorization"] == f"Bearer {TOKEN}"
        assert r.headers["accept"] == "application/vnd.github+json"
        assert r.headers["x-github-api-version"] == "2022-11-28"
        assert r.headers["user-agent"].startswith("pool-advisor/")
    gets = [r for r in gh.requests if r.method == "GET"]
    assert all(r.query["per_page"] == ["100"] for r in gets)
    for proc in (first, second, third):
        _assert_clean(proc)


def test_a_reply_quoting_our_comment_is_not_taken_for_it(tmp_path):
    fake = FakeGitHub(token=TOKEN)
    fake.add_pr("octo", "shop", 7, comments=[f"> {MARKER}\n> ### pool-advisor\n\nwhy?"])
    with serve(fake):
        proc = _post(fake, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("pool-advisor: created")
    assert fake.comments("octo", "shop", 7)[0]["body"].startswith("> ")


def test_pages_through_comments_to_find_ours(gh, tmp_path):
    fake = FakeGitHub(token=TOKEN)
    bodies = [f"comment {i}" for i in range(250)]
    bodies[230] = f"{MARKER}\nold report"
    fake.add_pr("octo", "shop", 7, comments=bodies)
    with serve(fake):
        proc = _post(fake, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("pool-advisor: updated")
    assert len(fake.comments("octo", "shop", 7)) == 250
    gets = [r for r in fake.requests if r.method == "GET"]
    assert [r.path for r in gets] == [
        "/repos/octo/shop/issues/7/comments",
        "/repositories/4000/issues/7/comments",  # followed Link rel="next" as given
        "/repositories/4000/issues/7/comments",
    ]
    assert [r.query.get("page") for r in gets] == [None, ["2"], ["3"]]
    assert fake.comments("octo", "shop", 7)[230]["body"].startswith(MARKER + "\n\n### pool-advisor")


def test_github_enterprise_api_url(tmp_path):
    fake = FakeGitHub(token=TOKEN, prefix="/api/v3")
    fake.add_pr("corp", "infra", 12)
    with serve(fake):
        results = write_result(tmp_path / "r.json", rs.sample_result())
        proc = run_cli(["--json", str(results), "--repo", "corp/infra", "--pr", "12",
                        "--api-url", fake.api_url], {"GITHUB_TOKEN": TOKEN})
    assert proc.returncode == 0, proc.stderr
    assert [r.path for r in fake.requests] == [
        "/api/v3/repos/corp/infra/issues/12/comments",
        "/api/v3/repos/corp/infra/issues/12/comments",
    ]
    assert [r.method for r in fake.requests] == ["GET", "POST"]


def test_repo_and_pr_from_the_actions_environment(gh, tmp_path):
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {
        "number": 7, "head": {"sha": "0123456789abcdef0123456789abcdef01234567"}}}))
    results = write_result(tmp_path / "r.json", rs.sample_result())
    proc = run_cli(["--json", str(results)], {
        "GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": gh.api_url, "GITHUB_REPOSITORY": "octo/shop",
        "GITHUB_EVENT_PATH": str(event), "GITHUB_SERVER_URL": "https://github.test"})
    assert proc.returncode == 0, proc.stderr
    body = gh.comments("octo", "shop", 7)[-1]["body"]
    blob = "https://github.test/octo/shop/blob/0123456789abcdef0123456789abcdef01234567"
    assert f"({blob}/k8s/hpa.yaml#L7)" in body
    assert "`0123456789ab`" in body


def test_token_from_a_named_variable(gh, tmp_path):
    results = write_result(tmp_path / "r.json", rs.sample_result())
    proc = run_cli(["--json", str(results), "--repo", "octo/shop", "--pr", "7",
                    "--token-env", "PA_TOKEN"], {"PA_TOKEN": TOKEN, "GITHUB_API_URL": gh.api_url})
    assert proc.returncode == 0, proc.stderr
    missing = run_cli(["--json", str(results), "--repo", "octo/shop", "--pr", "7",
                       "--token-env", "NOPE"], {"GITHUB_TOKEN": TOKEN,
                                                "GITHUB_API_URL": gh.api_url})
    assert missing.returncode == 2
    assert "environment variable NOPE is not set" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_refused_token_is_reported_without_printing_it(gh, tmp_path):
    results = write_result(tmp_path / "r.json", rs.sample_result())
    wrong = TOKEN + "x"
    proc = run_cli(["--json", str(results), "--repo", "octo/shop", "--pr", "7"],
                   {"GITHUB_TOKEN": wrong, "GITHUB_API_URL": gh.api_url})
    assert proc.returncode == 2
    assert "HTTP 401 Bad credentials" in proc.stderr and "token was refused" in proc.stderr
    assert wrong not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr
    assert gh.mutations() == []


def test_unknown_pull_request_is_404(gh, tmp_path):
    results = write_result(tmp_path / "r.json", rs.sample_result())
    proc = run_cli(["--json", str(results), "--repo", "octo/shop", "--pr", "99"],
                   {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": gh.api_url})
    assert proc.returncode == 2
    assert "GET /repos/octo/shop/issues/99/comments: HTTP 404 Not Found" in proc.stderr
    _assert_clean(proc)


def test_unreachable_api_is_a_clear_error(tmp_path):
    results = write_result(tmp_path / "r.json", rs.sample_result())
    with serve(FakeGitHub(token=TOKEN)) as fake:
        url = fake.api_url  # closed when the block ends: nothing listens there afterwards
    proc = run_cli(["--json", str(results), "--repo", "octo/shop", "--pr", "7"],
                   {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": url})
    assert proc.returncode == 2 and "cannot reach" in proc.stderr
    _assert_clean(proc)


def test_bad_input_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text('{"budgets": 3}')
    proc = run_cli(["--json", str(bad), "--dry-run"])
    assert proc.returncode == 2
    assert "is not a pool-advisor check result" in proc.stderr and "Traceback" not in proc.stderr


def _many_findings(n: int) -> CheckResult:
    findings = [
        replace(rs.oversubscribed(), subject=f"s{i}",
                location=Location(path=f"k8s/app-{i}.yaml", line=i + 1),
                severity=[Severity.error, Severity.warning, Severity.info][i % 3])
        for i in range(n)
    ]
    return CheckResult(tool_version="0.1.0", budgets=[rs.budget()], findings=findings)


def test_oversized_report_falls_back_to_a_summary_that_github_accepts(gh, tmp_path):
    proc = _post(gh, tmp_path, _many_findings(3000))
    assert proc.returncode == 0, proc.stderr
    body = gh.comments("octo", "shop", 7)[-1]["body"]
    assert len(body) <= MAX_BODY
    assert "longer than GitHub allows" in body and "more not shown" in body
    tree = parse(body)
    assert table_rows(tree.find_all("table")[0])[1][0] == "pg-primary"
    assert "1000 errors, 1000 warnings, 1000 info" in tree.text()
    (errors,) = tree.find_all("h4")  # errors first; the rest did not fit
    assert errors.text().startswith("Errors (") and errors.text().endswith(" of 1,000)")


def test_fallback_levels_keep_as_much_as_fits():
    reg = rs.sample_registry()
    result = _many_findings(60)
    full = build_body(result, reg)
    assert full.count("<details>") == 61  # 1 budget + 60 findings
    smaller = build_body(result, reg, limit=len(full) - 1)
    assert "<details>" in smaller and smaller.count("<details>") == 1  # budget kept
    tiny = build_body(result, reg, limit=4000)
    assert len(tiny) <= 4000 and "more not shown" in tiny and tiny.startswith(MARKER)


def test_before_after_table_and_details_render_with_gfm():
    base = CheckResult(tool_version="0.1.0", budgets=[rs.budget(peak_pods=30)],
                       findings=[rs.oversubscribed(peak_pods=30), rs.memory_note(),
                                 replace(rs.session_set(), subject="gone")])
    head = rs.sample_result()
    body = build_body(head, rs.sample_registry(), base=base)
    tree = parse(body)
    rows = table_rows(tree.find_all("table")[0])
    assert rows[0] == ["Server", "Usable", "Peak before \u2192 after", "Change", "Status"]
    assert rows[1] == ["pg-primary", "97", "600 \u2192 800", "+200", "\u274c over by 703"]
    assert rows[2][:4] == ["pg-reporting", "\u2013 \u2192 197", "\u2013 \u2192 30", "new server"]
    summaries = [d.find_all("summary")[0].text() for d in tree.find_all("details")]
    assert summaries[0] == "pg-primary: how usable 97 and peak 800 were computed"
    assert "Sources and fix" in summaries
    for d in tree.find_all("details"):
        assert "ul" in d.child_tags()
    text = tree.text()
    assert "3 new (1 made worse), 1 fixed compared with the base" in text
    assert "Fixed by this change (1)" in text
    # PA101 matched by fingerprint (same subject), but pg-primary went from 503 over to
    # 703 over: a regression is reported as new, marked worse, never hidden.
    heads = [p.text() for p in tree.find_all("p") if "PA101" in p.text()]
    assert heads and all("\U0001f4c8 worse" in h for h in heads)
    # ... and the comment says which number moved, from which file:line.
    assert "What changed in the budget" in text
    assert "pg-primary: checkout: HPA maxReplicas 30 \u2192 40 (k8s/hpa.yaml:7)" in text
    assert any("\U0001f195" in p.text() and "PA401" in p.text() for p in tree.find_all("p"))
    links = [a.attrs["href"] for a in tree.find_all("a")]
    assert any(h.endswith("/rules/PA401-session-state-in-transaction-mode.md") for h in links)


def test_clean_result_says_it_fits():
    body = build_body(rs.clean_result(), rs.sample_registry())
    assert body.startswith(MARKER + "\n")
    tree = parse(body)
    assert tree.find_all("strong")[0].text() == "fits"
    assert not tree.find_all("h4")


def test_runs_the_check_itself_and_reads_a_bare_model_dump(tmp_path):
    proc = run_cli(["fixtures/acme-shop", "--dry-run"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(MARKER)
    tree = parse(proc.stdout)
    rows = table_rows(tree.find_all("table")[0])
    assert rows[0][0] == "Server" and len(rows) >= 2
    dump = tmp_path / "dump.json"
    from pydantic import TypeAdapter

    from advisor.model import CheckResult

    dump.write_bytes(TypeAdapter(CheckResult).dump_json(rs.clean_result()))
    proc = run_cli(["--json", str(dump), "--dry-run"])
    assert proc.returncode == 0 and "**fits**" in proc.stdout


def test_dry_run_prints_the_body_without_a_token(tmp_path):
    results = write_result(tmp_path / "r.json", rs.clean_result())
    proc = run_cli(["--json", str(results), "--dry-run"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(MARKER) and "**fits**" in proc.stdout


def test_redirects_are_followed_only_on_the_api_host(tmp_path):
    other = FakeGitHub(token=TOKEN)
    other.add_pr("octo", "shop", 7)
    fake = FakeGitHub(token=TOKEN)
    fake.add_pr("octo", "renamed", 7)
    with serve(other), serve(fake):
        # A renamed repository: GitHub answers 301 to the new name on the same host.
        fake.redirects["/repos/octo/shop/issues/7/comments"] = \
            f"{fake.api_url}/repos/octo/renamed/issues/7/comments?per_page=100"
        proc = _post(fake, tmp_path)
        assert proc.returncode == 0, proc.stderr
        # The POST got a 307 and was re-sent, body and all, to the new name.
        assert len(fake.comments("octo", "renamed", 7)) == 1
        assert [r.method for r in fake.requests].count("POST") == 2
        # A redirect to another host would carry the Authorization header with it.
        fake.redirects["/repos/octo/shop/issues/7/comments"] = \
            f"{other.api_url}/repos/octo/shop/issues/7/comments"
        proc = _post(fake, tmp_path)
    assert proc.returncode == 2 and "refusing to send the token" in proc.stderr
    assert other.requests == []
    _assert_clean(proc)


def test_token_only_goes_to_the_api_origin():
    client = GitHub("https://api.github.com", TOKEN)
    with pytest.raises(CommentError, match="refusing to send the token") as exc:
        client.request("GET", "https://evil.example/repos/a/b/issues/1/comments")
    assert TOKEN not in str(exc.value) and TOKEN not in repr(client)


def test_next_link_parsing():
    header = ('<https://api.github.com/repositories/1/issues/2/comments?page=2>; rel="next", '
              '<https://api.github.com/repositories/1/issues/2/comments?page=5>; rel="last"')
    assert next_link(header).endswith("page=2")
    assert next_link('<https://x/y?page=1>; rel="prev"') is None
    assert next_link(None) is None


def test_resolve_target_from_event(tmp_path):
    event = tmp_path / "e.json"
    event.write_text(json.dumps({"issue": {"number": 5, "pull_request": {}}}))
    t = resolve_target(None, None, {"GITHUB_REPOSITORY": "a/b", "GITHUB_EVENT_PATH": str(event)})
    assert t == Target("a", "b", 5, None)
    with pytest.raises(CommentError, match="pull request number"):
        resolve_target("a/b", None, {})
    with pytest.raises(CommentError, match="OWNER/NAME"):
        resolve_target("nonsense", 1, {})


def test_finding_messages_cannot_break_out_of_the_comment():
    hostile = Finding(code="PA401", name="session-state-in-transaction-mode",
                      severity=Severity.warning, location=Location(path="a.py", line=1),
                      message="</details><!-- pool-advisor --> | ![x](http://e/x.png)")
    body = build_body(CheckResult(tool_version="0", findings=[hostile]), rs.sample_registry())
    assert body.count(MARKER) == 1
    tree = parse(body)
    assert not tree.find_all("img")
