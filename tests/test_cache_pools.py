"""The pools a container's own settings give (advisor.read.apps.poolcache) are kept in
the parse cache by the container's content: a warm run reads the same pools without
reading the settings again, a changed value is read anew, and a check answers the same
warm, cold and without a cache."""

from __future__ import annotations

from msgspec.structs import replace

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.model import Container, EnvVar, Source
from advisor.read.apps import poolcache
from advisor.read.cache import FileCache
from advisor.report.json import render
from advisor.rules import load_rules

REGISTRY = load_rules()
AT = Source(path="k8s/api.yaml", line=12)


def _container(size: str) -> Container:
    return Container(name="api", image="example/api:1", source=AT, env=(
        EnvVar(name="SPRING_DATASOURCE_URL", value="jdbc:postgresql://db:5432/app", source=AT),
        EnvVar(name="SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE", value=size,
               source=replace(AT, line=14))))


def _counting(monkeypatch) -> list[Container]:
    calls: list[Container] = []
    real = poolcache.pools_for_container

    def counting(container, app=None, **kw):
        calls.append(container)
        return real(container, app, **kw)

    monkeypatch.setattr(poolcache, "pools_for_container", counting)
    return calls


def test_a_known_container_is_not_read_again(tmp_path, monkeypatch):
    calls = _counting(monkeypatch)
    cache = FileCache(tmp_path / "c", "key")
    first = poolcache.container_pools(_container("7"), cache, node_cpus=None)
    assert [p.size.value for p in first.pools] == [7] and first.pools[0].size.source.line == 14
    again = poolcache.container_pools(_container("7"), cache, node_cpus=None)
    assert again == first and len(calls) == 1
    changed = poolcache.container_pools(_container("9"), cache, node_cpus=None)
    assert [p.size.value for p in changed.pools] == [9] and len(calls) == 2
    moved = replace(_container("7"), env=tuple(
        replace(e, source=replace(e.source, line=e.source.line + 1))
        for e in _container("7").env))
    assert poolcache.container_pools(moved, cache, node_cpus=None).pools[0].size.source.line \
        == 15 and len(calls) == 3  # the line a value is written on is part of the key
    poolcache.container_pools(_container("7"), cache, node_cpus=8)
    assert len(calls) == 4  # and the node's CPUs


def test_without_a_cache_each_call_reads(monkeypatch):
    calls = _counting(monkeypatch)
    for cache in (None, FileCache.disabled()):
        poolcache.container_pools(_container("7"), cache)
        poolcache.container_pools(_container("7"), cache)
    assert len(calls) == 4


def test_a_value_that_does_not_decode_back_is_not_kept(tmp_path, monkeypatch):
    cache = FileCache(tmp_path / "c", "key")
    found = poolcache.container_pools(_container("7"), cache)
    odd = replace(found, notices=[*found.notices, ("not", "a", "str")])  # decodes as list
    cache.put_keyed(poolcache.KIND, b"k", odd, type(found))
    assert cache.get_keyed(poolcache.KIND, b"k", type(found)) is None
    cache.put_keyed(poolcache.KIND, b"k", found, type(found))
    assert cache.get_keyed(poolcache.KIND, b"k", type(found)) == found


def test_a_check_answers_the_same_warm_and_edited(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "k8s").mkdir(parents=True)
    (repo / ".git").mkdir()
    manifest = repo / "k8s" / "app.yaml"
    manifest.write_text(MANIFEST)

    def check(cache: bool = True) -> str:
        return render(run_check([str(repo)], CheckOptions(cache=cache), REGISTRY), REGISTRY)

    calls = _counting(monkeypatch)
    cold = check()
    read_cold = len(calls)
    assert read_cold >= 2 and check() == cold == check(cache=False)
    assert len(calls) == 2 * read_cold  # warm: none read again; --no-cache: all
    manifest.write_text(MANIFEST.replace('value: "5"', 'value: "6"'))
    edited = check()
    assert edited != cold and edited == check(cache=False)


MANIFEST = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - {name: postgres, image: "postgres:15", args: ["-c", "max_connections=20"]}
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {selector: {app: db}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: api
          image: example/api:1
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/app"}
            - name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE
              value: "5"
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  template:
    spec:
      containers:
        - name: worker
          image: example/worker:1
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/app"}
"""
