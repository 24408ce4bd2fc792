"""What the parse cache keeps of an object for its kind's reader (advisor.read.extract):
the reader given a cached object (LazyK8sObject) answers what it answers from the parsed
one, values, lines and errors alike, without decoding its tree; a lazy object equals the
parsed one and copies lazily; a cached tree that does not decode is parsed again."""

from __future__ import annotations

import copy
from pathlib import Path

import msgspec
import pytest
from msgspec.structs import replace

from advisor.engine import repository
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.link.hosts import read_services
from advisor.link.topology import _autoscaler_maxima
from advisor.model import WrongType
from advisor.read import cache as cache_mod
from advisor.read.cache import FileCache
from advisor.read.sources import k8s
from advisor.read.sources.k8s import K8sObject, LazyK8sObject, k8s_objects
from advisor.read.workloads import configmap_index
from advisor.report.json import render
from advisor.rules import load_rules

REGISTRY = load_rules()

# Every reader with an extract, on the forms it reads and those it refuses.
TEXTS = [
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n"
    "data:\n  A: '1'\n  7: x\n  B: |\n    text\n  C: null\n  D: [1, 2]\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: empty}\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: null-data}\ndata: null\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: list-data}\ndata: [a, b]\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: n}\n"
    "spec:\n  selector: {app: db, 3: true}\n  ports: [{port: 5432}]\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: ext}\n"
    "spec: {type: ExternalName, externalName: db.example.com}\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: ext-block}\n"
    "spec:\n  type: ExternalName\n  externalName: |\n    db\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: odd}\nspec: {selector: [a], type: 3}\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: bare}\n",
    "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\n"
    "spec:\n  scaleTargetRef: {kind: StatefulSet, name: db}\n  maxReplicas: 7\n",
    "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h2}\n"
    "spec:\n  scaleTargetRef: {name: api}\n  maxReplicas: 3\n",
    "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h3}\n"
    "spec:\n  scaleTargetRef: {name: api}\n  maxReplicas: -1\n",
    "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h4}\n"
    "spec:\n  scaleTargetRef: [x]\n  maxReplicas: 2\n",
    "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h5}\n"
    "spec: {}\n",
    # the addresses a Service answers at (audit 30 D2)
    "apiVersion: v1\nkind: Service\nmetadata: {name: ips}\nspec:\n  selector: {app: db}\n"
    "  clusterIP: 10.0.0.9\n  externalIPs: [203.0.113.7, 5]\n  loadBalancerIP: ''\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: headless}\n"
    "spec: {clusterIP: None, externalIPs: x}\n",
]


def _through_cache(tmp_path: Path, text: str) -> tuple[list[K8sObject], list[K8sObject]]:
    """(parsed objects, the same objects as a cache entry gives them back)."""
    cache = FileCache(tmp_path / "c", "key")
    objs, probs = k8s_objects(text, "m.yaml")
    repository._put(cache, text, "m.yaml", objs, probs, None, None)
    entry = cache.get("k8s", "m.yaml", text, cache_mod.ManifestEntry)
    assert entry is not None
    lazy, _probs, _comments = repository._from_entry(entry, "m.yaml")
    assert all(type(o) is LazyK8sObject for o in lazy)
    return objs, lazy


def _outcome(read, objs):
    try:
        return read(objs)
    except WrongType as exc:
        return ("WrongType", exc.location, str(exc))


def _sources(index):
    return {k: (v.data, {key: v.source(key) for key in v.data}) for k, v in index.items()}


def _count_decodes(monkeypatch) -> list[str]:
    """A list that grows by one for each cached tree decoded from here on."""
    decoded: list[str] = []
    real = cache_mod.decode_body

    def counting(raw):
        decoded.append("body")
        return real(raw)

    monkeypatch.setattr(cache_mod, "decode_body", counting)
    return decoded


# The readers with an extract, each as a function of the objects it is given.
READERS = (lambda o: _sources(configmap_index(o)),
           lambda o: [{**s, "obj": None, "at": s["obj"].location()} for s in read_services(o)],
           _autoscaler_maxima)


@pytest.mark.parametrize("text", TEXTS)
def test_readers_answer_the_same_from_the_cache_without_the_tree(tmp_path, text, monkeypatch):
    objs, lazy = _through_cache(tmp_path, text)
    decoded = _count_decodes(monkeypatch)
    for read in READERS:
        assert _outcome(read, lazy) == _outcome(read, objs)
    if all(o.lines is not None for o in lazy):
        assert decoded == [], "a kept extract was answered from the tree"
    assert lazy == objs and objs == lazy  # equal once decoded, both ways


def test_refused_objects_keep_no_extract(tmp_path):
    for text, name in ((TEXTS[3], "list-data"), (TEXTS[6], "ext-block"), (TEXTS[11], "h3")):
        _objs, lazy = _through_cache(tmp_path, text)
        assert [o.name for o in lazy if o.lines is None] == [name]


def test_a_lazy_object_copies_and_replaces_without_decoding(tmp_path):
    objs, lazy = _through_cache(tmp_path, TEXTS[0])
    (one,) = lazy
    moved = replace(one, namespace="other")
    copied = copy.deepcopy(one)
    assert k8s._BODY.__get__(one) is None and k8s._BODY.__get__(copied) is None
    assert moved.namespace == "other" and moved.body == objs[0].body
    assert copied == objs[0] and copied != moved


def test_a_damaged_body_is_parsed_from_the_file_again(tmp_path):
    text = TEXTS[0]
    cache = FileCache(tmp_path / "c", "key")
    objs, probs = k8s_objects(text, "m.yaml")
    repository._put(cache, text, "m.yaml", objs, probs, None, None)
    entry = cache.get("k8s", "m.yaml", text, cache_mod.ManifestEntry)
    entry.objects[0].body = msgspec.Raw(b"\xc1")  # not msgpack
    parsed: list[int] = []

    def again():
        parsed.append(1)
        return k8s_objects(text, "m.yaml")[0]

    lazy, _p, _c = repository._from_entry(entry, "m.yaml", again)
    assert lazy[0].body == objs[0].body and parsed == [1]
    lazy, _p, _c = repository._from_entry(entry, "m.yaml")  # nothing to parse it from
    with pytest.raises(ValueError):
        _ = lazy[0].body


KINDS_TREE = {
    "k8s/app.yaml": "\n---\n".join(TEXTS[0:1] + TEXTS[5:6] + TEXTS[9:11]) + "\n---\n" + """\
apiVersion: v1
kind: ConfigMap
metadata: {name: pool, namespace: n}
data:
  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "5"
---
apiVersion: v1
kind: Service
metadata: {name: s, namespace: n}
spec:
  selector: {app: db}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: api, namespace: n}
spec:
  scaleTargetRef: {kind: Deployment, name: api}
  maxReplicas: 7
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: n}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: api
          image: example/api:1
          envFrom: [{configMapRef: {name: a}}, {configMapRef: {name: pool}}]
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://s:5432/app"}
""",
    "k8s/db.yaml": """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: n}
spec:
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - {name: postgres, image: "postgres:15", args: ["-c", "max_connections=30"]}
""",
}


def _tree(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    for rel, text in KINDS_TREE.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / ".git").mkdir()
    return repo


def _check(repo: Path, cache: bool = True) -> str:
    return render(run_check([str(repo)], CheckOptions(cache=cache), REGISTRY), REGISTRY)


def test_warm_and_one_changed_runs_answer_as_without_cache(tmp_path):
    repo = _tree(tmp_path)
    cold = _check(repo)
    assert cold == _check(repo) == _check(repo, cache=False)
    assert "HPA maxReplicas" in cold and "k8s/app.yaml:" in cold
    app = repo / "k8s" / "app.yaml"
    app.write_text(app.read_text().replace("maxReplicas: 7", "maxReplicas: 9")
                   .replace("A: '1'", "A: '2'\n  E: e").replace('SIZE: "5"', 'SIZE: "6"'))
    changed = _check(repo)
    assert changed != cold and changed == _check(repo, cache=False) == _check(repo)



def _compacted(tmp_path: Path, text: str) -> tuple[list[K8sObject], list[K8sObject], list]:
    """(parsed objects, the same as a --no-cache check keeps them, the file's reads)."""
    from advisor.read.fs import Root

    path = tmp_path / "m.yaml"
    path.write_text(text)
    reads: list[Path] = []

    class Counting(Root):
        def read_text(self, name, **kw):
            reads.append(name)
            return super().read_text(name, **kw)

    objs, _probs = k8s_objects(text, "m.yaml")
    kept = repository._compacted(k8s_objects(text, "m.yaml")[0], "m.yaml",
                                 (Counting(tmp_path), path))
    return objs, kept, reads


@pytest.mark.parametrize("text", TEXTS)
def test_without_cache_readers_answer_the_same_without_the_tree(tmp_path, text):
    objs, kept, reads = _compacted(tmp_path, text)
    for read in READERS:
        assert _outcome(read, kept) == _outcome(read, objs)
    lazy = [o for o in kept if type(o) is LazyK8sObject]
    assert all(k8s._BODY.__get__(o) is None for o in lazy)  # the trees were let go
    assert reads == []  # every reader took the extract
    assert kept == objs  # the trees asked for: the file read again, once
    assert len(reads) == (1 if lazy else 0)


def test_without_cache_a_file_read_again_once_for_all_its_objects(tmp_path):
    text = "\n---\n".join(TEXTS[1:2] + TEXTS[4:6] + TEXTS[9:10])
    objs, kept, reads = _compacted(tmp_path, text)
    assert [type(o) for o in kept] == [LazyK8sObject] * 4
    assert [o.body for o in kept] == [o.body for o in objs] and len(reads) == 1
    _objs, kept, _reads = _compacted(tmp_path, text)
    (tmp_path / "m.yaml").write_text(TEXTS[1])  # changed since: its other objects are gone
    with pytest.raises(ValueError):
        _ = kept[1].body


def test_without_cache_trees_readers_take_are_kept():
    kept = [o.name for text in [*TEXTS, KINDS_TREE["k8s/db.yaml"], ONE_LINE_CONF]
            for o in k8s_objects(text, "m.yaml")[0] if repository._tree_read(o)]
    assert kept == ["a", "db", "conf"]


ONE_LINE_CONF = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\n"
                 "data: {postgresql.conf: max_connections = 30}\n")


def test_without_cache_the_check_answers_as_with_it(tmp_path, monkeypatch):
    repo = _tree(tmp_path)
    compacted: list[int] = []
    real = repository._compacted

    def counting(objs, shown, file):
        out = real(objs, shown, file)
        compacted.append(sum(type(o) is LazyK8sObject for o in out))
        return out

    monkeypatch.setattr(repository, "_compacted", counting)
    assert _check(repo, cache=False) == _check(repo)
    # ConfigMap pool, Services, HPAs, the Deployment; not the StatefulSet, nor ConfigMap
    # a (a value of two lines: a file whose lines a reader places)
    assert sum(compacted) == 7

WORKLOADS = [
    """\
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: n}
data: {POOL: "7", HOST: db}
---
apiVersion: v1
kind: Secret
metadata: {name: sec, namespace: n}
stringData: {PASSWORD: x, URL: "postgresql://u@db/app"}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: n
  annotations: {pool-advisor.io/ignore: "PA106, PA107"}
spec:
  replicas: 3
  strategy: {rollingUpdate: {maxSurge: 40%}}
  template:
    metadata: {labels: {app: api, tier: 2}}
    spec:
      volumes:
        - {name: c, configMap: {name: cfg}}
        - {name: s, secret: {secretName: sec}}
        - {name: p, projected: {sources: [{configMap: {name: cfg}}, {secret: {name: sec}}, x]}}
        - just-a-string
      initContainers:
        - {name: wait, image: busybox, command: [sh, -c, "until nc -z db 5432; do sleep 1; done"]}
        - name: proxy
          image: bitnami/pgbouncer:1.22
          restartPolicy: Always
      containers:
        - name: api
          image: example/api:1.2
          args: ["--pool", "$(POOL)"]
          envFrom:
            - {configMapRef: {name: cfg}, prefix: APP_}
            - {secretRef: {name: sec}}
            - {configMapRef: {name: missing}}
            - not-a-mapping
          env:
            - {name: POOL, value: "9"}
            - {name: URL2, value: "postgresql://$(HOST):5432/$(APP_POOL)?x=$$(Y)"}
            - {name: FROM_CM, valueFrom: {configMapKeyRef: {name: cfg, key: POOL}}}
            - {name: FROM_SECRET, valueFrom: {secretKeyRef: {name: sec, key: URL}}}
            - {name: GONE, valueFrom: {secretKeyRef: {name: sec, key: nope}}}
            - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
            - {name: 12, value: 13}
            - {value: no-name}
            - {name: POOL, value: "10"}
          volumeMounts: [{name: c, mountPath: /etc/app}, {name: p, mountPath: /p}]
          resources:
            limits: {memory: 768Mi, cpu: "1.5"}
        - name: side
          image: example/side
          resources: {requests: {cpu: 250m}}
""",
    """\
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: bg}
spec:
  replicas: 2
  strategy: {blueGreen: {previewReplicaCount: 1}}
  template:
    spec:
      containers: [{name: a, image: a}]
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: bg-full}
spec:
  strategy: {blueGreen: {activeService: x}}
  template: {spec: {containers: [{name: a, image: a}]}}
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: canary}
spec:
  strategy: {canary: {maxSurge: 3}}
  template: {spec: {containers: [{name: a, image: a}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: recreate}
spec:
  strategy: {type: Recreate}
  template: {spec: {containers: [{name: a, image: a}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: odd-surge}
spec:
  strategy: {rollingUpdate: {maxSurge: [1]}}
  template: {spec: {containers: [{name: a, image: a}]}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cron}
spec:
  jobTemplate:
    spec:
      parallelism: 4
      template: {spec: {containers: [{name: a, image: a}]}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: job}
spec:
  template: {spec: {containers: [{name: a, image: a}]}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  template: {spec: {containers: [{name: a, image: a}]}}
---
apiVersion: v1
kind: Pod
metadata: {name: pod, labels: {app: pod}}
spec:
  containers: [{name: a, image: a}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: no-spec}
spec: {template: {spec: [x]}}
""",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad-env}\n"
    "spec: {template: {spec: {containers: [{name: a, env: {X: 1}}]}}}\n",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad-limit}\n"
    "spec: {template: {spec: {containers: [{name: a, resources: {limits: {memory: 1.2.3Gi}}}]}}}\n",
    "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: bad-replicas}\n"
    "spec: {replicas: '3', template: {spec: {containers: [{name: a}]}}}\n",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad-volumes}\n"
    "spec: {template: {spec: {volumes: {a: 1}, containers: [{name: a}]}}}\n",
]


def _workload_view(objs):
    from advisor.link.inputs import suppressed_codes
    from advisor.read.workloads import surge, workloads

    index = configmap_index(objs)
    return [(w.containers, w.pod_labels, w.replicas, w.volumes, w.volume_sources, w.mounts,
             surge(w.obj, 10), suppressed_codes(w.obj), w.obj.location())
            for w in workloads([o for o in objs if o.kind not in ("ConfigMap", "Secret")],
                               index)]


@pytest.mark.parametrize("text", WORKLOADS)
def test_workloads_link_the_same_from_the_cache_without_their_tree(tmp_path, text,
                                                                   monkeypatch):
    objs, lazy = _through_cache(tmp_path, text)
    want = _outcome(_workload_view, objs)
    decoded = _count_decodes(monkeypatch)
    assert _outcome(_workload_view, lazy) == want
    if not isinstance(want, tuple):  # read without an error: from what the cache kept
        from advisor.read.workloads import POD_SPEC_PATHS

        assert all(o.lines is not None for o in lazy if o.kind in POD_SPEC_PATHS)
        assert len(decoded) == sum(o.kind == "Secret" for o in objs)  # no extract kind
    else:  # refused: the same error, from the body (the cache kept no shape of it)
        assert [o.name for o in lazy if o.lines is None and o.kind != "Secret"]
    # the cold run with the cache on links the values a warm run decodes
    cache = FileCache(tmp_path / "c2", "key")
    used = repository._put(cache, text, "m.yaml", *k8s_objects(text, "m.yaml"), None, None)
    assert _outcome(_workload_view, used) == want


def test_the_first_workload_keeps_every_form():
    objs, _ = k8s_objects(WORKLOADS[0], "m.yaml")
    (view,) = _workload_view(objs)
    containers = view[0]
    env = {e.name: e for e in containers[2].env}
    assert [c.role for c in containers] == ["init", "sidecar", "main", "main"]
    assert env["POOL"].value == "10" and env["APP_POOL"].value == "7"
    assert env["URL2"].value == "postgresql://$(HOST):5432/7?x=$(Y)"  # HOST is APP_HOST
    assert env["FROM_SECRET"].secret and env["GONE"].from_ref.endswith(
        "(elsewhere: in the repository (m.yaml:6) without key nope)")  # the Secret is here
    assert env["NODE"].from_ref == "field:spec.nodeName" and "*" in env  # its fieldPath kept
    assert view[6].value == 4 and view[7] == ["PA106", "PA107"]
