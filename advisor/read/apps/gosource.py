"""Go sources, read with a scanner for the few forms pool settings take (no Go parser):
calls with literal or named-constant arguments, `X.Field = value` assignments, and
string constants. Comments and strings are respected by the JS tokenizer, which Go's
lexical grammar matches closely enough for this (backquoted raw strings included)."""

from __future__ import annotations

import re

from msgspec import Struct

from advisor.read.apps.appcache import GO_KEYS, file_keys, run_cache
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsparse import Tok, tokenize
from advisor.read.apps.source import AppFile, auxiliary_script


class GoFile:
    """A Go file as the readers read it, tokenized when a reader first asks."""

    def __init__(self, file: AppFile) -> None:
        self.file = file
        self._toks: list[Tok] | None = None
        self._consts: dict[str, str] | None = None
        self._bodies: list[GoBody] | None = None
        self._decls: frozenset[int] | None = None
        self._uses: dict[str, list[int]] = {}

    @property
    def toks(self) -> list[Tok]:
        if self._toks is None:
            self._toks = tokenize(self.file.text)
        return self._toks

    @property
    def bodies(self) -> list[GoBody]:
        """The file's named functions with their bodies (func_bodies)."""
        if self._bodies is None:
            self._bodies = func_bodies(self.toks)
        return self._bodies

    @property
    def decls(self) -> frozenset[int]:
        """The token positions of the file's func and method names where they are declared
        (func_bodies, and `func Name(` with no body): every other occurrence is a use. Not
        "any name after a `)`": the tokens keep no line breaks, so `flag.Parse()` then
        `run()` reads `) run (` (review1 F1)."""
        if self._decls is None:
            toks = self.toks
            self._decls = frozenset({b.func.at for b in self.bodies}
                                    | {m for m in range(1, len(toks))
                                       if toks[m - 1].text == "func" and toks[m].kind == "id"})
        return self._decls

    def uses(self, name: str) -> list[int]:
        """The positions where the identifier `name` is used, not declared."""
        if name not in self._uses:
            self._uses[name] = [m for m, t in enumerate(self.toks)
                                if t.text == name and m not in self.decls
                                ] if name in self.file.text else []
        return self._uses[name]

    @property
    def consts(self) -> dict[str, str]:
        """name -> literal text (numbers and strings)."""
        if self._consts is None:
            toks = self.toks
            consts: dict[str, str] = {}
            for i in range(len(toks) - 2):
                if toks[i].kind == "id" and toks[i + 1].text in ("=", ":") \
                        and toks[i + 2].kind in ("num", "str", "tpl"):
                    consts[toks[i].text] = toks[i + 2].text
                if toks[i].kind == "id" and toks[i + 1].text == ":" and i + 3 < len(toks) \
                        and toks[i + 2].text == "=" and toks[i + 3].kind in ("num", "str"):
                    consts[toks[i].text] = toks[i + 3].text
            self._consts = consts
        return self._consts


class GoTree:
    """The Go files of one application source as every container that reads it shares
    them: each tokenized once, and what is worked out from the files alone (which
    functions only tests reach) once, not per container: a monorepo's N workloads built
    from one module read its _test.go files once (review1 F8: 4 s per container)."""

    def __init__(self) -> None:
        self.files: dict[str, GoFile] = {}
        self.memo: dict[tuple[str, ...], object] = {}

    def file(self, f: AppFile) -> GoFile:
        g = self.files.get(f.path)
        if g is None:
            g = self.files[f.path] = GoFile(f)
        return g


def go_tree(ctx: StackContext) -> GoTree:
    """The GoTree of ctx's application source, kept on its root by the source's folder and
    its Go files' paths and texts (a container's extra mounted files make another)."""
    tree = ctx.cache.get("go-tree")
    if isinstance(tree, GoTree):
        return tree
    app = ctx.app
    if app is None:
        tree = GoTree()
    else:
        memo = app.root.__dict__.setdefault("go_trees", {})
        key = (app.directory, tuple((f.path, f.text) for f in app.files if f.kind == "go"))
        tree = memo.get(key)
        if tree is None:
            tree = memo[key] = GoTree()
    ctx.cache["go-tree"] = tree
    return tree


def go_files(ctx: StackContext, needle: str, keys: frozenset[str] | None = None
             ) -> list[GoFile]:
    """The app's Go files (tests and auxiliary scripts left out) whose text holds `needle`
    and (`keys`, a subset of appcache.GO_KEYS) one of `keys` as an identifier (known from
    the cache for an unchanged file)."""
    cache = go_tree(ctx).files
    held = ctx.cache.setdefault("go-keys", {})
    assert isinstance(held, dict)
    run = run_cache(ctx) if keys is not None else None
    out = []
    for f in ctx.files("go"):
        if needle not in f.text or f.name.endswith("_test.go") or auxiliary_script(f.rel):
            continue
        g = cache.get(f.path)
        if g is None:
            g = cache[f.path] = GoFile(f)
        if keys is not None:
            if f.path not in held:
                held[f.path] = file_keys(f, run, "app-go", GO_KEYS, lambda g=g: g.toks)
            if held[f.path].isdisjoint(keys):
                continue
        out.append(g)
    return out


def literal(g: GoFile, tok: Tok) -> str | None:
    """A token's literal value: numbers, strings, raw strings, or a constant's."""
    text = g.consts.get(tok.text, tok.text) if tok.kind == "id" else tok.text
    if re.fullmatch(r"-?\d+", text):
        return text
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"`":
        return text[1:-1]
    return None


def call_args(toks: list[Tok], paren: int) -> list[list[Tok]]:
    """The arguments of the call whose `(` is toks[paren]: each a run of tokens between
    top-level commas."""
    args: list[list[Tok]] = [[]]
    depth = 0
    for tok in toks[paren:]:
        if tok.text in ("(", "[", "{"):
            depth += 1
            if depth == 1:
                continue
        elif tok.text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                break
        elif tok.text == "," and depth == 1:
            args.append([])
            continue
        args[-1].append(tok)
    return [a for a in args if a] if any(args) else []


def _close(toks: list[Tok], at: int) -> int:
    """The index of the bracket closing the one at toks[at] (len(toks) when unclosed)."""
    depth = 0
    for j in range(at, len(toks)):
        if toks[j].text in ("(", "[", "{"):
            depth += 1
        elif toks[j].text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    return len(toks)


class GoFunc(Struct, frozen=True):
    """A named function or method: its name and its parameters' names, in order."""

    name: str
    at: int  # index of the name token
    params: tuple[str, ...]
    method: bool = False


def enclosing_func(toks: list[Tok], at: int) -> GoFunc | None:
    """The named function (or method) whose body holds toks[at]; a function literal
    inside it is looked through (its parameters are not the ones a caller passes)."""
    found: GoFunc | None = None
    for k in range(min(at, len(toks))):
        if toks[k].text != "func" or k + 2 >= len(toks):
            continue
        j = k + 1
        method = toks[j].text == "("  # a receiver
        if method:
            j = _close(toks, j) + 1
        if j + 1 >= len(toks) or toks[j].kind != "id" or toks[j + 1].text not in ("(", "["):
            continue
        name_at = j
        j += 1
        if toks[j].text == "[":  # type parameters
            j = _close(toks, j) + 1
        if j >= len(toks) or toks[j].text != "(":
            continue
        params = call_args(toks, j)
        j = _close(toks, j) + 1
        while j < len(toks) and toks[j].text != "{":  # results: types, no braces read
            j += 1
        if j < at < _close(toks, j):
            named = any(len(p) > 1 for p in params)
            found = GoFunc(name=toks[name_at].text, at=name_at, method=method,
                           params=tuple(p[0].text if named else "" for p in params))
    return found


class GoBody(Struct, frozen=True):
    """A named function's body: toks[start] is its `{`, toks[end] its `}`."""

    func: GoFunc
    start: int
    end: int
    testing_param: bool  # takes a *testing.T, testing.TB, ... (only a test can pass one)


def func_bodies(toks: list[Tok]) -> list[GoBody]:
    """The named functions and methods of a file, in order, with their bodies."""
    out: list[GoBody] = []
    k = 0
    while k < len(toks) - 2:
        if toks[k].text != "func":
            k += 1
            continue
        j = k + 1
        method = toks[j].text == "("
        if method:
            j = _close(toks, j) + 1
        if j + 1 >= len(toks) or toks[j].kind != "id" or toks[j + 1].text not in ("(", "["):
            k += 1  # a function literal or type: its body stays inside the enclosing one
            continue
        name_at = j
        j += 1
        if toks[j].text == "[":
            j = _close(toks, j) + 1
        if j >= len(toks) or toks[j].text != "(":
            k += 1
            continue
        params = call_args(toks, j)
        sig = j
        j = _close(toks, j) + 1
        while j < len(toks) and toks[j].text != "{":
            j += 1
        end = _close(toks, j)
        named = any(len(p) > 1 for p in params)
        testing = any(toks[m].text == "testing" and toks[m + 1].text == "."
                      and toks[m + 2].text in ("T", "TB", "B", "F", "M")
                      for m in range(sig, min(j, len(toks) - 2)))
        out.append(GoBody(func=GoFunc(name=toks[name_at].text, at=name_at, method=method,
                                      params=tuple(p[0].text if named else ""
                                                   for p in params)),
                          start=j, end=end, testing_param=testing))
        k = end + 1
    return out


def body_at(bodies: list[GoBody], at: int) -> GoBody | None:
    """The named function whose body holds toks[at]."""
    return next((b for b in bodies if b.start < at < b.end), None)
