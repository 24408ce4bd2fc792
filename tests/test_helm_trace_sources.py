"""Which line a rendered Helm field cites (advisor.read.render.helm_trace): never a
values key whose value Helm discarded (a falsy value `default` passes over)."""

from __future__ import annotations

import shutil
import textwrap
from types import SimpleNamespace

import pytest

from advisor.read.fs import Root
from advisor.read.render import field_source
from advisor.read.render.helm import render_chart
from advisor.read.sources.k8s import get
from tests.deploy_helpers import by_ref
from tests.tree_helpers import POSTGRES_DB

helm = pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")


def _chart(tmp_path, values: str, template: str):
    chart = helm.Chart.create("app", str(tmp_path))
    chart.close()
    app = tmp_path / "app"
    (app / "values.yaml").write_text(values)
    shutil.rmtree(app / "templates")
    (app / "templates").mkdir()
    (app / "templates" / "db.yaml").write_text(textwrap.dedent(template))
    return app


DEPLOYMENT = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: {{ .Release.Name }}-db
    spec:
      replicas: %s
      template:
        spec:
          containers:
            - name: db
              image: postgres:16
    """


def test_a_zero_default_passes_over_is_not_the_source(tmp_path):
    # Temporal: `default $.Values.server.replicaCount $serviceValues.replicaCount` with
    # the service's 0 renders the server's 1; a sentinel for the 0 is truthy and won.
    # `a` shows up in another object too, so it is not tried again for being missing.
    app = _chart(tmp_path, "a: 3\nb: 2\n", DEPLOYMENT % "{{ default .Values.a .Values.b }}")
    (app / "templates" / "other.yaml").write_text(textwrap.dedent(
        DEPLOYMENT.replace("-db", "-other") % "{{ .Values.a }}"))
    (app / "zero.yaml").write_text("b: 0\n")
    r = render_chart(Root.of(tmp_path), "app", values_files=["zero.yaml"], release="r1")
    assert not r.problems, r.problems
    db = by_ref(r.objects, "Deployment/r1-db")
    assert get(db.body, "spec", "replicas") == 3
    src = field_source(db, "spec", "replicas")
    assert (src.path, src.line, src.key) == ("app/values.yaml", 1, "values: a")
    other = by_ref(r.objects, "Deployment/r1-other")
    assert field_source(other, "spec", "replicas").line == 1


def test_a_zero_that_only_picks_a_branch_leaves_the_template_line(tmp_path):
    _chart(tmp_path, "b: 0\n",
           DEPLOYMENT % "{{ if .Values.b }}{{ .Values.b }}{{ else }}4{{ end }}")
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    assert not r.problems, r.problems
    db = by_ref(r.objects, "Deployment/r1-db")
    assert get(db.body, "spec", "replicas") == 4
    src = field_source(db, "spec", "replicas")
    assert (src.path, src.line) == ("app/templates/db.yaml", 6)


BOUNCER_VALUES = """\
pgbouncer:
  maxClientConn: 150
  poolSize: 12
"""

BOUNCER_HELPERS = """\
{{- define "ini" -}}
[databases]
shop = host=db port=5432 dbname=shop pool_size={{ .Values.pgbouncer.poolSize }}

[pgbouncer]
pool_mode = transaction
max_client_conn = {{ .Values.pgbouncer.maxClientConn }}
{{- end }}
"""

BOUNCER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pgbouncer
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: pgbouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: bitnami/pgbouncer:1.22.1
          volumeMounts: [{name: cfg, mountPath: /etc/pgbouncer}]
      volumes:
        - name: cfg
          %s
"""

# The Secret as the Airflow chart writes it: the ini is `include`d and base64-encoded.
SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: cfg
data:
  pgbouncer.ini: {{ include "ini" . | b64enc }}
"""

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  pgbouncer.ini: |
    {{- include "ini" . | nindent 4 }}
"""


def _bouncer_chart(tmp_path, config: str, volume: str):
    app = _chart(tmp_path, BOUNCER_VALUES, BOUNCER % volume)
    (app / "templates" / "_helpers.tpl").write_text(BOUNCER_HELPERS)
    (app / "templates" / "config.yaml").write_text(config)
    return app


def _pooler(tmp_path):
    from advisor.engine.check import scan
    from advisor.engine.options import CheckOptions

    (pooler,) = scan([str(tmp_path)], CheckOptions(cache=False)).topology.poolers
    return pooler


@pytest.mark.parametrize("config, volume", [(SECRET, "secret: {secretName: cfg}"),
                                            (CONFIGMAP, "configMap: {name: cfg}")])
def test_a_generated_ini_is_cited_at_the_helper_line_not_past_its_key(tmp_path, config,
                                                                      volume):
    # The ini's own line n was added to the key's line: pool_mode at config.yaml:10 (the
    # Secret) or :11 (the ConfigMap) of a 7-line template; then at the key's line (6);
    # it is written at the helper's line 6 (helm_text_lines).
    _bouncer_chart(tmp_path, config, volume)
    pooler = _pooler(tmp_path)
    mode = pooler.settings["pool_mode"].source
    assert (mode.path, mode.line, mode.key) == ("app/templates/_helpers.tpl", 6, "pool_mode")
    assert pooler.main_end is None  # nothing is added after a line that is not the ini's


# The ini written by one action: no file of the chart holds its lines.
def _one_action(name: str, text: str, args: str) -> str:
    """A helper that writes `text` with one printf: no file of the chart holds its lines."""
    body = text.replace('"', '\\"').replace("\n", "\\n")
    return f'{{{{- define "{name}" -}}}}\n{{{{ printf "{body}" {args} }}}}\n{{{{- end }}}}\n'


PRINTF_HELPERS = _one_action(
    "ini", "[databases]\nshop = host=db port=5432 dbname=shop pool_size=%v\n\n"
    "[pgbouncer]\npool_mode = transaction\nmax_client_conn = %v",
    ".Values.pgbouncer.poolSize .Values.pgbouncer.maxClientConn")


@pytest.mark.parametrize("config, volume", [(SECRET, "secret: {secretName: cfg}"),
                                            (CONFIGMAP, "configMap: {name: cfg}")])
def test_a_generated_ini_no_chart_file_holds_is_cited_at_its_key_line(tmp_path, config,
                                                                     volume):
    app = _bouncer_chart(tmp_path, config, volume)
    (app / "templates" / "_helpers.tpl").write_text(PRINTF_HELPERS)
    pooler = _pooler(tmp_path)
    mode = pooler.settings["pool_mode"].source
    assert (mode.path, mode.line) == ("app/templates/config.yaml", 6)
    assert mode.key == "data.pgbouncer.ini: pool_mode"
    assert pooler.main_end is None


@pytest.mark.parametrize("config, volume", [(SECRET, "secret: {secretName: cfg}"),
                                            (CONFIGMAP, "configMap: {name: cfg}")])
def test_each_setting_of_a_generated_ini_traces_to_its_own_values_line(tmp_path, config,
                                                                       volume):
    # The Secret's base64 hid the sentinels; the ConfigMap's were found in the text as a
    # whole, never per line. pool_size shares its line with host, port and dbname.
    _bouncer_chart(tmp_path, config, volume)
    pooler = _pooler(tmp_path)
    clients = pooler.settings["max_client_conn"]
    assert clients.value == 150
    assert (clients.source.path, clients.source.line) == ("app/values.yaml", 2)
    assert clients.source.key == "values: pgbouncer.maxClientConn"
    (shop,) = pooler.databases
    assert (shop.pool_size.source.path, shop.pool_size.source.line) == ("app/values.yaml", 3)
    mode = pooler.settings["pool_mode"].source  # written in the helper: its line there
    assert (mode.path, mode.line) == ("app/templates/_helpers.tpl", 6)


def _many_keys_chart(tmp_path, keys: int):
    # `upper` changes the string's sentinel: numbers and strings are then rendered apart.
    values = "".join(f"k{i}: {100 + i}\n" for i in range(keys)) + "name: db\n"
    annotations = "".join(f"        k{i}: \"{{{{ .Values.k{i} }}}}\"\n" for i in range(keys))
    annotations += "        up: {{ upper .Values.name | quote }}\n"
    name = "      name: {{ .Release.Name }}-db\n"
    template = DEPLOYMENT.replace(name, name + "      annotations:\n" + annotations)
    return _chart(tmp_path, values, template % "{{ .Values.k0 }}")


def test_tracing_does_not_depend_on_how_fast_the_machine_renders(tmp_path, monkeypatch):
    # The budget was 5 s of wall clock: a loaded machine cut tracing off after fewer
    # renders (the Airflow chart: 63 to 143), so the lines cited changed from run to run.
    from advisor.read.render import helm_trace

    _many_keys_chart(tmp_path, 40)
    fast = render_chart(Root.of(tmp_path), "app", release="r1")
    now = [0.0]

    def slow_clock() -> float:  # each look at the clock: 3 s later
        now[0] += 3.0
        return now[0]

    monkeypatch.setattr(helm_trace, "time", SimpleNamespace(monotonic=slow_clock))
    slow = render_chart(Root.of(tmp_path), "app", release="r1")
    assert [o.value_sources for o in slow.objects] == [o.value_sources for o in fast.objects]
    assert slow.notices == fast.notices
    db = by_ref(slow.objects, "Deployment/r1-db")
    assert field_source(db, "metadata", "annotations", "k39").line == 40
    assert field_source(db, "spec", "replicas").line == 1


def test_the_clock_is_a_safety_limit_said_apart(tmp_path, monkeypatch):
    from advisor.read.render import helm_trace

    _many_keys_chart(tmp_path, 4)
    now = [0.0]

    def stuck_clock() -> float:
        now[0] += 100.0
        return now[0]

    monkeypatch.setattr(helm_trace, "time", SimpleNamespace(monotonic=stuck_clock))
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    (said,) = [n for n in r.notices if "values tracing stopped" in n]
    assert "time limit (30 s)" in said and "may differ from run to run" in said


def test_keys_the_values_schema_refuses_a_sentinel_for_are_dropped_not_split_for(
        tmp_path, monkeypatch):
    # The Airflow chart's schema wants integers (pgbouncer.maxClientConn) and enums
    # (pullPolicy): every group holding one failed and was split down to it, 290 of 348
    # renders, so the budget ran out before the other keys were traced.
    import json

    from advisor.read.render import helm_trace

    app = _many_keys_chart(tmp_path, 16)
    (app / "values.yaml").write_text((app / "values.yaml").read_text() + "policy: Always\n")
    (app / "values.schema.json").write_text(json.dumps({"properties": {
        "k3": {"type": "integer"}, "k11": {"type": ["integer", "null"]},
        "policy": {"enum": ["Always", "Never"]}}}))
    calls = []
    real = helm_trace.ChartRenderer.render

    def render(self, values):
        calls.append(values)
        return real(self, values)

    monkeypatch.setattr(helm_trace.ChartRenderer, "render", render)
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    assert not r.problems, r.problems
    db = by_ref(r.objects, "Deployment/r1-db")
    assert field_source(db, "metadata", "annotations", "k15").line == 16
    # the baseline; numbers and strings together (refused: k3, k11, policy), together
    # again without them (`upper`: not the baseline once put back), numbers, strings;
    # k3 and k11 moved
    assert len(calls) == 6, len(calls)
    assert field_source(db, "metadata", "annotations", "k3").line == 4


@pytest.mark.parametrize("config, volume", [(SECRET, "secret: {secretName: cfg}"),
                                            (CONFIGMAP, "configMap: {name: cfg}")])
def test_integers_a_schema_wants_are_traced_by_moving_them(tmp_path, config, volume):
    # The Airflow chart's schema wants integers: no 1.9xxxxx sentinel renders, so
    # pgbouncer.maxClientConn was cited at the Secret's line, and advise could not edit it.
    import json

    app = _bouncer_chart(tmp_path, config, volume)
    integer = {"type": "integer"}
    (app / "values.schema.json").write_text(json.dumps({"properties": {"pgbouncer": {
        "properties": {"maxClientConn": integer, "poolSize": integer}}}}))
    pooler = _pooler(tmp_path)
    clients = pooler.settings["max_client_conn"]
    assert clients.value == 150
    assert (clients.source.path, clients.source.line) == ("app/values.yaml", 2)
    (shop,) = pooler.databases
    assert (shop.pool_size.source.path, shop.pool_size.source.line) == ("app/values.yaml", 3)


def test_a_zero_is_not_moved_past_the_default_that_passes_over_it(tmp_path):
    # Moved, b's 0 is b's prime, which `default` takes: the field moved by b's prime
    # less a's value, another key's prime (c's, whose value is a's too) at times.
    import json

    app = _chart(tmp_path, "c: 3\na: 3\nb: 0\n",
                 DEPLOYMENT % "{{ default .Values.a .Values.b }}")
    (app / "templates" / "other.yaml").write_text(textwrap.dedent(
        DEPLOYMENT.replace("-db", "-other") % "{{ add .Values.c .Values.b }}"))
    integer = {"type": "integer"}
    (app / "values.schema.json").write_text(json.dumps({"properties": {
        "a": integer, "b": integer, "c": integer}}))
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    db = by_ref(r.objects, "Deployment/r1-db")
    src = field_source(db, "spec", "replicas")
    assert (src.path, src.line) == ("app/values.yaml", 2)


PG_VALUES = "postgres:\n  maxConnections: 250\n"
PG_HELPERS = """\
{{- define "pgconf" -}}
listen_addresses = '*'
max_connections = {{ .Values.postgres.maxConnections }}
shared_buffers = 128MB
{{- end }}
"""
PG_SERVER = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  template:
    spec:
      containers:
        - name: postgres
          image: postgres:16
          args: ["-c", "config_file=/etc/postgresql/postgresql.conf"]
          volumeMounts: [{name: cfg, mountPath: /etc/postgresql}]
      volumes:
        - name: cfg
          configMap: {name: pgcfg}
"""
PG_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: pgcfg
data:
  postgresql.conf: |
    {{- include "pgconf" . | nindent 4 }}
"""


def test_a_generated_postgresql_conf_cites_values_or_its_key_line(tmp_path):
    """As for pgbouncer.ini: a postgresql.conf a helper writes (`include | nindent`) was
    cited at the key's line + the conf's own line, a line of something else or past the
    file's end; a value traced into it cites its values line, the others the key."""
    from advisor.engine.check import scan
    from advisor.engine.options import CheckOptions

    app = _chart(tmp_path, PG_VALUES, PG_SERVER)
    (app / "templates" / "_helpers.tpl").write_text(PG_HELPERS)
    (app / "templates" / "config.yaml").write_text(PG_CONFIGMAP)
    (server,) = scan([str(tmp_path)], CheckOptions(cache=False)).topology.servers
    conns = server.settings["max_connections"]
    assert conns.value == 250
    assert (conns.source.path, conns.source.line) == ("app/values.yaml", 2), conns.source
    buffers = server.settings["shared_buffers"].source  # the helper's line
    assert (buffers.path, buffers.line) == ("app/templates/_helpers.tpl", 4), buffers
    assert buffers.key == "shared_buffers"


# The Temporal chart's shape (helm-charts templates/server-configmap.yaml): the
# persistence block a helper writes, `include ... | nindent 6` inside a literal block.
TEMPORAL_VALUES = "store:\n  maxConns: 15\n"
TEMPORAL_HELPERS = """\
{{- define "persistence" -}}
defaultStore: default
visibilityStore: visibility
datastores:
  default:
    sql:
      pluginName: postgres12
      connectAddr: "db:5432"
      maxConns: {{ .Values.store.maxConns }}
  visibility:
    sql:
      pluginName: postgres12
      connectAddr: "db:5432"
      maxConns: 10
{{- end }}
"""
TEMPORAL_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: temporal-config
data:
  config_template.yaml: |-
    log:
      stdout: true
    persistence:
      {{- include "persistence" . | nindent 6 }}
    global:
      membership:
        name: temporal
"""
TEMPORAL_SERVER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: temporal-history
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: temporal-history
          image: temporalio/server:1.25.1
          volumeMounts:
            - name: config
              mountPath: /etc/temporal/config/config_template.yaml
              subPath: config_template.yaml
      volumes:
        - name: config
          configMap: {name: temporal-config}
"""


# The same block written by one action: no file of the chart holds its lines.
TEMPORAL_PRINTF_HELPERS = _one_action("persistence", (
    "defaultStore: default\nvisibilityStore: visibility\ndatastores:\n"
    "  default:\n    sql:\n      pluginName: postgres12\n"
    '      connectAddr: "db:5432"\n      maxConns: %v\n'
    "  visibility:\n    sql:\n      pluginName: postgres12\n"
    '      connectAddr: "db:5432"\n      maxConns: 10'), ".Values.store.maxConns")


def _temporal_chart(tmp_path, helpers=TEMPORAL_HELPERS):
    app = _chart(tmp_path, TEMPORAL_VALUES, TEMPORAL_SERVER)
    (app / "templates" / "_helpers.tpl").write_text(helpers)
    (app / "templates" / "config.yaml").write_text(TEMPORAL_CONFIGMAP)
    (app / "templates" / "pg.yaml").write_text(textwrap.dedent(POSTGRES_DB).replace(
        "max_connections=50", "max_connections=20"))
    return app


def test_a_generated_temporal_config_cites_values_or_its_key_line(tmp_path):
    """The Temporal chart: maxConns was cited at the key's line + its line in the text,
    lines of the template holding other things (`global:`, `name: temporal`) or past its
    end; a value traced into it cites its values line, one the helper writes the key."""
    from advisor.engine.check import scan
    from advisor.engine.options import CheckOptions

    _temporal_chart(tmp_path)
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    (client,) = topo.clients
    sizes = {p.label: p.size for p in client.pools}
    default = sizes["Temporal default store maxConns"]
    assert default.value == 15
    assert (default.source.path, default.source.line) == ("app/values.yaml", 2), default
    visibility = sizes["Temporal visibility store maxConns"]  # the helper's line
    assert visibility.value == 10
    assert (visibility.source.path, visibility.source.line) == \
        ("app/templates/_helpers.tpl", 14), visibility
    assert visibility.source.key == "persistence.datastores.visibility.sql.maxConns"
    route = next(p.route for p in client.pools if "visibility" in p.label)
    assert route is not None and route.source is not None
    assert (route.source.path, route.source.line) == ("app/templates/_helpers.tpl", 13)


def test_advise_edits_no_key_line_of_a_generated_text(tmp_path):
    """advise shrinks the traced maxConns at its values line; the one cited at the data
    key's line (which holds `config_template.yaml: |-`, not the value) is said to be
    changed by hand, never edited there."""
    from advisor.advise.plan import advise
    from advisor.scan import load_with_settings

    _temporal_chart(tmp_path, TEMPORAL_PRINTF_HELPERS)
    topo, budgets, *_ = load_with_settings([str(tmp_path)])
    proposals = [p for a in advise(topo, budgets) for p in a.proposals
                 if p.kind == "client-pool"]
    by_key = {p.key: p for p in proposals}
    default = by_key["values: store.maxConns"]
    assert default.edit is not None and default.edit.path == "app/values.yaml"
    assert default.edit.line == 2
    visibility = by_key[
        "data.config_template.yaml: persistence.datastores.visibility.sql.maxConns"]
    assert visibility.edit is None
    assert "by hand" not in visibility.manual and "template" in visibility.manual


def test_advise_edits_a_value_at_the_helper_line_it_is_written_at(tmp_path):
    """The helper writes `maxConns: 10` itself: the value is on that line, edited there."""
    from advisor.advise.plan import advise
    from advisor.scan import load_with_settings

    _temporal_chart(tmp_path)
    topo, budgets, *_ = load_with_settings([str(tmp_path)])
    proposals = [p for a in advise(topo, budgets) for p in a.proposals
                 if p.kind == "client-pool"]
    visibility = {p.key: p for p in proposals}[
        "persistence.datastores.visibility.sql.maxConns"]
    assert visibility.edit is not None
    assert (visibility.edit.path, visibility.edit.line) == ("app/templates/_helpers.tpl", 14)
    assert visibility.edit.old == "10"


# element-hq/ess-helm's shape (templates/synapse/_helpers.tpl:237): a config file the
# chart ships, read with `tpl (.Files.Get ...)` in a helper the ConfigMap includes.
FILES_GET_HELPERS = """\
{{- define "persistence" -}}
{{ tpl (.Files.Get "configs/persistence.yaml.tpl") . }}
{{- end }}
"""


def test_a_text_a_chart_file_holds_is_cited_at_that_files_lines(tmp_path):
    app = _temporal_chart(tmp_path, FILES_GET_HELPERS)
    (app / "configs").mkdir()
    # the helper's body, with a branch the render leaves out
    (app / "configs" / "persistence.yaml.tpl").write_text(
        "{{- if .Values.archival }}\narchival: on\n{{- end }}\n"
        + TEMPORAL_HELPERS.split("\n", 1)[1].rsplit("{{- end }}", 1)[0])
    from advisor.engine.check import scan
    from advisor.engine.options import CheckOptions

    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    (client,) = topo.clients
    sizes = {p.label: p.size for p in client.pools}
    default = sizes["Temporal default store maxConns"]
    assert (default.source.path, default.source.line) == ("app/values.yaml", 2), default
    visibility = sizes["Temporal visibility store maxConns"]
    assert (visibility.source.path, visibility.source.line) == \
        ("app/configs/persistence.yaml.tpl", 16), visibility


AIRFLOW_HELPERS = """\
{{- define "airflow_cfg" -}}
[core]
executor = LocalExecutor

[database]
sql_alchemy_pool_size = {{ .Values.poolSize }}
sql_alchemy_max_overflow = 2
{{- end }}
"""
AIRFLOW_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: airflow-config
data:
  airflow.cfg: |-
    {{- include "airflow_cfg" . | nindent 4 }}
"""
AIRFLOW_TRIGGERER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: triggerer
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: triggerer
          image: apache/airflow:2.10.0
          args: ["bash", "-c", "exec airflow triggerer"]
          env:
            - name: AIRFLOW__DATABASE__SQL_ALCHEMY_CONN
              value: postgresql://airflow:pw@db:5432/airflow
          volumeMounts:
            - {name: config, mountPath: /opt/airflow/airflow.cfg, subPath: airflow.cfg}
      volumes:
        - name: config
          configMap: {name: airflow-config}
"""


def test_a_generated_airflow_cfg_cites_values_or_its_key_line(tmp_path):
    """Any mounted application file, not Temporal's only: the official Airflow chart's
    airflow.cfg in a ConfigMap; written by a helper, its options were cited at the key's
    line + their line in the text (config.yaml:11 and :12 of a 7-line template)."""
    from advisor.engine.check import scan
    from advisor.engine.options import CheckOptions

    app = _chart(tmp_path, "poolSize: 3\n", AIRFLOW_TRIGGERER)
    (app / "templates" / "_helpers.tpl").write_text(AIRFLOW_HELPERS)
    (app / "templates" / "config.yaml").write_text(AIRFLOW_CONFIGMAP)
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    (pool,) = next(c for c in topo.clients if c.name == "triggerer").pools
    assert pool.size.value == 3 + 2
    assert (pool.size.source.path, pool.size.source.line) == ("app/values.yaml", 1)
    # max_overflow, written in the helper: its line there (was the data key's line)
    assert pool.note.endswith("max_overflow 2 (app/templates/_helpers.tpl:7)"), pool.note


def _counted_renders(monkeypatch) -> list[dict]:
    from advisor.read.render import helm_trace

    calls: list[dict] = []
    real = helm_trace.ChartRenderer.render

    def render(self, values):
        calls.append(values)
        return real(self, values)

    monkeypatch.setattr(helm_trace.ChartRenderer, "render", render)
    return calls


RANDOM_SECRET = """\
    ---
    apiVersion: v1
    kind: Secret
    metadata:
      name: {{ .Release.Name }}-pw
    stringData:
      password: {{ randAlphaNum 16 | quote }}
      user: {{ .Values.user | quote }}
    """


def test_a_random_text_is_no_sign_of_a_sentinel(tmp_path, monkeypatch):
    # Harbor: genCA, randAlphaNum and htpasswd change on every render, so no tracing
    # render was ever the baseline with its sentinels put back: each number that did
    # not show up was rendered alone (27 renders, 0.5-1 s each, past the 30 s limit).
    _chart(tmp_path, "a: 3\nspare: 2\nuser: app\n",
           (DEPLOYMENT % "{{ .Values.a }}").rstrip(" ") + RANDOM_SECRET)
    calls = _counted_renders(monkeypatch)
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    assert not r.problems, r.problems
    db = by_ref(r.objects, "Deployment/r1-db")
    assert field_source(db, "spec", "replicas").line == 1
    secret = by_ref(r.objects, "Secret/r1-pw")
    assert field_source(secret, "stringData", "user").line == 3
    # the baseline; numbers and strings together; the baseline's values again (what
    # varies from render to render). `spare` (a 2, like the pods' 2 elsewhere) is not
    # rendered alone.
    assert len(calls) == 3, len(calls)
    assert calls[2] == calls[0]
    assert not any("tracing stopped" in n for n in r.notices)


def test_only_templates_that_call_a_varying_function_make_a_chart_vary(tmp_path):
    import io
    import tarfile

    from advisor.read.render.helm_trace import varying_chart

    chart = tmp_path / "app"
    (chart / "templates").mkdir(parents=True)
    (chart / "templates" / "a.yaml").write_text("kind: {{ .Values.now }}\n")
    (chart / "values.yaml").write_text("pw: '{{ randAlphaNum 8 }}'\n")  # data, not called
    assert not varying_chart(chart)
    (chart / "charts").mkdir()
    body = b'{{- define "pw" }}{{ randAlphaNum 8 }}{{ end }}\n'
    with tarfile.open(chart / "charts" / "lib-1.0.0.tgz", "w:gz") as archive:
        info = tarfile.TarInfo("lib/templates/_helpers.tpl")
        info.size = len(body)
        archive.addfile(info, io.BytesIO(body))
    assert varying_chart(chart)
    (chart / "charts" / "lib-1.0.0.tgz").unlink()
    (chart / "templates" / "_helpers.tpl").write_text('{{ genCA "ca" 365 }}\n')
    assert varying_chart(chart)


ENCODED_SECRET = """\
    ---
    apiVersion: v1
    kind: Secret
    metadata:
      name: {{ .Release.Name }}-pw
    data:
      user: {{ .Values.user | b64enc }}
    """


def test_a_sentinel_in_base64_or_a_checksum_is_put_back(tmp_path, monkeypatch):
    # Harbor's Secrets b64enc their values and its Deployments carry a sha256sum of
    # them: a render with sentinels was never the baseline once they were put back.
    deployment = (DEPLOYMENT % "{{ .Values.a }}").replace(
        "  name: {{ .Release.Name }}-db\n", "  name: {{ .Release.Name }}-db\n"
        "      annotations:\n        checksum/secret: {{ include (print $.Template.BasePath"
        " \"/db.yaml\") . | sha256sum }}\n", 1)
    app = _chart(tmp_path, "a: 3\nspare: 2\nuser: app\n", ENCODED_SECRET)
    (app / "templates" / "deploy.yaml").write_text(textwrap.dedent(deployment))
    calls = _counted_renders(monkeypatch)
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    assert not r.problems, r.problems
    db = by_ref(r.objects, "Deployment/r1-db")
    assert field_source(db, "spec", "replicas").line == 1
    secret = by_ref(r.objects, "Secret/r1-pw")
    assert field_source(secret, "data", "user").line == 3
    assert len(calls) == 2, len(calls)  # the baseline; numbers and strings together


CHECKED_JSON = """\
    {{- range $k, $v := .Values.delegation }}
    {{- if hasKey (fromJson $v) "Error" }}{{ fail (printf "delegation.%s is invalid" $k) }}{{ end }}
    {{- end }}
    """


def test_keys_a_template_check_names_are_rendered_alone_not_split_for(tmp_path, monkeypatch):
    # ess-helm's validation.txt fails the render naming the keys whose JSON text a
    # sentinel broke (wellKnownDelegation.additional.client): every group holding one
    # was split down to it, 20 of its 31 renders.
    values = "".join(f"k{i}: v{i}\n" for i in range(16)) + (
        'delegation:\n  client: \'{"a": 1}\'\n  server: \'{"b": 2}\'\n')
    annotations = "".join(f"        k{i}: {{{{ .Values.k{i} | quote }}}}\n" for i in range(16))
    deployment = (DEPLOYMENT % "2").replace(
        "  name: {{ .Release.Name }}-db\n",
        "  name: {{ .Release.Name }}-db\n      annotations:\n" + annotations, 1)
    app = _chart(tmp_path, values, deployment)
    (app / "templates" / "check.txt").write_text(textwrap.dedent(CHECKED_JSON))
    calls = _counted_renders(monkeypatch)
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    assert not r.problems, r.problems
    db = by_ref(r.objects, "Deployment/r1-db")
    assert [field_source(db, "metadata", "annotations", f"k{i}").line
            for i in range(16)] == list(range(1, 17))
    # the baseline; the strings (`fail` names delegation.client), the others (it names
    # delegation.server), the others again; each named key alone (refused again)
    assert len(calls) == 6, [sorted(c) for c in calls]
