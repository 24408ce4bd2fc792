"""A loopback stand-in for the GitHub REST endpoints `pool-advisor comment` uses, strict
about the contract GitHub documents for them (REST API 2022-11-28):

- Authorization: `Bearer <token>` or `token <token>`, else 401 "Bad credentials";
- Accept: application/vnd.github+json; X-GitHub-Api-Version: 2022-11-28 (else 400);
  a User-Agent (GitHub answers 403 without one);
- list comments: GET /repos/{owner}/{repo}/issues/{n}/comments, per_page 1..100 (default
  30), page N, `Link` header with rel="next"/"last" pointing at the
  /repositories/{id}/... form GitHub really sends (clients must follow it, not rebuild);
- create: POST /repos/{owner}/{repo}/issues/{n}/comments, JSON object with only `body`
  -> 201; update: PATCH /repos/{owner}/{repo}/issues/comments/{id} -> 200;
- a body over 65,536 characters -> 422; unknown repository, issue or comment -> 404.
Every request is recorded for the tests to inspect.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MAX_BODY = 65_536


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: object


@dataclass
class FakeGitHub:
    token: str
    read_only_token: str | None = None  # what a fork's pull request gets: reads only
    prefix: str = ""  # "/api/v3" for GitHub Enterprise Server
    repos: dict[tuple[str, str], int] = field(default_factory=dict)  # (owner, repo) -> id
    issues: dict[tuple[int, int], list[dict]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    redirects: dict[str, str] = field(default_factory=dict)  # path -> Location
    next_id: int = 1000
    port: int = 0

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    def add_pr(self, owner: str, repo: str, number: int, comments: list[str] = ()) -> None:
        repo_id = self.repos.setdefault((owner, repo), 4000 + len(self.repos))
        thread = self.issues.setdefault((repo_id, number), [])
        for body in comments:
            thread.append(self._new_comment(owner, repo, number, body, login="someone"))

    def comments(self, owner: str, repo: str, number: int) -> list[dict]:
        return self.issues[(self.repos[(owner, repo)], number)]

    def _new_comment(self, owner, repo, number, body, login="github-actions[bot]") -> dict:
        self.next_id += 1
        return {
            "id": self.next_id,
            "body": body,
            "user": {"login": login},
            "html_url": f"https://github.test/{owner}/{repo}/pull/{number}"
                        f"#issuecomment-{self.next_id}",
        }

    def mutations(self) -> list[Recorded]:
        return [r for r in self.requests if r.method != "GET"]


def _handler(gh: FakeGitHub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep pytest output clean
            pass

        def _send(self, status: int, payload, headers: dict[str, str] | None = None):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, **extra):
            self._send(status, {"message": message, "documentation_url":
                                "https://docs.github.com/rest", "status": str(status), **extra})

        def _handle(self, method: str):
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                return self._error(400, "Problems parsing JSON")
            gh.requests.append(Recorded(method, url.path, parse_qs(url.query),
                                        {k.lower(): v for k, v in self.headers.items()}, body))

            if url.path in gh.redirects:
                # As GitHub does for a renamed repository: 301 for GET, 307 otherwise.
                self.send_response(301 if method == "GET" else 307)
                self.send_header("Location", gh.redirects[url.path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            auth = self.headers.get("Authorization", "")
            tokens = [t for t in (gh.token, gh.read_only_token) if t]
            if auth not in [f"{kind} {t}" for t in tokens for kind in ("Bearer", "token")]:
                return self._error(401, "Bad credentials")
            if gh.read_only_token and auth.endswith(f" {gh.read_only_token}") \
                    and method != "GET":
                return self._error(403, "Resource not accessible by integration")
            if not self.headers.get("User-Agent"):
                return self._error(403, "Request forbidden by administrative rules. "
                                        "Please make sure your request has a User-Agent header")
            if self.headers.get("Accept") != "application/vnd.github+json":
                return self._error(415, "Unsupported 'Accept' header")
            if self.headers.get("X-GitHub-Api-Version") != "2022-11-28":
                return self._error(400, "Invalid API version")
            if not url.path.startswith(gh.prefix + "/"):
                return self._error(404, "Not Found")
            parts = url.path[len(gh.prefix):].strip("/").split("/")
            if method in ("POST", "PATCH"):
                if not self.headers.get("Content-Type", "").startswith("application/json"):
                    return self._error(415, "Content-Type must be application/json")
                if not isinstance(body, dict) or set(body) != {"body"} \
                        or not isinstance(body["body"], str):
                    return self._error(422, "Invalid request. Only body is allowed.")
                if len(body["body"]) > MAX_BODY:
                    return self._error(422, "Validation Failed", errors=[{
                        "resource": "IssueComment", "code": "custom", "field": "body",
                        "message": "body is too long (maximum is 65536 characters)"}])
            return self._route(method, parts, url, body)

        def _route(self, method, parts, url, body):
            # /repos/{o}/{r}/issues/{n}/comments | /repositories/{id}/issues/{n}/comments
            # /repos/{o}/{r}/issues/comments/{id}
            repo_id = None
            owner = name = None
            if parts[:1] == ["repos"] and len(parts) >= 3:
                owner, name = parts[1], parts[2]
                repo_id = gh.repos.get((owner, name))
                rest = parts[3:]
            elif parts[:1] == ["repositories"] and len(parts) >= 2 and method == "GET":
                repo_id = int(parts[1]) if parts[1].isdigit() else None
                owner, name = next((k for k, v in gh.repos.items() if v == repo_id),
                                   (None, None))
                rest = parts[2:]
            else:
                return self._error(404, "Not Found")
            if repo_id is None or owner is None:
                return self._error(404, "Not Found")

            if len(rest) == 3 and rest[0] == "issues" and rest[2] == "comments" \
                    and rest[1].isdigit():
                number = int(rest[1])
                thread = gh.issues.get((repo_id, number))
                if thread is None:
                    return self._error(404, "Not Found")
                if method == "GET":
                    return self._list(thread, repo_id, number, url)
                if method == "POST":
                    c = gh._new_comment(owner, name, number, body["body"])
                    thread.append(c)
                    return self._send(201, c)
            if len(rest) == 3 and rest[:2] == ["issues", "comments"] and rest[2].isdigit() \
                    and method == "PATCH":
                cid = int(rest[2])
                for (rid, _), thread in gh.issues.items():
                    for c in thread:
                        if rid == repo_id and c["id"] == cid:
                            c["body"] = body["body"]
                            return self._send(200, c)
                return self._error(404, "Not Found")
            return self._error(404, "Not Found")

        def _list(self, thread, repo_id, number, url):
            q = parse_qs(url.query)
            try:
                per_page = int(q.get("per_page", ["30"])[0])
                page = int(q.get("page", ["1"])[0])
            except ValueError:
                return self._error(400, "Invalid pagination")
            per_page = max(1, min(per_page, 100))  # GitHub clamps to 100
            start = (page - 1) * per_page
            items = thread[start : start + per_page]
            last = max(1, -(-len(thread) // per_page))
            base = f"http://127.0.0.1:{gh.port}{gh.prefix}/repositories/{repo_id}" \
                   f"/issues/{number}/comments?per_page={per_page}"
            links = []
            if page < last:
                links.append(f'<{base}&page={page + 1}>; rel="next"')
                links.append(f'<{base}&page={last}>; rel="last"')
            if page > 1:
                links.append(f'<{base}&page=1>; rel="first"')
                links.append(f'<{base}&page={page - 1}>; rel="prev"')
            return self._send(200, items, {"Link": ", ".join(links)} if links else None)

        def do_GET(self):
            self._handle("GET")

        def do_POST(self):
            self._handle("POST")

        def do_PATCH(self):
            self._handle("PATCH")

    return Handler


class serve:
    """Context manager: run `gh` on a free 127.0.0.1 port in a thread."""

    def __init__(self, gh: FakeGitHub) -> None:
        self.gh = gh

    def __enter__(self) -> FakeGitHub:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.gh))
        self.gh.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self.gh

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
