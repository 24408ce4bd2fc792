"""Scale: `pool-advisor check` on generated trees, next to parsing their YAML once.

    python bench/scale.py [--sizes 2500,5000,10000] [--charts 200] [--runs 3] [--json]

Generates, in a temporary directory (nothing is committed):
- a tree of N Kubernetes manifests: per namespace 50 applications (Deployment with env
  and envFrom, its ConfigMap, Service, HPA), a PostgreSQL StatefulSet with its
  postgresql.conf ConfigMap and Service, and a PgBouncer Deployment with its
  pgbouncer.ini ConfigMap and Service; half the applications go through PgBouncer;
- a monorepo of C charts copied from fixtures/helm-chart-prod/charts/api (the
  `helm create` scaffold plus a database ConfigMap), each with its own name and values,
  plus the PostgreSQL manifests they connect to. Charts get a second baseline: parsing
  each chart's values.yaml plus its rendered output (what `helm template` prints), the
  YAML a chart check cannot avoid reading.

For each tree it times `pool-advisor check TREE --format json` (a fresh interpreter, as
pre-commit runs it) and, in the same run, a fresh interpreter that only reads every
YAML file of the tree once with PyYAML's CSafeLoader (libyaml: the floor, what
advisor.read.yamlpos is built on; ruamel.yaml's round-trip loader is no longer on the check
path). Figures: files per second of both and their ratio (target: check within 2x of
the floor), CPU seconds per 1,000 files across sizes (linear means flat: target within
1.1x from the smallest to the largest tree), and peak RSS of each child with the check's
memory above the floor's per manifest (target: 5 KB). Times are medians of --runs, each
pair run back to back so machine load hits both; CPU seconds (user+sys of the child)
are what load distorts least.
Bytecode is compiled first, as an install does (the environment may set
PYTHONDONTWRITEBYTECODE=1).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHART_TEMPLATE = REPO / "fixtures" / "helm-chart-prod" / "charts" / "api"
APPS_PER_NAMESPACE = 50

PARSE_ONLY = r"""
import os, sys, yaml
loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
n = bad = 0
for folder, dirs, files in os.walk(sys.argv[1]):
    for name in files:
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                text = fh.read()
            try:
                n += sum(1 for _ in yaml.load_all(text, Loader=loader))
            except Exception:  # Helm templates are not YAML until rendered
                bad += 1
print(n, bad)
"""


# --- generated manifests ----------------------------------------------------------


def _app_files(ns: str, i: int) -> dict[str, str]:
    name = f"svc-{i:03d}"
    via_bouncer = i % 2 == 0
    host = f"pgbouncer.{ns}.svc.cluster.local:6432" if via_bouncer else \
        f"postgres.{ns}.svc.cluster.local:5432"
    deployment = f"""\
# {name}: a Spring Boot service
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
  labels:
    app: {name}
spec:
  replicas: {2 + i % 3}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
        - name: {name}
          image: registry.example.com/{ns}/{name}:1.{i}.0
          ports:
            - containerPort: 8080
          envFrom:
            - configMapRef:
                name: {name}-config
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://{host}/{ns.replace('-', '_')}
            - name: SPRING_DATASOURCE_USERNAME
              value: {name}
            - name: SPRING_DATASOURCE_PASSWORD
              valueFrom:
                secretKeyRef:
                  name: {name}-db
                  key: password
            - name: JAVA_OPTS
              value: -Xmx512m -XX:+UseG1GC
          resources:
            requests:
              cpu: 250m
              memory: 512Mi
            limits:
              memory: 768Mi
          readinessProbe:
            httpGet:
              path: /actuator/health
              port: 8080
"""
    configmap = f"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}-config
  namespace: {ns}
data:
  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "{5 + i % 10}"
  SPRING_DATASOURCE_HIKARI_MINIMUMIDLE: "2"
  LOGGING_LEVEL_ROOT: INFO
  SERVER_PORT: "8080"
"""
    service = f"""\
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {ns}
spec:
  selector:
    app: {name}
  ports:
    - port: 80
      targetPort: 8080
"""
    hpa = f"""\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {name}
  namespace: {ns}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {name}
  minReplicas: 2
  maxReplicas: {4 + i % 8}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: 70
"""
    return {f"{name}/deployment.yaml": deployment, f"{name}/configmap.yaml": configmap,
            f"{name}/service.yaml": service, f"{name}/hpa.yaml": hpa}


def _database_files(ns: str) -> dict[str, str]:
    statefulset = f"""\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: postgres
  namespace: {ns}
spec:
  replicas: 1
  serviceName: postgres
  selector:
    matchLabels:
      app: postgres
  template:
    metadata:
      labels:
        app: postgres
    spec:
      containers:
        - name: postgres
          image: postgres:15.6
          args: ["-c", "config_file=/etc/postgresql/postgresql.conf"]
          resources:
            limits:
              memory: 16Gi
          volumeMounts:
            - name: config
              mountPath: /etc/postgresql
      volumes:
        - name: config
          configMap:
            name: postgres-config
"""
    conf = f"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: postgres-config
  namespace: {ns}
data:
  postgresql.conf: |
    listen_addresses = '*'
    max_connections = 500
    superuser_reserved_connections = 3
    shared_buffers = 4GB
    work_mem = 8MB
    maintenance_work_mem = 512MB
    autovacuum_max_workers = 3
    max_wal_senders = 10
"""
    pg_service = f"""\
apiVersion: v1
kind: Service
metadata:
  name: postgres
  namespace: {ns}
spec:
  selector:
    app: postgres
  ports:
    - port: 5432
"""
    bouncer = f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pgbouncer
  namespace: {ns}
spec:
  replicas: 2
  selector:
    matchLabels:
      app: pgbouncer
  template:
    metadata:
      labels:
        app: pgbouncer
    spec:
      containers:
        - name: pgbouncer
          image: bitnami/pgbouncer:1.22.1
          command: ["pgbouncer", "/etc/pgbouncer/pgbouncer.ini"]
          volumeMounts:
            - name: config
              mountPath: /etc/pgbouncer
      volumes:
        - name: config
          configMap:
            name: pgbouncer-config
"""
    ini = f"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: pgbouncer-config
  namespace: {ns}
data:
  pgbouncer.ini: |
    [databases]
    * = host=postgres.{ns}.svc.cluster.local port=5432

    [pgbouncer]
    listen_addr = 0.0.0.0
    listen_port = 6432
    pool_mode = transaction
    max_client_conn = 5000
    default_pool_size = 40
    reserve_pool_size = 5
"""
    bouncer_service = f"""\
apiVersion: v1
kind: Service
metadata:
  name: pgbouncer
  namespace: {ns}
spec:
  selector:
    app: pgbouncer
  ports:
    - port: 6432
"""
    return {"postgres/statefulset.yaml": statefulset, "postgres/configmap.yaml": conf,
            "postgres/service.yaml": pg_service, "pgbouncer/deployment.yaml": bouncer,
            "pgbouncer/configmap.yaml": ini, "pgbouncer/service.yaml": bouncer_service}


def generate_manifests(dest: Path, count: int) -> int:
    """Write exactly `count` manifest files under `dest`; returns count."""
    written = 0
    ns_index = 0
    while written < count:
        ns = f"team-{ns_index:03d}"
        files = _database_files(ns)
        for i in range(APPS_PER_NAMESPACE):
            files.update(_app_files(ns, i))
        for rel, text in files.items():
            if written >= count:
                break
            path = dest / ns / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written += 1
        ns_index += 1
    return written


# --- generated chart monorepo -----------------------------------------------------


def generate_charts(dest: Path, count: int) -> int:
    """`count` charts under dest/charts, plus the PostgreSQL they use (dest/k8s).
    Returns the number of YAML files written (values, templates, manifests)."""
    for i in range(count):
        chart = dest / "charts" / f"svc-{i:03d}"
        shutil.copytree(CHART_TEMPLATE, chart, ignore=shutil.ignore_patterns(
            "charts", "values-prod.yaml", "tests"))
        meta = (CHART_TEMPLATE / "Chart.yaml").read_text(encoding="utf-8")
        meta = meta.split("\ndependencies:", 1)[0]  # the worker subchart is not copied
        (chart / "Chart.yaml").write_text(meta.replace("name: api", f"name: svc-{i:03d}", 1),
                                          encoding="utf-8")
        values = (CHART_TEMPLATE / "values.yaml").read_text(encoding="utf-8")
        values = values.replace("host: orders-db", f"host: postgres.db-{i % 4}", 1)
        values = values.replace("poolSize: 10", f"poolSize: {5 + i % 10}", 1)
        values = values.replace("replicaCount: 1", f"replicaCount: {1 + i % 3}", 1)
        (chart / "values.yaml").write_text(values, encoding="utf-8")
    for k in range(4):
        for rel, text in _database_files(f"db-{k}").items():
            if rel.startswith("postgres/"):
                path = dest / "k8s" / f"db-{k}" / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    return sum(1 for p in dest.rglob("*") if p.suffix in (".yaml", ".yml"))


# --- timing -------------------------------------------------------------------------


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}


def timed(cmd: list[str], cwd: Path | None = None
          ) -> tuple[float, float, float, subprocess.CompletedProcess]:
    """(wall seconds, child CPU seconds, child peak RSS in bytes, result). The peak is
    read with /usr/bin/time's %M when it is there (RUSAGE_CHILDREN's maximum would be
    the largest child so far, not this one's)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    timer = shutil.which("time") if os.path.exists("/usr/bin/time") else None
    wrapped = [timer, "-f", "%M", *cmd] if timer else cmd
    start = time.perf_counter()
    proc = subprocess.run(wrapped, env=_env(), capture_output=True, text=True, check=False,
                          cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss = float("nan")
    if timer:
        *rest, last = proc.stderr.rstrip("\n").rsplit("\n", 1) or [""]
        if last.strip().isdigit():
            rss = int(last) * 1024.0
            proc.stderr = rest[0] if rest else ""
    else:
        rss = after.ru_maxrss * 1024.0
    return wall, cpu, rss, proc


def check_cmd(tree: Path, cache: bool = False) -> list[str]:
    """The check as timed: without the parse cache unless asked (with --runs > 1 every
    run after the first would read a warm cache; this bench measures the reading)."""
    return [sys.executable, "-m", "advisor", "check", str(tree), "--format", "json",
            *([] if cache else ["--no-cache"])]


def parse_cmd(tree: Path) -> list[str]:
    return [sys.executable, "-c", PARSE_ONLY, str(tree)]


def render_charts(tree: Path, dest: Path) -> None:
    """What `helm template` would print for each chart (default values, release
    "release"), one file per template, next to a copy of its values.yaml: the YAML a
    chart check has to read at the least. Rendered by the same engine the check uses."""
    import helm_python

    for chart_dir in sorted((tree / "charts").iterdir()):
        out = dest / chart_dir.name
        out.mkdir(parents=True)
        shutil.copy(chart_dir / "values.yaml", out / "values.yaml")
        with helm_python.Chart.load(str(chart_dir)) as chart:
            rendered = chart.render(values={}, name="release", namespace=None,
                                    is_install=True)
        for i, (_name, text) in enumerate(sorted(rendered.items())):
            if text.strip():
                (out / f"rendered-{i:02d}.yaml").write_text(text, encoding="utf-8")
    shutil.copytree(tree / "k8s", dest / "k8s")


def measure(tree: Path, files: int, runs: int, parse_tree: Path | None = None,
            cache: bool = False) -> dict:
    """Check `tree`; parse-only `parse_tree` (default: the same tree)."""
    checks, parses = [], []
    for _ in range(runs):
        w, c, m, proc = timed(check_cmd(tree, cache))
        if proc.returncode not in (0, 1):
            raise SystemExit(f"check failed on {tree} (exit {proc.returncode}):\n"
                             f"{proc.stderr[-2000:]}")
        checks.append((w, c, m))
        w, c, m, proc = timed(parse_cmd(parse_tree or tree))
        if proc.returncode != 0:
            raise SystemExit(f"parse-only failed: {proc.stderr[-2000:]}")
        parses.append((w, c, m))
    med = statistics.median
    cw, cc, cm = (med(x[i] for x in checks) for i in range(3))
    pw, pc, pm = (med(x[i] for x in parses) for i in range(3))
    return {"files": files, "check_wall_s": cw, "check_cpu_s": cc, "parse_wall_s": pw,
            "parse_cpu_s": pc, "check_files_per_s": files / cw,
            "parse_files_per_s": files / pw, "ratio_wall": cw / pw, "ratio_cpu": cc / pc,
            "check_peak_rss": cm, "parse_peak_rss": pm,
            "held_bytes_per_file": (cm - pm) / files}


# Issue 19's targets for the manifest trees.
TARGET_CPU_RATIO = 2.0  # check CPU / CSafeLoader parse CPU, same files
TARGET_GROWTH = 1.10  # CPU per file at a size / CPU per file at the smallest size
TARGET_HELD_KB = 5.0  # peak RSS above the floor's, per manifest


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def target_lines(manifests: list[dict]) -> list[str]:
    """Each target at each size, with PASS or MISS."""
    if not manifests:
        return []
    first = manifests[0]
    base = first["check_cpu_s"] / first["files"]
    lines = [f"targets (CPU, not wall): check <= {TARGET_CPU_RATIO}x the parse floor; CPU per "
             f"file within {TARGET_GROWTH}x of the {first['files']}-manifest tree's; "
             f"<= {TARGET_HELD_KB:.0f} KB held per manifest"]
    for r in manifests:
        growth = (r["check_cpu_s"] / r["files"]) / base
        held = r["held_bytes_per_file"] / 1024
        lines.append(
            f"  manifests-{r['files']:<7} vs floor x{r['ratio_cpu']:.2f} "
            f"{verdict(r['ratio_cpu'] <= TARGET_CPU_RATIO)}   per-file growth x{growth:.2f} "
            f"{verdict(growth <= TARGET_GROWTH)}   held {held:.1f} KB "
            f"{verdict(held <= TARGET_HELD_KB)}")
    return lines


def compile_sources() -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "advisor")],
                   check=True, env={k: v for k, v in os.environ.items()
                                    if k != "PYTHONDONTWRITEBYTECODE"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,30000")
    parser.add_argument("--charts", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the generated trees")
    parser.add_argument("--cache", action="store_true",
                        help="let check use its parse cache (default: --no-cache)")
    args = parser.parse_args()
    compile_sources()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    tmp = Path(tempfile.mkdtemp(prefix="pool-advisor-scale-"))
    results: dict = {"load_before": os.getloadavg(), "manifests": [], "charts": None}
    try:
        for n in sizes:
            tree = tmp / f"manifests-{n}"
            generate_manifests(tree, n)
            results["manifests"].append(measure(tree, n, args.runs, cache=args.cache))
        if args.charts:
            tree = tmp / f"charts-{args.charts}"
            files = generate_charts(tree, args.charts)
            runs = max(1, args.runs // 2)
            results["charts"] = {"charts": args.charts, **measure(tree, files, runs)}
            try:
                render_charts(tree, tmp / "charts-rendered")
            except ImportError:
                print("helm_python not installed: no rendered-output baseline", file=sys.stderr)
            else:
                results["charts_vs_rendered"] = {
                    "charts": args.charts,
                    **measure(tree, files, runs, parse_tree=tmp / "charts-rendered")}
    finally:
        if args.keep:
            print(f"trees kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    results["load_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"load average {results['load_before'][0]:.1f} -> {results['load_after'][0]:.1f}; "
          f"medians of {args.runs} runs (check and parse-only run back to back)")
    print(f"{'tree':<18}{'files':>7}{'check f/s':>11}{'floor f/s':>11}{'ratio':>7}"
          f"{'cpu ratio':>11}{'check s/1k':>12}{'cpu s/1k':>10}{'RSS MB':>8}{'KB/file':>9}")
    rows = [(f"manifests-{r['files']}", r) for r in results["manifests"]]
    if results["charts"]:
        rows.append((f"charts-{results['charts']['charts']}", results["charts"]))
    if results.get("charts_vs_rendered"):
        rows.append(("  vs rendered", results["charts_vs_rendered"]))
    for label, r in rows:
        print(f"{label:<18}{r['files']:>7}{r['check_files_per_s']:>11.0f}"
              f"{r['parse_files_per_s']:>11.0f}{r['ratio_wall']:>7.2f}{r['ratio_cpu']:>11.2f}"
              f"{r['check_wall_s'] / r['files'] * 1000:>12.3f}"
              f"{r['check_cpu_s'] / r['files'] * 1000:>10.3f}"
              f"{r['check_peak_rss'] / 2**20:>8.0f}{r['held_bytes_per_file'] / 1024:>9.1f}")
    for line in target_lines(results["manifests"]):
        print(line)
    print("charts are compared with parsing their files (templates are not YAML until")
    print("rendered) and, 'vs rendered', with parsing their values.yaml plus what the")
    print("engine renders from them")


if __name__ == "__main__":
    main()
