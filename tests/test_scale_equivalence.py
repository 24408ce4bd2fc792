"""The faster forms of issue 19 give what the plain forms they replace give: packed
positions, sizes known from the reading, paths resolved below the root, lookups by
index."""

from __future__ import annotations

import os
import random

from advisor.link.hosts import pooler_index
from advisor.model import Location, Server, Source, Term, Topology
from advisor.read.fs import Root
from advisor.read.sources.k8s import MAX_EXPANDED_NODES, _expanded_size
from advisor.read.yamlpos import load, load_all_sized

DOC = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  labels: {app: api, tier: web}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: api
          env:
            - {name: A, value: "1"}
            - name: B
              value: two
"""


def _walk(node):
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def test_packed_positions_match_the_materialised_dict():
    for text in (DOC, "a: 1\nb: 2\na: 3\n", "\n".join(f"k{i}: {i}" for i in range(20)) + "\n"):
        packed, plain = load(text), load(text)
        for p_node, d_node in zip(_walk(packed), _walk(plain), strict=True):
            if not hasattr(d_node, "lc"):
                continue
            data = d_node.lc.data  # materialised: the reference
            assert p_node.lc._data is None  # packed until asked
            for k, pos in data.items():
                if isinstance(p_node, dict):
                    assert p_node.lc.key(k) == (pos[0], pos[1])
                    assert p_node.lc.value(k) == (pos[2], pos[3])
                else:
                    assert p_node.lc.item(k) == (pos[0], pos[1])
    repeated = load("a: 1\nb: 2\na: 3\n")
    assert list(repeated) == ["b", "a"]  # the last of a repeated key, at the end
    assert repeated.lc.key("a") == (2, 0)  # its position: the last written
    assert list(repeated.lc.data) == ["a", "b"]  # positions keep the first slot


def test_missing_keys_and_items_raise_as_the_dict_did():
    doc = load(DOC)
    for ask in (
        lambda: doc.lc.key("nope"),
        lambda: doc["spec"]["template"]["spec"]["containers"].lc.item(5),
    ):
        try:
            ask()
        except KeyError:
            pass
        else:
            raise AssertionError("expected KeyError")
    assert doc.lc._data is None  # a miss does not materialise the positions


def test_sizes_known_from_reading_equal_the_alias_bomb_walk():
    texts = [
        DOC,
        "[" * 201 + "]" * 201,
        "[" * 200 + "]" * 200,
        "[" * 200 + "1" + "]" * 200,
        "{}",
        "[]",
        "1",
        "- a\n- [b, {c: d}]\n",
        "\n".join(f"k{i}: [1, 2, 3]" for i in range(60_000)),
    ]
    for text in texts:
        for doc, known in load_all_sized(text):
            assert known is not None
            nodes, deepest = known
            assert (nodes > MAX_EXPANDED_NODES or deepest > 200) == (
                _expanded_size(doc, {}) > MAX_EXPANDED_NODES
            )
            if _expanded_size(doc, {}) <= MAX_EXPANDED_NODES:
                assert nodes == _expanded_size(doc, {})
    for text in ("x: &a [1, 2]\ny: *a\n", "a: 1\na: 2\n", "b: &m {c: 1}\nd: {<<: *m}\n"):
        assert all(known is None for _doc, known in load_all_sized(text))


def test_real_is_resolve(tmp_path):
    root = tmp_path / "repo"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.yaml").write_text("x: 1\n")
    os.symlink(root / "a" / "b" / "f.yaml", root / "a" / "link.yaml")
    os.symlink(root / "a", root / "dirlink")
    given = Root.of(root)
    for p in (
        root / "a" / "b" / "f.yaml",
        root / "a" / "link.yaml",
        root / "dirlink" / "b" / "f.yaml",
        root / "a" / ".." / "a" / "b" / "f.yaml",
        root / "missing" / "x.yaml",
        root,
        tmp_path / "elsewhere",
    ):
        assert given.real(p) == p.resolve(), p
    # A root given through a symlink is not its own real path: resolve() decides
    os.symlink(root, tmp_path / "alias")
    aliased = Root(tmp_path / "alias")
    p = tmp_path / "alias" / "a" / "b" / "f.yaml"
    assert aliased.real(p) == p.resolve()


def _server(i: str) -> Server:
    return Server(
        id=i,
        name=i,
        kind="workload",
        instances=Term(label="n", value=1, source=Source(default="test")),
        version=Term(label="v", value=15, source=Source(default="test")),
        location=Location(path="x"),
    )


def test_topology_lookups_follow_changes():
    topo = Topology(servers=[_server("a"), _server("b"), _server("a")])
    assert topo.server("a") is topo.servers[0]  # the first, as the scan gave
    assert topo.server("c") is None
    topo.servers.append(_server("c"))
    assert topo.server("c") is topo.servers[3]
    for s in topo.servers:  # renamed in place, as an overlay label does
        s.id = f"prod|{s.id}"
    assert topo.server("prod|b") is topo.servers[1]
    topo.servers = [_server("z")]
    assert topo.server("prod|b") is None and topo.server("z") is topo.servers[0]


def test_pooler_index_is_the_first_pooler_of_each_workload():
    from types import SimpleNamespace

    rng = random.Random(19)
    words = [
        "Deployment/ns/pgbouncer",
        "Deployment/ns/pgbouncer-2",
        "Deployment/ns/api",
        "Deployment/ns/api#pgbouncer",
        "StatefulSet/x/pg",
        "Deployment/ns/api-pgbouncer",
    ]
    for _ in range(200):
        ids = [rng.choice(words) for _ in range(rng.randint(0, 8))]
        index = pooler_index([SimpleNamespace(id=x) for x in ids])
        for wid in {*(w for w in words if "#" not in w), "Deployment/ns/", "Nope"}:
            expected = next((i for i, x in enumerate(ids)
                             if x == wid or x.startswith(wid + "#")), None)
            assert index.get(wid) == expected


def test_sql_candidates_are_every_file_resolved_first(tmp_path):
    """engine.repository.sql_candidates resolves only names that may be SQL sources (or
    symlinks): the same list as resolving every file and asking of its real path."""
    from advisor.engine.repository import sql_candidates
    from advisor.read.sql.extract import is_sql_candidate, is_test_path

    root = tmp_path / "repo"
    for rel in ("db/queries.sql", "app/models.py", "k8s/api.yaml", "config/database.yml",
                "tests/test_api.py", "node_modules/x/q.sql", "app/README.md",
                "src/main/resources/application.yml"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("select 1;\n")
    (root / "notes.txt").symlink_to(root / "db" / "queries.sql")  # a name that is not one
    (root / "linked.sql").symlink_to(root / "app" / "README.md")  # a name that is, target not
    (root / "db2").symlink_to(root / "db", target_is_directory=True)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    files.append(root / "db2" / "queries.sql")  # through a symlinked folder
    shown = Root.of(root)
    for test_code in (False, True):
        plain = [rel for rel in map(shown.rel, files) if is_sql_candidate(rel)
                 and (test_code or not is_test_path(rel))]
        assert sql_candidates(files, shown, test_code) == plain
        assert "db/queries.sql" in plain and plain.count("db/queries.sql") == 3
    # the walk's own list, with the symlinks it saw in the folder listings (no lstat each)
    from advisor.read.discover import discover_paths

    found = discover_paths(root, [root])
    assert found.linked == {str(root / "notes.txt"), str(root / "linked.sql")}
    for test_code in (False, True):
        walked = sql_candidates(found.other_files, shown, test_code)
        assert sql_candidates(found.other_files, shown, test_code, found.linked) == walked
        assert "db/queries.sql" in walked  # notes.txt, a symlink to it, is read as it


def test_mappings_share_their_key_tuples_only_when_equal_as_written():
    """yamlpos keeps one tuple per run of string keys (the same keys in two manifests
    share it); keys that are not all strings are never shared: (1,) equals (True,)."""
    first, second = load(DOC), load(DOC.replace("api", "web"))
    assert first["metadata"].lc._keys is second["metadata"].lc._keys
    assert first["metadata"].lc._keys == ("name", "labels")
    ones = load("1: a\n")
    trues = load("true: b\n")
    assert ones.lc._keys == (1,) and type(ones.lc._keys[0]) is int
    assert trues.lc._keys == (True,) and type(trues.lc._keys[0]) is bool
    assert list(trues.lc.data) == [True] and trues.lc.key(True) == (0, 0)
