"""Go sources, read with a scanner for the few forms pool settings take (no Go parser):
calls with literal or named-constant arguments, `X.Field = value` assignments, and
string constants. Comments and strings are respected by the JS tokenizer, which Go's
lexical grammar matches closely enough for this (backquoted raw strings included)."""

from __future__ import annotations

import re

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

    @property
    def toks(self) -> list[Tok]:
        if self._toks is None:
            self._toks = tokenize(self.file.text)
        return self._toks

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


def go_files(ctx: StackContext, needle: str, keys: frozenset[str] | None = None
             ) -> list[GoFile]:
    """The app's Go files (tests and auxiliary scripts left out) whose text holds `needle`
    and (`keys`, a subset of appcache.GO_KEYS) one of `keys` as an identifier (known from
    the cache for an unchanged file)."""
    cache = ctx.cache.setdefault("go", {})
    assert isinstance(cache, dict)
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
