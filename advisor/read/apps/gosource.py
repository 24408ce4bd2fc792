"""Go sources, read with a scanner for the few forms pool settings take (no Go parser):
calls with literal or named-constant arguments, `X.Field = value` assignments, and
string constants. Comments and strings are respected by the JS tokenizer, which Go's
lexical grammar matches closely enough for this (backquoted raw strings included)."""

from __future__ import annotations

import re

from msgspec import Struct

from advisor.read.apps.base import StackContext
from advisor.read.apps.jsparse import Tok, tokenize
from advisor.read.apps.source import AppFile, auxiliary_script


class GoFile(Struct):
    file: AppFile
    toks: list[Tok]
    consts: dict[str, str]  # name -> literal text (numbers and strings)


def go_files(ctx: StackContext, needle: str) -> list[GoFile]:
    cache = ctx.cache.setdefault("go", {})
    assert isinstance(cache, dict)
    out = []
    for f in ctx.files("go"):
        if needle not in f.text or f.name.endswith("_test.go") or auxiliary_script(f.rel):
            continue
        if f.path not in cache:
            toks = tokenize(f.text)
            consts: dict[str, str] = {}
            for i in range(len(toks) - 2):
                if toks[i].kind == "id" and toks[i + 1].text in ("=", ":") \
                        and toks[i + 2].kind in ("num", "str", "tpl"):
                    consts[toks[i].text] = toks[i + 2].text
                if toks[i].kind == "id" and toks[i + 1].text == ":" and i + 3 < len(toks) \
                        and toks[i + 2].text == "=" and toks[i + 3].kind in ("num", "str"):
                    consts[toks[i].text] = toks[i + 3].text
            cache[f.path] = GoFile(file=f, toks=toks, consts=consts)
        out.append(cache[f.path])
    return out


def literal(g: GoFile, tok: Tok) -> str | None:
    """A token's literal value: numbers, strings, raw strings, or a constant's."""
    text = g.consts.get(tok.text, tok.text) if tok.kind == "id" else tok.text
    if re.fullmatch(r"-?\d+", text):
        return text
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"`":
        return text[1:-1]
    return None
