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
# ... of a Jinja or ERB file: `${NAME}` (envsubst's form, run after Jinja) is one, a bare
# `$name` is not: Jinja and ERB leave it as written, and in a value it is a literal `$`
# (a password `p@ss$word`, a shell's `$PORT` in `sh -c`), which made the file a floor
_EXPRESSIONS_NO_BARE_DOLLAR = lazy(r"\{\{[^{}\n]*\}\}|<%=[^%\n]*%>"
                                   r"|\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_NO_BARE_DOLLAR_SUFFIXES = (".j2", ".jinja", ".jinja2", ".erb")
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
    expressions = _EXPRESSIONS_NO_BARE_DOLLAR if shown.lower().endswith(
        _NO_BARE_DOLLAR_SUFFIXES) else _EXPRESSIONS
    plain = expressions.sub(token, text)
    if _OPEN.search(plain):
        return None
    objects, problems = k8s_objects(plain, shown)
    if any(p.fatal for p in problems) or not objects:
        return None
    lines = plain.splitlines()
    # where each expression stands (line, column): found once, a line of thousands of
    # expressions is not searched again for each (audit 44: 100k on one line hung)
    at = {int(m.group(1)): (n + 1, m.start())
          for n, ln in enumerate(lines) for m in _TOKENS.finditer(ln)}
    places: dict[int, str] = {}
    for obj in objects:
        for path, value in _strings(obj.body, ()):
            tokens = [int(n) for n in _TOKENS.findall(value)]
            # the leftmost decides: the ones right of it in an image's tag are in it too
            place = _harmless(path, value, _TOKEN.format(tokens[0])) if tokens else ""
            if place is None:
                return None
            for n in tokens:
                places[n] = f"{place} (line {at[n][0] if n in at else '?'})"
    for n in range(len(found)):
        if n in places:
            continue
        # an expression in a YAML comment renders into the comment; anywhere else
        # (a key, a document of its own) it is not a value read here
        line, column = at.get(n, (0, 0))
        comment = lines[line - 1].find("#") if line else -1
        if not 0 <= comment < column:
            return None
    for obj in objects:
        _restore(obj.body, found)
    # one place once: a tag of several expressions is one "image tag (line 16)"
    return objects, list(dict.fromkeys(places[n] for n in sorted(places)))


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
        # the tag or digest: another build of the same program (its repository names it);
        # else the program itself is filled in: read only as a plain manifest's twin
        # (image_from_expression, repository._templates_read)
        return "image tag" if 0 <= at < name.find(token) else "image"
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
    where expressions may stand (an image's tag or digest, annotations, an image the
    template fills in whole: `image: {{ image }}` renders the plain manifest's)."""
    return _same(_view(template), _view(plain))


def _same(template: Any, plain: Any) -> bool:
    if isinstance(template, dict) and isinstance(plain, dict):
        return template.keys() == plain.keys() and all(
            _same(v, plain[k]) for k, v in template.items())
    if isinstance(template, list) and isinstance(plain, list):
        return len(template) == len(plain) and all(map(_same, template, plain))
    return template is _ANY_IMAGE or template == plain


_ANY_IMAGE = object()  # an image whose repository is an expression: any image renders


def image_from_expression(body: Any) -> bool:
    """Pure: whether a container's image names its program by an expression
    (`{{ image }}`, `{{ registry }}/web:1`): which program runs is known only from a plain
    manifest of the same object, so the template is read only beside one."""
    return any(key == "image" and isinstance(value, str) and _EXPRESSIONS.search(
        _repository(value)) for key, value in _pairs(body))


def _pairs(node: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _pairs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _pairs(value)


def _repository(image: str) -> str:
    name = image.rsplit("/", 1)
    cut = min((i for i in (name[-1].find(":"), name[-1].find("@")) if i >= 0),
              default=len(name[-1]))
    return "/".join([*name[:-1], name[-1][:cut]])


def _view(node: Any, key: Any = None) -> Any:
    if isinstance(node, dict):
        return {k: _view(v, k) for k, v in node.items() if k != "annotations"}
    if isinstance(node, list):
        return [_view(v) for v in node]
    if key == "image" and isinstance(node, str):
        repository = _repository(node)
        return _ANY_IMAGE if _EXPRESSIONS.search(repository) else repository
    return node
