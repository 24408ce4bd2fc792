"""`pool-advisor comment`: post the check's result as one pull-request comment, edited
in place on every push."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    app.command("comment")(comment)


def comment(
    paths: list[Path] = typer.Argument(
        None, help="Paths to check (when --json is not given).", show_default=False),
    json_file: Path = typer.Option(
        None, "--json", help="CheckResult JSON written by `pool-advisor check --format json`.",
        show_default=False),
    base_json: Path = typer.Option(
        None, "--base-json",
        help="CheckResult JSON of the base revision: the comment shows before -> after.",
        show_default=False),
    repo: str = typer.Option(
        None, "--repo", help="OWNER/NAME. Default: $GITHUB_REPOSITORY.", show_default=False),
    pr: int = typer.Option(
        None, "--pr", help="Pull request number. Default: from $GITHUB_EVENT_PATH.",
        show_default=False),
    token_env: str = typer.Option(
        "GITHUB_TOKEN", "--token-env", help="Environment variable holding the token."),
    api_url: str = typer.Option(
        None, "--api-url",
        help="REST API root, e.g. https://ghe.example.com/api/v3. "
             "Default: $GITHUB_API_URL, else https://api.github.com.", show_default=False),
    docs_url: str = typer.Option(
        None, "--docs-url", help="Base URL of the rules/ pages. Default: $POOL_ADVISOR_DOCS_URL.",
        show_default=False),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the comment instead of posting it."),
    new_only: bool = typer.Option(
        False, "--new-only", help="With --base-json: list only findings the change "
        "introduced or made worse."),
) -> None:
    """Create or update the pool-advisor comment on a pull request."""
    from advisor.ci.comment import CommentError

    try:
        _comment(paths or [], json_file, base_json, repo, pr, token_env, api_url, docs_url,
                 dry_run, os.environ, new_only)
    except CommentError as exc:
        print(f"pool-advisor comment: error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None


def _comment(paths, json_file, base_json, repo, pr, token_env, api_url, docs_url, dry_run,
             env, new_only=False) -> None:
    from advisor.ci.comment import (
        CommentError,
        GitHub,
        api_url_from,
        build_body,
        read_token,
        resolve_target,
        upsert,
    )
    from advisor.report.common import DEFAULT_DOCS_URL
    from advisor.rules import load_rules

    if json_file is None and not paths:
        raise CommentError("give --json FILE (from `check --format json`) or paths to check")
    head = _load(json_file) if json_file is not None else _run_check(paths)
    base = _load(base_json) if base_json is not None else None
    docs = docs_url or env.get("POOL_ADVISOR_DOCS_URL") or DEFAULT_DOCS_URL
    target = None
    try:
        target = resolve_target(repo, pr, env)
    except CommentError:
        if not dry_run:  # a dry run only uses the target for links to the files
            raise
    source_url = None
    if target is not None and target.head_sha:
        server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
        source_url = f"{server}/{target.owner}/{target.repo}/blob/{target.head_sha}"
    body = build_body(head, load_rules(), base=base, docs_url=docs, source_url=source_url,
                      commit=target.head_sha if target else None, new_only=new_only)
    if dry_run:
        sys.stdout.write(body)
        return
    assert target is not None
    client = GitHub(api_url_from(api_url, env), read_token(env, token_env))
    outcome = upsert(client, target, body)
    where = outcome.comment.html_url or f"comment {outcome.comment.id}"
    print(f"pool-advisor: {outcome.action} {where}")


def _load(path: Path):
    """A result from `check --format json` (advisor.report.json's schema); a bare
    CheckResult model dump is accepted too."""
    import json

    import msgspec

    from advisor.ci.comment import CommentError
    from advisor.report import json as json_report

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommentError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    problem = "not JSON"
    try:
        data = json.loads(text)
        if isinstance(data, dict) and "tool" in data:
            return json_report.load(text)
        return json_report.check_result_from(text)
    except msgspec.ValidationError as exc:  # e.g. "Expected `str`, got `int` - at `$.roots[0]`"
        problem = str(exc)
    except (KeyError, TypeError) as exc:
        problem = f"missing {exc}"
    except ValueError as exc:
        problem = str(exc)
    raise CommentError(f"{path} is not a pool-advisor check result (JSON from "
                       f"`check --format json`): {problem}")


def _run_check(paths: list[Path]):
    from advisor.ci.comment import CommentError
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions, UsageError

    try:
        return run_check([str(p) for p in paths], CheckOptions())
    except UsageError as exc:
        raise CommentError(str(exc)) from None
