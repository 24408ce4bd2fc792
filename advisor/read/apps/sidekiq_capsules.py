"""Sidekiq 7+ capsules: job threads a Sidekiq process runs besides its default capsule.

Read at sidekiq v8.1.0 (bb172d9b) and the same at v7.0.0 (148b2603) and v7.3.9:
- lib/sidekiq/launcher.rb:28-29 makes one Manager per capsule (`config.capsules.values.map
  { |cap| Sidekiq::Manager.new(cap) }`) and lib/sidekiq/manager.rb:28,34 starts
  `capsule.concurrency` Processor threads in each; config.rb:95-96 `total_concurrency` is
  their sum. docs/7.0-Upgrade.md:42: a default capsule of 5 and a capsule of 1 "will
  have 6 threads executing jobs".
- A capsule is declared in an initializer (`Sidekiq.configure_server do |config|
  config.capsule("name") do |cap| cap.concurrency = 2 end end`) or in sidekiq.yml
  (`:capsules: name: {:concurrency: 2}`, cli.rb:302-307). A capsule whose concurrency
  is not set takes `config[:concurrency]` (capsule.rb:37): the command line's, the yml's
  or RAILS_MAX_THREADS (cli.rb:292), else 5 (config.rb:15); not `config.concurrency =`,
  which edits the default capsule only (config.rb:87-89).
- The initializer runs after the command line and sidekiq.yml are read (cli.rb
  setup_options, then boot_application), so its `config.concurrency = N` (or
  `config.default_capsule { |cap| cap.concurrency = N }`) wins over them.
- Sidekiq sizes no Active Record pool since 7.0: each job thread checks out one
  connection of the database.yml pool, so the threads count, capped by the pool.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from advisor.model import EnvVar, Source
from advisor.read.apps.pyeval import Val
from advisor.read.apps.rubyeval import RubyScope, ruby_eval
from advisor.read.apps.source import AppFile

_SERVER_BLOCK = re.compile(r"Sidekiq\.configure_server\s*(?:do|\{)\s*\|\s*(\w+)\s*\|")
_CAPSULE = re.compile(r"(\w+)\.(?:capsule\(\s*[\"':]?([\w-]+)[\"']?\s*\)|(default_capsule))"
                      r"\s*(?:do|\{)\s*\|\s*(\w+)\s*\|(.*)")


class Capsule(NamedTuple):
    """One capsule: its concurrency read (None: the block sets none, so it takes the
    process's concurrency), or `unread`, the expression not evaluated."""

    name: str
    source: Source  # where it is declared
    concurrency: Val | None = None
    unread: str | None = None


class Declared(NamedTuple):
    """What the configuration says besides the command line: the default capsule's
    concurrency set by the initializer, and the other capsules."""

    default: Capsule | None
    capsules: list[Capsule]


def _code(line: str) -> str:
    """The line without a trailing comment (a `#` not in a string interpolation)."""
    return re.sub(r"(^|\s)#(?!\{).*$", "", line).rstrip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _block_end(lines: list[str], start: int) -> int:
    """Index of the `end` / `}` closing the block opened on lines[start], by indentation
    (Ruby as written: the closing word at the opener's indent), else the file's end."""
    own = _indent(lines[start])
    for i in range(start + 1, len(lines)):
        code = _code(lines[i])
        if code.strip() and _indent(code) <= own:
            return i if code.strip().startswith(("end", "}")) else i - 1
    return len(lines) - 1


def _set_concurrency(var: str, code: str, path: str, n: int, env: dict[str, EnvVar],
                     cpus: int) -> tuple[Val | None, str] | None:
    """`var.concurrency = expr` on this line: (value or None, expr); None: not such a line."""
    m = re.search(rf"\b{re.escape(var)}\.concurrency\s*=\s*(.+?)\s*(?:;|\}}|$)", code)
    if m is None:
        return None
    v = ruby_eval(m.group(1), RubyScope(path, n, env, cpus))
    return (v if v is not None and str(v.value).strip().isdigit() else None), m.group(1)


def initializer_capsules(files: list[AppFile], env: dict[str, EnvVar], cpus: int
                         ) -> Declared:
    """The capsules of every `Sidekiq.configure_server` block of `files` (Ruby files
    loaded at boot), in file order; a later `config.concurrency =` wins."""
    default: Capsule | None = None
    capsules: dict[str, Capsule] = {}
    for f in files:
        lines = f.text.splitlines()
        i = 0
        while i < len(lines):
            server = _SERVER_BLOCK.search(_code(lines[i]))
            if server is None:
                i += 1
                continue
            end = _block_end(lines, i)
            cfg = server.group(1)
            j = i + 1
            while j <= end:
                code = _code(lines[j])
                cap = _CAPSULE.search(code)
                if cap is not None and cap.group(1) == cfg:
                    name = "default" if cap.group(3) else cap.group(2)
                    var, rest = cap.group(4), cap.group(5)
                    stop = j if rest.strip().endswith("}") else _block_end(lines, j)
                    found = Capsule(name, f.cite(j + 1, key=f"capsule {name}"))
                    for k in range(j, stop + 1):
                        text = rest if k == j else _code(lines[k])
                        got = _set_concurrency(var, text, f.path, k + 1, env, cpus)
                        if got is not None:
                            found = found._replace(concurrency=got[0], unread=None if got[0]
                                                   else got[1])
                    if name == "default":
                        set_here = found.concurrency is not None or found.unread is not None
                        default = found if set_here else default
                    else:
                        capsules[name] = found
                    j = stop + 1
                    continue
                got = _set_concurrency(cfg, code, f.path, j + 1, env, cpus)
                if got is not None:
                    default = Capsule("default", f.cite(j + 1, key="concurrency"), got[0],
                                      None if got[0] else got[1])
                j += 1
            i = end + 1
    return Declared(default, list(capsules.values()))


def yml_capsules(f: AppFile, env: dict[str, EnvVar], cpus: int
                 ) -> tuple[list[Capsule], set[int]]:
    """sidekiq.yml's `:capsules:` mapping (name -> {:concurrency:, :queues:}), and the
    lines inside it (their `:concurrency:` is a capsule's, not the default one's). A
    capsule there with no concurrency is unread: cli.rb:305 sets it to nil."""
    out: dict[str, Capsule] = {}
    inside: set[int] = set()
    under: int | None = None  # the indent of the `capsules:` key being read
    cap: Capsule | None = None
    for n, raw in enumerate(f.text.splitlines(), 1):
        code = _code(raw)
        if not code.strip():
            continue
        key = re.match(r"\s*:?([\w-]+):\s*(.*)$", code)
        if under is not None and _indent(code) <= under:
            under, cap = None, None
        if under is None:
            if key is not None and key.group(1) == "capsules" and not key.group(2):
                under = _indent(code)
            continue
        inside.add(n)
        if key is None or key.group(1) == "queues":
            continue
        if key.group(1) != "concurrency" or cap is None:
            if not key.group(2):
                cap = Capsule(key.group(1), f.cite(n, key=f"capsules.{key.group(1)}"),
                              unread=":concurrency: not set")
                out[cap.name] = cap
            continue
        text = key.group(2).strip()
        erb = re.fullmatch(r"<%=\s*(.+?)\s*%>", text)
        v = ruby_eval(erb.group(1) if erb else text, RubyScope(f.path, n, env, cpus))
        ok = v is not None and str(v.value).strip().isdigit()
        cap = cap._replace(concurrency=v if ok else None, unread=None if ok else text)
        out[cap.name] = cap
    return list(out.values()), inside


def boot_files(files: list[AppFile], rails_env: str) -> list[AppFile]:
    """The Ruby files Rails loads at boot that may configure Sidekiq: config/*.rb,
    config/initializers/**, and config/environments/<RAILS_ENV>.rb only."""
    out = []
    for f in files:
        if not f.rel.startswith("config/") or f.kind != "ruby":
            continue
        if f.rel.startswith("config/environments/") and \
                f.rel != f"config/environments/{rails_env}.rb":
            continue
        out.append(f)
    return out
