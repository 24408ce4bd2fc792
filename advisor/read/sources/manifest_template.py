"""A manifest kept as a template (deploy.j2, deployment.yaml.tpl, web.yaml.erb) read as
written when rendering it cannot change what a budget reads.

Real templates of this kind mostly inject the build's image tag and nothing else (audit
38: Sp3aR007/Three-Tier-Project's deploy/tmpl/deploy.j2, cuchi/jinja2-action;
ajaxr7781/ci-cd-demo's k8s/deployment.yaml.j2, an Ansible `template:` task): the
workload, its replicas and its env are literal. Such a file is read; one whose
expressions stand anywhere else (env, replicas, names, the image's repository) or that
holds statements (`{% if %}`, `<% end %>`, `{{ range }}`) is not, and stays a floor."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from advisor.lazyregex import lazy
from advisor.read.sources.k8s import K8sObject, k8s_objects

# expressions substituted in place: Jinja's or a Go template's, ERB's, envsubst's (taken
# in every template whatever its suffix: a rendered .j2 may go through envsubst too)
_EXPRESSIONS = lazy(r"\{\{[^{}\n]*\}\}|<%=[^%\n]*%>|\$\{[A-Za-z_][A-Za-z0-9_]*\}"
                    r"|\$[A-Za-z_][A-Za-z0-9_]*")
# a statement or comment of Jinja/ERB, a Go template's action (rendering may add, drop or
# repeat lines), a whitespace-trimming marker
_STATEMENT = lazy(r"\{%|\{#|<%(?!=)|\{\{-|-\}\}|\{\{\s*(?:if|else|end|range|with|define|"
                  r"template|block|include)\b")
_OPEN = lazy(r"\{\{|<%")  # left after substitution: an expression over lines, nested
_TOKEN = "PAtpl{}x"
_TOKENS = lazy(r"PAtpl(\d+)x")
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def read_as_written(text: str, shown: str) -> tuple[list[K8sObject], list[str]] | None:
    """The objects of the template `text` (its file `shown`) and the places where its
    expressions stand ("image tag (line 19)"), when every expression stands where its
    value cannot change a budget: an image's tag or digest, an annotation. None when the
    file must be rendered to be read."""
    found: list[str] = []

    def token(m: re.Match[str]) -> str:
        found.append(m.group(0))
        return _TOKEN.format(len(found) - 1)

    if _STATEMENT.search(text):
        return None
    plain = _EXPRESSIONS.sub(token, text)
    if _OPEN.search(plain):
        return None
    objects, problems = k8s_objects(plain, shown)
    if any(p.fatal for p in problems) or not objects:
        return None
    lines = plain.splitlines()
    at = {int(m.group(1)): n + 1 for n, ln in enumerate(lines) for m in _TOKENS.finditer(ln)}
    places: dict[int, str] = {}
    for obj in objects:
        for path, value in _strings(obj.body, ()):
            for n in map(int, _TOKENS.findall(value)):
                place = _harmless(path, value, _TOKEN.format(n))
                if place is None:
                    return None
                places[n] = f"{place} (line {at.get(n, '?')})"
    for n in range(len(found)):
        if n in places:
            continue
        # an expression in a YAML comment renders into the comment; anywhere else
        # (a key, a document of its own) it is not a value read here
        line = lines[at[n] - 1] if n in at else ""
        if "#" not in line.split(_TOKEN.format(n))[0]:
            return None
    for obj in objects:
        _restore(obj.body, found)
    return objects, [places[n] for n in sorted(places)]


def _strings(node: Any, path: tuple) -> Iterator[tuple[tuple, str]]:
    """Every string of a parsed document (keys as values at their own path)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str):
                yield (*path, key, None), key
            yield from _strings(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, (*path, i))
    elif isinstance(node, str):
        yield path, node


def _harmless(path: tuple, value: str, token: str) -> str | None:
    """Where an expression at `path` stands, when its value cannot change where or how
    many connections a workload opens; None otherwise."""
    if path and path[-1] is None:
        return None  # a key
    if len(path) >= 3 and path[-1] == "image" and path[-3] in _CONTAINER_LISTS:
        name = value.rsplit("/", 1)[-1]
        at = min((i for i in (name.find(":"), name.find("@")) if i >= 0), default=-1)
        # the tag or digest: another build of the same program (its repository names it)
        return "image tag" if 0 <= at < name.find(token) else None
    if len(path) >= 3 and path[-2] == "annotations" and path[-3] == "metadata":
        return "annotation"
    return None


def _restore(node: Any, found: list[str]) -> None:
    """The expressions written back where they stood, as the file shows them."""
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for key, value in list(items):
        if isinstance(value, str) and "PAtpl" in value:
            node[key] = _TOKENS.sub(lambda m: found[int(m.group(1))], value)
        else:
            _restore(value, found)


def same_but_expressions(template: Any, plain: Any) -> bool:
    """Whether a template's object and a plain manifest's of the same name differ only
    where expressions may stand (an image's tag or digest, annotations)."""
    return _view(template) == _view(plain)


def _view(node: Any, key: Any = None) -> Any:
    if isinstance(node, dict):
        return {k: _view(v, k) for k, v in node.items() if k != "annotations"}
    if isinstance(node, list):
        return [_view(v) for v in node]
    if key == "image" and isinstance(node, str):
        name = node.rsplit("/", 1)
        cut = min((i for i in (name[-1].find(":"), name[-1].find("@")) if i >= 0),
                  default=len(name[-1]))
        return "/".join([*name[:-1], name[-1][:cut]])
    return node
