"""`helm install` / `helm upgrade --install` of a PostgreSQL server's chart from a chart
repository, in a script or README (audit 13e D3: 5 of 10 sampled repositories install
their database so). The server is not rendered, so it is said: a PA901 warning naming the
Service its clients reach, never "no findings (no PostgreSQL server found)", exit 0
(mattfenwick/scaling's dev/deploy.sh)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.read.helm_commands import server_installs, service_name
from advisor.report.text import summary
from tests.tree_helpers import write

SCRIPT = """\
#!/usr/bin/env bash
set -euo pipefail
DB_RELEASE=${DB_RELEASE:-"shop-db"}
# helm install old bitnami/postgresql
helm upgrade "${DB_RELEASE}" postgresql \\
    --install \\
    --repo https://charts.bitnami.com/bitnami \\
    --version 11.6.2 \\
    --namespace "$NS" \\
    -f db-values.yaml
helm upgrade --install shop ../charts/shop --values shop-values.yaml
"""

README = """\
Run every command in deploy/:

```shell
helm install pg bitnami/postgresql -f postgres/values.yaml
kubectl apply -f jobs
```
"""

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          image: ghcr.io/example/api:1
          env:
            - {name: DATABASE_URL, value: "postgres://u:p@orders-db:5432/orders"}
"""


def test_the_commands_that_install_a_postgresql_chart_are_read():
    (install,) = server_installs(SCRIPT)
    # the script's own default for the release variable; the commented-out command and
    # the application's local chart are not taken
    assert (install.release, install.chart, install.line) == ("shop-db", "postgresql", 5)
    assert install.values == ("db-values.yaml",)
    assert service_name(install, {}) == "shop-db-postgresql"
    assert service_name(install, {"fullnameOverride": "orders-db"}) == "orders-db"
    (replicated,) = server_installs(
        "helm install postgres bitnami/postgresql --set architecture=replication -n db\n")
    assert service_name(replicated, {}) == "postgres-postgresql-primary"
    (ha,) = server_installs("helm install pg oci://registry-1.docker.io/bitnamicharts/"
                            "postgresql-ha\n")
    assert service_name(ha, {}) == "pg-postgresql-ha-pgpool"
    assert server_installs("helm install db ./postgresql -n x\n") == []
    assert server_installs("helm install web bitnami/nginx\n") == []


def test_a_script_installed_server_is_budgeted_not_no_server_found(tmp_path):
    # Bitnami's chart (--repo), built from its values (helm_installs): no PA901, no
    # "no server budgeted"; the README's copy of the script's command is the same server
    write(tmp_path, {"dev/deploy.sh": SCRIPT, "dev/db-values.yaml": "auth:\n  database: x\n",
                     "k8s/api.yaml": APP,
                     "dev/README.md": "Deploy: `helm upgrade shop-db postgresql --install`\n"})
    r = run_check([tmp_path])
    assert [f for f in r.findings if f.code == "PA901"] == []
    (budget,) = r.budgets
    assert budget.server == "shop-db-postgresql"
    assert "no server budgeted" not in summary(r)


def test_a_chart_the_stand_in_does_not_build_is_a_pa901_warning(tmp_path):
    # postgresql-ha is not modelled: said, never "no PostgreSQL server found"
    write(tmp_path, {"dev/deploy.sh": "helm install shop-db bitnami/postgresql-ha\n",
                     "k8s/api.yaml": APP})
    r = run_check([tmp_path])
    (pa901,) = [f for f in r.findings if f.code == "PA901"]
    assert "release shop-db (dev/deploy.sh:1)" in pa901.message
    assert 'hosts = ["shop-db-postgresql-ha-pgpool"]' in pa901.message
    assert "no server budgeted: 1 PostgreSQL server found in helm install commands" in \
        summary(r)


def test_a_readme_command_run_in_a_subfolder_finds_its_values_file(tmp_path):
    # `-f postgres/values.yaml` from deploy/, the README at the root: the repository's
    # one file of that path gives fullnameOverride, the Service the clients name
    write(tmp_path, {"README.md": README,
                     "deploy/postgres/values.yaml": "fullnameOverride: orders-db\n",
                     "deploy/app.yaml": APP})
    r = run_check([tmp_path])
    (budget,) = r.budgets
    assert budget.server == "orders-db"
    assert budget.unknown_clients == ["api"]


HELMFILE = """\
repositories:
  - name: charts
    url: https://charts.bitnami.com/bitnami
{{- if eq .Environment.Name "prod" }}
context: prod
{{ end }}
environments:
  dev:
releases:
  - name: shop-api-{{ .Environment.Name }}
    chart: ../charts/api
  - name: {NAME}
    chart: charts/postgresql
    namespace: shop
    values:
      - db-values.yaml
"""


def test_a_helmfile_release_of_a_postgresql_chart_is_said_never_no_server_found(tmp_path):
    """Audit 25 D3 (DTS-STN/BenefitsFinderBackend helmfile/helmfile.yaml: a bitnami/
    postgresql release under a templated name): helmfile was not read, and the check said
    "no PostgreSQL server found", exit 0."""
    write(tmp_path, {"deploy/helmfile.yaml":
                     HELMFILE.replace("{NAME}", "shop-db-{{ .Environment.Name }}"),
                     "deploy/db-values.yaml": "auth:\n  database: x\n", "k8s/api.yaml": APP})
    r = run_check([tmp_path])
    (pa901,) = [f for f in r.findings if f.code == "PA901"]
    assert pa901.location.path == "deploy/helmfile.yaml" and pa901.location.line == 12
    assert "helmfile release shop-db-{{ .Environment.Name }} of chart charts/postgresql" \
        in pa901.message
    assert "found in helmfile releases" in summary(r)


def test_a_helmfile_release_of_bitnami_postgresql_is_budgeted(tmp_path):
    # its repositories: alias resolves to Bitnami's URL: the stand-in builds the server
    write(tmp_path, {"deploy/helmfile.yaml": HELMFILE.replace("{NAME}", "shop-db"),
                     "deploy/db-values.yaml": "auth:\n  database: x\n", "k8s/api.yaml": APP})
    r = run_check([tmp_path])
    assert [f for f in r.findings if f.code == "PA901"] == []
    (budget,) = r.budgets
    assert budget.server == "shop-db-postgresql"


def test_a_helmfile_is_read_by_its_entries_not_their_nested_keys():
    # wireapp/wire-server hack/helmfile.yaml.gotmpl: values files then an inline mapping
    # (not a file: the server is not built without it), a templated namespace (unknown)
    from advisor.read.helm_commands import helmfile_server_installs

    text = ("repositories:\n  - name: bitnami\n    url: registry-1.docker.io/bitnamicharts\n"
            "releases:\n  - name: \"postgresql\"\n    namespace: \"{{ .Values.ns }}\"\n"
            "    chart: \"bitnami/postgresql\"\n    values:\n      - './v/bitnami.yaml'\n"
            "      - primary:\n          initdb:\n            scripts:\n"
            "              init.sql: |\n                CREATE DATABASE x;\n"
            "    set:\n      - name: chart\n        value: other/thing\n"
            "    version: 16.0.0\n  - name: cache\n    chart: bitnami/redis\n")
    (found,) = helmfile_server_installs(text)
    assert (found.release, found.chart, found.namespace, found.version, found.line) == \
        ("postgresql", "bitnami/postgresql", "", "16.0.0", 5)
    assert found.values == ("./v/bitnami.yaml", "(inline values, line 10)")
    assert "bitnami" in found.repo
