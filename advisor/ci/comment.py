"""One pull-request comment, kept up to date: find ours by a hidden marker, edit it in
place, create it only when there is none. GitHub REST (also GitHub Enterprise Server)
over urllib; the token goes in the Authorization header and nowhere else.

Endpoints (REST API version 2022-11-28):
  GET   {api}/repos/{owner}/{repo}/issues/{number}/comments?per_page=100  (Link: rel="next")
  POST  {api}/repos/{owner}/{repo}/issues/{number}/comments             {"body": ...}
  PATCH {api}/repos/{owner}/{repo}/issues/comments/{comment_id}         {"body": ...}
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote, urljoin, urlsplit

from msgspec import Struct

from advisor import __version__
from advisor.model import Severity
from advisor.report import markdown as md
from advisor.report.common import DEFAULT_DOCS_URL

if TYPE_CHECKING:
    from advisor.model import CheckResult
    from advisor.rules import Registry

MARKER = "<!-- pool-advisor -->"
# GitHub rejects an issue comment body over 65,536 characters (422 "body is too long").
MAX_BODY = 65_536
DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
PER_PAGE = 100
MAX_PAGES = 50  # 5,000 comments: a pull request with more is not searched further
TIMEOUT_S = 30


class CommentError(Exception):
    """A failure to report to the user: already worded, never contains the token."""


# --- the comment body ----------------------------------------------------------------


def build_body(
    head: CheckResult,
    registry: Registry,
    *,
    base: CheckResult | None = None,
    docs_url: str = DEFAULT_DOCS_URL,
    source_url: str | None = None,
    commit: str | None = None,
    limit: int = MAX_BODY,
    new_only: bool = False,
) -> str:
    """The comment: marker, verdict, budget table (before -> after with `base`), how each
    budget was computed, findings by severity with sources in <details>, rule links.
    Falls back to shorter forms until it fits `limit` characters."""
    for detail in ("full", "no-finding-details", "no-details"):
        body = _body(head, registry, base, docs_url, source_url, commit, detail, None,
                     new_only)
        if len(body) <= limit:
            return body
    # Summary fallback: list as many findings (one line each) as fit.
    shown = len(head.findings)
    lo, hi = 0, shown
    while lo < hi:  # largest count that fits
        mid = (lo + hi + 1) // 2
        if len(_body(head, registry, base, docs_url, source_url, commit, "summary", mid,
                     new_only)) <= limit:
            lo = mid
        else:
            hi = mid - 1
    body = _body(head, registry, base, docs_url, source_url, commit, "summary", lo, new_only)
    if len(body) > limit:  # even the table does not fit: thousands of servers
        note = "\n\n_(cut to fit GitHub's comment size limit)_\n"
        body = body[: limit - len(note)] + note
    return body


Detail = Literal["full", "no-finding-details", "no-details", "summary"]


def _body(
    head: CheckResult,
    registry: Registry,
    base: CheckResult | None,
    docs_url: str,
    source_url: str | None,
    commit: str | None,
    detail: Detail,
    max_findings: int | None,
    new_only: bool = False,
) -> str:
    from advisor.report.compare import compare

    diff = compare(base, head) if base is not None else None
    parts = [MARKER, "### pool-advisor", _verdict(head, diff)]
    if diff is not None and diff.servers:
        parts.append(md.diff_table(diff))
        moves = md.term_moves(diff, source_url)
        if moves:
            parts.append(f"**What changed in the budget**\n\n{moves}")
    elif head.budgets:
        parts.append(md.budget_table(head.budgets))
    if head.notices and detail != "summary":
        parts.append(md.notices_section(head.notices))
    if detail in ("full", "no-finding-details"):
        parts.extend(md.budget_details(b) for b in head.budgets)

    new_fps = {f.fingerprint for f in diff.new} if diff is not None else None
    worse_fps = {f.fingerprint for f in diff.regressed} if diff is not None else None
    findings = head.findings
    if new_only and diff is not None:
        findings = diff.new
        left_out = len(head.findings) - len(findings)
        if left_out:
            parts.append(f"{left_out} finding{'s' if left_out != 1 else ''} the base "
                         "already had, unchanged, not listed (`--new-only`).")
    totals = {sev: sum(1 for f in findings if f.severity == sev) for sev in Severity}
    if head.suppressed:
        parts.append(f"{len(head.suppressed)} finding{'s' if len(head.suppressed) != 1 else ''}"
                     " suppressed by `pool-advisor: ignore[...]` comments or annotations.")
    if detail == "summary":
        assert max_findings is not None
        hidden = len(findings) - max_findings
        findings = _by_severity(findings)[:max_findings]
        parts.append(
            f"The full report is longer than GitHub allows in a comment ({MAX_BODY:,} "
            "characters): findings are listed one line each"
            + (f", {hidden} more not shown" if hidden > 0 else "")
            + ". See the job's log or the code scanning alerts for all of them."
        )
    if findings:
        parts.append(md.findings_section(
            findings, registry, docs_url=docs_url, source_url=source_url,
            new_fingerprints=new_fps, worse_fingerprints=worse_fps,
            details=detail == "full", totals=totals))
    if diff is not None and diff.fixed:
        fixed = "\n".join(
            f"- ~~{f.code}~~ {md.md_text(f.message)}"
            for f in _by_severity(diff.fixed)[: max_findings if detail == "summary" else None]
        )
        parts.append(f"#### Fixed by this change ({len(diff.fixed)})\n\n{fixed}")
    if diff is not None and diff.not_known:
        # gone only because the head did not read what they are about: not fixed
        unknown = "\n".join(
            f"- {f.code} {md.md_text(f.message)}: not known at head (PA901 "
            f"{md.md_code(n.unread)})" for n in diff.not_known for f in [n.finding])
        parts.append(f"#### Not known at head ({len(diff.not_known)})\n\n{unknown}")
    footer = f"pool-advisor {head.tool_version}"
    if commit:
        footer += f" \u00b7 {md.md_code(commit[:12])}"
    parts.append(f"<sub>{footer}</sub>")
    return "\n\n".join(parts) + "\n"


def _by_severity(findings):
    return sorted(findings, key=lambda f: -f.severity.rank)


def _verdict(head: CheckResult, diff) -> str:
    text = md.headline(head)
    if diff is None:
        return text
    bits = []
    if diff.new:
        worse = f" ({len(diff.regressed)} made worse)" if diff.regressed else ""
        bits.append(f"{len(diff.new)} new{worse}")
    if diff.fixed:
        bits.append(f"{len(diff.fixed)} fixed")
    if diff.not_known:
        bits.append(f"{len(diff.not_known)} not known at head")
    return text + (f" ({', '.join(bits)} compared with the base)" if bits else "")


# --- where to post -------------------------------------------------------------------


class Target(Struct, frozen=True):
    owner: str
    repo: str
    number: int
    head_sha: str | None = None


def resolve_target(repo: str | None, number: int | None, env: Mapping[str, str]) -> Target:
    """owner/repo and PR number from the arguments, else from GitHub Actions' environment
    (GITHUB_REPOSITORY, and the event payload at GITHUB_EVENT_PATH)."""
    event = _event(env)
    full = repo or env.get("GITHUB_REPOSITORY") or ""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", full):
        if full:
            raise CommentError(f"the repository must be OWNER/NAME, got {full!r}")
        raise CommentError("need the repository as OWNER/NAME: pass --repo or set "
                           "GITHUB_REPOSITORY")
    owner, name = full.split("/")
    pr = event.get("pull_request") or {}
    issue = event.get("issue") or {}
    if number is None:
        candidate = pr.get("number") or (issue.get("number") if "pull_request" in issue else None)
        if not isinstance(candidate, int):
            raise CommentError(
                "need the pull request number: pass --pr N, or run on a pull_request event "
                "(GITHUB_EVENT_PATH has no pull_request.number)"
            )
        number = candidate
    sha = (pr.get("head") or {}).get("sha")
    return Target(owner, name, number, sha if isinstance(sha, str) else None)


def _event(env: Mapping[str, str]) -> dict[str, Any]:
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CommentError(f"cannot read the event payload {path}: {exc}") from None
    return data if isinstance(data, dict) else {}


def read_token(env: Mapping[str, str], name: str = "GITHUB_TOKEN") -> str:
    token = env.get(name, "").strip()
    if not token:
        raise CommentError(
            f"environment variable {name} is not set or empty; pool-advisor reads the "
            "GitHub token from the environment only (use --token-env NAME for another variable)"
        )
    return token


def api_url_from(arg: str | None, env: Mapping[str, str]) -> str:
    url = (arg or env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    if urlsplit(url).scheme not in ("https", "http") or not urlsplit(url).netloc:
        raise CommentError(f"API URL must be http(s)://host[/path], got {url!r}")
    return url


# --- the REST client -----------------------------------------------------------------


class Comment(Struct, frozen=True):
    id: int
    body: str
    html_url: str


class Outcome(Struct, frozen=True):
    action: Literal["created", "updated", "unchanged"]
    comment: Comment


class GitHub:
    def __init__(self, api_url: str, token: str, timeout: float = TIMEOUT_S) -> None:
        self.api_url = api_url.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._origin = _origin(self.api_url)
        self._opener = urllib.request.build_opener(_SameOriginRedirects(self._origin))

    def __repr__(self) -> str:  # never show the token, even in a traceback's locals
        return f"GitHub({self.api_url!r})"

    def request(self, method: str, url: str, body: dict[str, Any] | None = None):
        """(parsed JSON, response headers). Only ever sends the token to the API origin."""
        for _hop in range(3):
            if _origin(url) != self._origin:
                raise CommentError(f"refusing to send the token to {_origin(url)}, "
                                   f"which is not the API host {self._origin}")
            try:
                return self._send(method, url, body)
            except urllib.error.HTTPError as exc:
                location = exc.headers.get("Location") if exc.headers else None
                if exc.code in (307, 308) and location:
                    # A renamed repository answers writes with 307: same method, same body.
                    url = urljoin(url, location)
                    continue
                raise CommentError(self._redact(_http_problem(method, url, exc))) from None
        raise CommentError(f"{method} {urlsplit(url).path}: too many redirects")

    def _send(self, method: str, url: str, body: dict[str, Any] | None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers={
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {self._token}",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"pool-advisor/{__version__}",
            **({"Content-Type": "application/json"} if data is not None else {}),
        })
        try:
            with self._opener.open(req, timeout=self._timeout) as resp:
                payload = resp.read()
                headers = resp.headers
        except urllib.error.HTTPError:
            raise
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise CommentError(self._redact(f"cannot reach {self.api_url}: {reason}")) from None
        try:
            return (json.loads(payload) if payload else None), headers
        except ValueError:
            raise CommentError(f"{method} {url}: GitHub sent a response that is not JSON") from None

    def _redact(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text

    def _repo(self, t: Target) -> str:
        return f"{self.api_url}/repos/{quote(t.owner, safe='')}/{quote(t.repo, safe='')}"

    def comments(self, t: Target) -> Iterator[Comment]:
        url: str | None = f"{self._repo(t)}/issues/{t.number}/comments?per_page={PER_PAGE}"
        seen = set()
        while url is not None and url not in seen:
            if len(seen) >= MAX_PAGES:
                raise CommentError(f"more than {MAX_PAGES} pages of comments "
                                   f"({MAX_PAGES * PER_PAGE}); stopped paging")
            seen.add(url)
            items, headers = self.request("GET", url)
            if not isinstance(items, list):
                raise CommentError(f"GET {urlsplit(url).path}: expected a list of comments")
            for item in items:
                yield _comment_of(item, f"GET {urlsplit(url).path}")
            url = next_link(headers.get("Link") if headers is not None else None)

    def create(self, t: Target, body: str) -> Comment:
        item, _ = self.request("POST", f"{self._repo(t)}/issues/{t.number}/comments",
                               {"body": body})
        return _comment_of(item, "POST comment")

    def update(self, t: Target, comment_id: int, body: str) -> Comment:
        item, _ = self.request("PATCH", f"{self._repo(t)}/issues/comments/{comment_id}",
                               {"body": body})
        return _comment_of(item, "PATCH comment")


def _comment_of(item: Any, what: str) -> Comment:
    """A comment from the API's JSON; anything else is a one-line error, not a crash."""
    ident = item.get("id") if isinstance(item, dict) else None
    if isinstance(ident, bool) or not isinstance(ident, int):
        raise CommentError(f"{what}: GitHub sent a malformed comment (no integer id)")
    body, url = item.get("body"), item.get("html_url")
    return Comment(ident, body if isinstance(body, str) else "",
                   url if isinstance(url, str) else "")


def upsert(client: GitHub, target: Target, body: str) -> Outcome:
    """Edit our comment (the first that starts with MARKER: someone quoting it has "> "
    before it) or create it; skip the edit when nothing changed, so reruns do not notify
    anyone."""
    if not body.startswith(MARKER):
        raise ValueError("comment body must start with the marker")
    ours = next((c for c in client.comments(target) if c.body.lstrip().startswith(MARKER)),
                None)
    if ours is None:
        return Outcome("created", client.create(target, body))
    if ours.body.strip() == body.strip():
        return Outcome("unchanged", ours)
    return Outcome("updated", client.update(target, ours.id, body))


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """urllib copies every header, Authorization included, onto a redirect, whatever
    its host: follow a redirect only within the API's origin (GitHub answers a renamed
    repository with a 301 to another path on the same host)."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if _origin(newurl) != self.origin:
            raise CommentError(f"{req.get_method()} {urlsplit(req.full_url).path}: HTTP {code} "
                               f"redirect to {_origin(newurl)}, not the API host {self.origin}; "
                               "refusing to send the token there")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="?([^";]+)"?')


def next_link(header: str | None) -> str | None:
    """The rel="next" URL of an RFC 8288 Link header, as GitHub paginates."""
    if not header:
        return None
    for part in header.split(","):
        m = _LINK.search(part)
        if m and "next" in m.group(2).split():
            return m.group(1)
    return None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _http_problem(method: str, url: str, exc: urllib.error.HTTPError) -> str:
    try:
        detail = json.loads(exc.read() or b"{}").get("message", "")
    except (ValueError, AttributeError):
        detail = ""
    what = f"{method} {urlsplit(url).path}: HTTP {exc.code}" + (f" {detail}" if detail else "")
    hint = {
        401: "the token was refused; check the variable holds a valid token",
        403: "the token lacks permission: the workflow needs `permissions: pull-requests: write`",
        404: "no such repository or pull request, or the token cannot see it",
        422: "GitHub rejected the comment",
    }.get(exc.code)
    return f"{what} ({hint})" if hint else what
