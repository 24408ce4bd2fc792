"""A postgresql.conf a parent chart passes to a vendored subchart in the Bitnami postgresql
chart's shape (goauthentik/helm's values for bitnami/postgresql; audit s22 D7, D8): its
lines cite the parent's values file through `tpl` and `|-` + `nindent`, also for a block
of one line, and an include_dir naming the directory the StatefulSet mounts the extended
ConfigMap at reads that ConfigMap instead of warning that conf.d is unknown."""

from __future__ import annotations

import pytest

pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")

SUB_CHART = "apiVersion: v2\nname: postgresql\nversion: 18.0.0\n"
SUB_VALUES = """\
image:
  registry: docker.io
  repository: bitnami/postgresql
  tag: 17.2.0
primary:
  args: []
  configuration: ""
  extendedConfiguration: ""
  persistence:
    mountPath: /bitnami/postgresql
"""
SUB_HELPERS = """\
{{- define "pg.fullname" -}}{{ .Release.Name }}-postgresql{{- end -}}
{{- define "pg.render" -}}
{{- if typeIs "string" .value }}{{ tpl .value .context }}
{{- else }}{{ tpl (.value | toYaml) .context }}{{ end }}
{{- end -}}
"""
SUB_CONFIGMAP = """\
{{- if .Values.primary.configuration }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "pg.fullname" . }}-configuration
data:
  postgresql.conf: |
    {{- include "pg.render" (dict "value" .Values.primary.configuration "context" $) | nindent 4 }}
{{- end }}
"""
SUB_EXTENDED = """\
{{- if .Values.primary.extendedConfiguration }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "pg.fullname" . }}-extended-configuration
data:
  override.conf: |-
    {{- $value := .Values.primary.extendedConfiguration }}
    {{- include "pg.render" (dict "value" $value "context" $) | nindent 4 }}
{{- end }}
"""
SUB_STATEFULSET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ include "pg.fullname" . }}
  labels:
    app.kubernetes.io/name: postgresql
    app.kubernetes.io/instance: {{ .Release.Name }}
    app.kubernetes.io/component: primary
spec:
  replicas: 1
  serviceName: {{ include "pg.fullname" . }}-hl
  template:
    spec:
      containers:
        - name: postgresql
          image: {{ .Values.image.registry }}/{{ .Values.image.repository }}:{{ .Values.image.tag }}
          {{- if .Values.primary.args }}
          {{- $args := .Values.primary.args }}
          args: {{- include "pg.render" (dict "value" $args "context" $) | nindent 12 }}
          {{- end }}
          env:
            - name: POSTGRESQL_VOLUME_DIR
              value: {{ .Values.primary.persistence.mountPath | quote }}
          volumeMounts:
            {{- if .Values.primary.extendedConfiguration }}
            - name: postgresql-extended-config
              mountPath: {{ .Values.primary.persistence.mountPath }}/conf/conf.d/
            {{- end }}
            {{- if .Values.primary.configuration }}
            - name: postgresql-config
              mountPath: {{ .Values.primary.persistence.mountPath }}/conf
            {{- end }}
      volumes:
        {{- if .Values.primary.configuration }}
        - name: postgresql-config
          configMap:
            name: {{ include "pg.fullname" . }}-configuration
        {{- end }}
        {{- if .Values.primary.extendedConfiguration }}
        - name: postgresql-extended-config
          configMap:
            name: {{ include "pg.fullname" . }}-extended-configuration
        {{- end }}
"""
PARENT_CHART = """\
apiVersion: v2
name: idp
version: 1.0.0
dependencies:
  - name: postgresql
    version: 18.0.0
    repository: oci://registry-1.docker.io/bitnamicharts
"""
# library/postgres started on the mounted file, as goauthentik/helm values.yaml does.
PARENT_VALUES = """\
replicas: 1
postgresql:
  image:
    repository: library/postgres
    tag: "17.2-bookworm"
  primary:
    args:
      - -c
      - config_file=/bitnami/postgresql/conf/postgresql.conf
    configuration: |
      listen_addresses = '*'
      max_connections = 120
      include_dir = 'conf.d'
    extendedConfiguration: |
      max_connections = 500
"""


def _charts(tmp_path, values: str):
    parent = tmp_path / "idp"
    sub = parent / "charts" / "postgresql"
    (sub / "templates").mkdir(parents=True)
    (parent / "templates").mkdir()
    (parent / "Chart.yaml").write_text(PARENT_CHART)
    (parent / "values.yaml").write_text(values)
    (sub / "Chart.yaml").write_text(SUB_CHART)
    (sub / "values.yaml").write_text(SUB_VALUES)
    (sub / "templates" / "_helpers.tpl").write_text(SUB_HELPERS)
    (sub / "templates" / "configmap.yaml").write_text(SUB_CONFIGMAP)
    (sub / "templates" / "extended-configmap.yaml").write_text(SUB_EXTENDED)
    (sub / "templates" / "statefulset.yaml").write_text(SUB_STATEFULSET)
    return parent


def _scan(tmp_path):
    from advisor.engine.check import scan
    from advisor.engine.options import CheckOptions

    result = scan([str(tmp_path)], CheckOptions(cache=False))
    (server,) = result.topology.servers
    return server, result.topology.problems


def _line(values: str, text: str) -> int:
    return values.splitlines().index(text) + 1


def test_a_one_line_block_through_tpl_cites_the_parent_values(tmp_path):
    _charts(tmp_path, PARENT_VALUES)
    server, problems = _scan(tmp_path)
    mc = server.settings["max_connections"]
    # override.conf, read where postgresql.conf's include_dir 'conf.d' names it
    assert mc.value == 500
    assert (mc.source.path, mc.source.line) == (
        "idp/values.yaml", _line(PARENT_VALUES, "      max_connections = 500"))
    assert [p.message for p in problems if "conf.d" in p.message] == []


def test_a_two_line_block_cites_each_line(tmp_path):
    values = PARENT_VALUES.replace("      max_connections = 500\n",
                                   "      max_connections = 500\n      work_mem = 8MB\n")
    _charts(tmp_path, values)
    server, _ = _scan(tmp_path)
    wm = server.settings["work_mem"]
    assert (wm.source.path, wm.source.line) == (
        "idp/values.yaml", _line(values, "      work_mem = 8MB"))


def test_a_subchart_default_of_one_line_cites_the_subchart_values(tmp_path):
    values = PARENT_VALUES.replace("    extendedConfiguration: |\n      max_connections = 500\n",
                                   "")
    parent = _charts(tmp_path, values)
    sub_values = SUB_VALUES.replace('  extendedConfiguration: ""\n',
                                    "  extendedConfiguration: |\n    max_connections = 240\n")
    (parent / "charts" / "postgresql" / "values.yaml").write_text(sub_values)
    server, _ = _scan(tmp_path)
    mc = server.settings["max_connections"]
    assert (mc.value, mc.source.path, mc.source.line) == (
        240, "idp/charts/postgresql/values.yaml", _line(sub_values, "    max_connections = 240"))


def test_without_include_dir_the_mounted_conf_d_is_not_read_and_said(tmp_path):
    values = PARENT_VALUES.replace("      include_dir = 'conf.d'\n", "")
    _charts(tmp_path, values)
    server, problems = _scan(tmp_path)
    mc = server.settings["max_connections"]
    assert (mc.value, mc.source.path, mc.source.line) == (
        120, "idp/values.yaml", _line(values, "      max_connections = 120"))
    [unread] = [p for p in problems if "is not read" in p.message]
    assert (unread.location.path, unread.location.line) == (
        "idp/values.yaml", _line(values, "      listen_addresses = '*'"))
    assert unread.message == (
        "ConfigMap release-postgresql-extended-configuration mounted at "
        "/bitnami/postgresql/conf/conf.d is not read, so its settings do not apply: "
        "/bitnami/postgresql/conf/postgresql.conf names no include_dir 'conf.d', and the "
        "server starts with /bitnami/postgresql/conf/postgresql.conf (config_file); add "
        "`include_dir = 'conf.d'` to it to apply them")


def test_the_bitnami_image_reads_conf_d_after_its_own_settings(tmp_path):
    """No postgresql.conf mounted: the image's own includes conf.d last, so override.conf
    wins over POSTGRESQL_MAX_CONNECTIONS (written in place above the include_dir)."""
    values = ("postgresql:\n  primary:\n    extendedConfiguration: |\n"
              "      max_connections = 500\n")
    parent = _charts(tmp_path, values)
    sts = parent / "charts" / "postgresql" / "templates" / "statefulset.yaml"
    sts.write_text(SUB_STATEFULSET.replace(
        "          env:\n",
        "          env:\n            - name: POSTGRESQL_MAX_CONNECTIONS\n"
        "              value: \"300\"\n"))
    server, problems = _scan(tmp_path)
    mc = server.settings["max_connections"]
    assert (mc.value, mc.source.path, mc.source.line) == (500, "idp/values.yaml", 4)
    assert [p.message for p in problems if "conf.d" in p.message] == []
