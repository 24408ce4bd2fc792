"""A PgBouncer configured by environment whose upstream comes from a Secret the
repository holds (rendered from the chart's own template) pools into the server that
Secret names: the server's budget counts it, and no output shows the Secret's value.
Audit 54 (audit 51's reader gap), PostHog/charts-clickhouse a1b6749b (2021): the
chart's templates/secrets.yaml holds `postgresql-url: {{ include "posthog.postgresql.url"
. | b64enc }}` and its edoburu/pgbouncer Deployment takes DATABASE_URL from that key;
the server said "cannot tell" (the PgBouncer's upstream unread). In that chart's shape."""

import json
import subprocess
import sys
from pathlib import Path

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions

PASSWORD = "Zq8sw0rdNotPrinted"

CHART = "apiVersion: v2\nname: posthog\nversion: 1.0.0\n"

VALUES = f"""\
postgresql:
  postgresqlUsername: posthog
  postgresqlPassword: {PASSWORD}
  postgresqlDatabase: posthog
pgbouncer:
  replicacount: 1
web:
  replicacount: 2
"""

HELPERS = """\
{{- define "posthog.fullname" -}}{{ .Release.Name }}-posthog{{- end -}}
{{- define "posthog.postgresql.host" -}}{{ template "posthog.fullname" . }}-postgresql{{- end -}}
{{- define "posthog.postgresql.url" -}}
    postgres://{{- .Values.postgresql.postgresqlUsername -}}:
{{- .Values.postgresql.postgresqlPassword -}}@
{{- template "posthog.postgresql.host" . -}}:5432/
{{- .Values.postgresql.postgresqlDatabase }}
{{- end -}}
"""

SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: {{ template "posthog.fullname" . }}
type: Opaque
data:
  postgresql-url: {{ include "posthog.postgresql.url" . | b64enc -}}
"""

SECRET_STRING_DATA = """\
apiVersion: v1
kind: Secret
metadata:
  name: {{ template "posthog.fullname" . }}
type: Opaque
stringData:
  postgresql-url: {{ include "posthog.postgresql.url" . | quote }}
"""

SERVER = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ template "posthog.postgresql.host" . }}
spec:
  replicas: 1
  serviceName: {{ template "posthog.postgresql.host" . }}
  selector:
    matchLabels: {app: postgresql}
  template:
    metadata:
      labels: {app: postgresql}
    spec:
      containers:
        - name: postgresql
          image: postgres:16
          args: ["-c", "max_connections=100"]
---
apiVersion: v1
kind: Service
metadata:
  name: {{ template "posthog.postgresql.host" . }}
spec:
  selector: {app: postgresql}
  ports: [{port: 5432}]
"""

PGBOUNCER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ template "posthog.fullname" . }}-pgbouncer
spec:
  replicas: {{ .Values.pgbouncer.replicacount }}
  selector:
    matchLabels: {role: pgbouncer}
  template:
    metadata:
      labels: {role: pgbouncer}
    spec:
      containers:
      - name: {{ .Chart.Name }}-pgbouncer
        image: "edoburu/pgbouncer:1.12.0"
        env:
        - name: DATABASE_URL
          valueFrom:
            secretKeyRef:
              name: {{ template "posthog.fullname" . }}
              key: postgresql-url
        - name: LISTEN_PORT
          value: "6543"
        - name: POOL_MODE
          value: "transaction"
---
apiVersion: v1
kind: Service
metadata:
  name: {{ template "posthog.fullname" . }}-pgbouncer
spec:
  selector: {role: pgbouncer}
  ports: [{port: 6543}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ template "posthog.fullname" . }}-web
spec:
  replicas: {{ .Values.web.replicacount }}
  selector:
    matchLabels: {role: web}
  template:
    metadata:
      labels: {role: web}
    spec:
      containers:
        - name: web
          image: eclipse-temurin:21
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://{{ .Release.Name }}-posthog-pgbouncer:6543/posthog
"""


def _chart(tmp_path: Path, secret: str = SECRET) -> Path:
    chart = tmp_path / "charts/posthog"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(CHART)
    (chart / "values.yaml").write_text(VALUES)
    (chart / "templates/_helpers.tpl").write_text(HELPERS)
    (chart / "templates/secrets.yaml").write_text(secret)
    (chart / "templates/postgresql.yaml").write_text(SERVER)
    (chart / "templates/pgbouncer-deployment.yaml").write_text(PGBOUNCER)
    return chart


def _budget(tmp_path: Path, secret: str = SECRET):
    chart = _chart(tmp_path, secret)
    result = run_check([str(chart)], CheckOptions(root=tmp_path, cache=False))
    (budget,) = result.budgets
    return budget


def test_a_pgbouncer_url_from_a_held_secret_links_the_server(tmp_path):
    budget = _budget(tmp_path)
    # edoburu 1.12: default_pool_size 20 for its one [databases] entry; (1 + 1 surge) pods
    assert not budget.unplaced_clients, budget.unplaced_clients
    assert not budget.peak_is_floor and budget.fits
    assert budget.peak == 40, budget.peak


def test_a_pgbouncer_url_from_held_string_data_links_the_server(tmp_path):
    budget = _budget(tmp_path, SECRET_STRING_DATA)
    assert not budget.unplaced_clients and budget.peak == 40 and budget.fits


def test_no_output_shows_the_secret_url_or_its_password(tmp_path):
    _chart(tmp_path)
    outs = []
    for fmt in ("text", "json", "markdown", "sarif"):
        run = subprocess.run([sys.executable, "-m", "advisor", "check", "--no-cache", "-v",
                              "--root", str(tmp_path), "--format", fmt, "charts/posthog"],
                             cwd=tmp_path, capture_output=True, text=True, check=False)
        assert run.returncode in (0, 1), run.stderr
        outs.append(run.stdout + run.stderr)
    said = "\n".join(outs)
    assert "release-posthog-postgresql" in said
    assert PASSWORD not in said
    assert "postgres://posthog" not in said  # the URL itself (rule help names postgres://)
    assert json.loads(outs[1])


BITNAMI = PGBOUNCER.replace('"edoburu/pgbouncer:1.12.0"', '"bitnami/pgbouncer:1.21.0"').replace(
    """        - name: DATABASE_URL
          valueFrom:
            secretKeyRef:
              name: {{ template "posthog.fullname" . }}
              key: postgresql-url
        - name: LISTEN_PORT
          value: "6543"
        - name: POOL_MODE
          value: "transaction"
""", """        - name: POSTGRESQL_HOST
          valueFrom:
            secretKeyRef:
              name: {{ template "posthog.fullname" . }}
              key: postgresql-host
        - name: PGBOUNCER_DATABASE
          value: posthog
        - name: PGBOUNCER_PORT
          value: "6543"
""")


def test_a_bitnami_pgbouncer_host_from_a_held_secret_links_the_server(tmp_path):
    # without it the image's default host `postgresql` was read: no server of the chart
    assert "POSTGRESQL_HOST" in BITNAMI
    chart = _chart(tmp_path, SECRET_STRING_DATA + '  postgresql-host: '
                   '{{ include "posthog.postgresql.host" . | quote }}\n')
    (chart / "templates/pgbouncer-deployment.yaml").write_text(BITNAMI)
    result = run_check([str(chart)], CheckOptions(root=tmp_path, cache=False))
    (budget,) = result.budgets
    assert not budget.unplaced_clients and budget.peak == 40 and budget.fits, budget


def test_a_password_with_a_slash_does_not_move_the_host(tmp_path):
    # edoburu's entrypoint.sh takes the user:password up to the LAST `@` and the host up to
    # the first `/` after it (`sed -r 's/^(.*)@([^@]*)$/\1/'`, `cut -d/ -f1`); a URL parser
    # ends the authority at the password's `/` and read host `posthog`: the PgBouncer's 40
    # connections left this budget, which said "fits, peak 0"
    chart = _chart(tmp_path)
    (chart / "values.yaml").write_text(VALUES.replace(PASSWORD, f"'{PASSWORD}/x#y'"))
    result = run_check([str(chart)], CheckOptions(root=tmp_path, cache=False))
    (budget,) = result.budgets
    assert not budget.unplaced_clients and budget.peak == 40 and budget.fits, budget


def test_a_bitnami_host_from_a_secret_not_held_is_unknown_not_the_default():
    """POSTGRESQL_HOST set from a Secret the repository does not hold leads where it is not
    known (no host: every server's peak a floor), never to the image's default host
    `postgresql`, which a Service of that name would have taken."""
    from advisor.model import EnvVar, Location, Source
    from advisor.read.sources.operators.containers import bitnami_pgbouncer_databases

    src = Source(path="k8s/pgbouncer.yaml", line=9)
    at = Location(path="k8s/pgbouncer.yaml", line=1)
    unheld = EnvVar(name="POSTGRESQL_HOST", source=src, from_ref="secret:db/host",
                    secret=True)
    (entry,) = bitnami_pgbouncer_databases((unheld,), at)
    assert entry.host is None
    held = EnvVar(name="POSTGRESQL_HOST", value="pg-main", source=src,
                  from_ref="secret:db/host", secret=True)
    assert bitnami_pgbouncer_databases((held,), at)[0].host == "pg-main"
    assert bitnami_pgbouncer_databases((), at)[0].host == "postgresql"  # the image's default
