"""The server a script's `helm install|upgrade --install` of Bitnami postgresql makes,
built by the stand-in of an unvendored Bitnami dependency (advisor.read.render.
helm_installs): named as the chart names it, its numbers at the values file's lines or
the command's --set / --version, in the command's namespace. Five of ten repositories of
audit 13e install their database so; it was said (PA901) but in no budget."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.read.helm_commands import server_installs
from tests.tree_helpers import write

API = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: api{namespace}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: api}}}}
  template:
    metadata: {{labels: {{app: api}}}}
    spec:
      containers:
        - name: api
          image: ghcr.io/example/api:1
          env:
            - {{name: DATABASE_URL, value: "postgres://u:p@{host}:5432/orders"}}
"""


def api(host: str, namespace: str = "") -> str:
    return API.format(host=host, namespace=f", namespace: {namespace}" if namespace else "")


VALUES = """\
auth:
  database: orders
primary:
  extendedConfiguration: |
    max_connections = 60
  resources:
    limits: {cpu: "2", memory: 2Gi}
"""


def test_values_file_and_set_give_the_servers_name_and_numbers(tmp_path):
    write(tmp_path, {
        "deploy/db.sh": "helm install orders bitnami/postgresql -f db.yaml \\\n"
                        "  --set architecture=replication --version 13.4.4\n",
        "deploy/db.yaml": VALUES,
        "k8s/api.yaml": api("orders-postgresql-primary")})
    r = run_check([tmp_path])
    assert [f for f in r.findings if f.code == "PA901"] == []
    primary = next(b for b in r.budgets if b.server == "orders-postgresql-primary")
    assert primary.unknown_clients == ["api"]
    # max_connections at the values line that sets it; the chart version at the command
    assert (primary.max_connections.value, primary.max_connections.source.path,
            primary.max_connections.source.line) == (60, "deploy/db.yaml", 5)
    assert primary.usable == 57
    assert (primary.version.source.path, primary.version.source.line) == ("deploy/db.sh", 1)
    assert "--version 13.4.4" in primary.version.source.key
    # architecture=replication (--set) makes the read replicas too
    assert {b.server for b in r.budgets} == {"orders-postgresql-primary",
                                             "orders-postgresql-read"}
    assert any("release 'orders' (Bitnami postgresql) is installed by deploy/db.sh:1, not "
               "in the repository's manifests" in n for n in r.notices)


def test_a_host_with_the_commands_namespace_links(tmp_path):
    # the chart's Service in the release's namespace: its cluster DNS name leads there
    write(tmp_path, {
        "deploy/db.sh": "kubectl create ns db\nhelm install orders bitnami/postgresql -n db\n",
        "k8s/api.yaml": api("orders-postgresql.db.svc.cluster.local", "shop")})
    r = run_check([tmp_path])
    (budget,) = r.budgets
    assert (budget.server, budget.unknown_clients) == ("orders-postgresql", ["api"])
    assert not [f for f in r.findings if f.code == "PA107"]


def test_the_namespace_the_script_shares_with_the_repositorys_charts_is_not_applied(
        tmp_path):
    # the script installs its own chart into the same namespace: that chart is rendered
    # in none here, so the server is put in none too and its bare name links
    script = ('NS=${NS:-"shop"}\n'
              'helm upgrade --install orders postgresql --repo https://charts.bitnami.com/'
              'bitnami --namespace "$NS"\n'
              'helm upgrade --install api ../chart --namespace "${NS}"\n')
    (install,) = server_installs(script)
    assert (install.namespace, install.shares_namespace) == ("", True)
    write(tmp_path, {"deploy/db.sh": script, "k8s/api.yaml": api("orders-postgresql")})
    r = run_check([tmp_path])
    (budget,) = r.budgets
    assert budget.unknown_clients == ["api"]


def test_without_version_the_newest_chart_is_a_named_default(tmp_path):
    write(tmp_path, {"deploy/db.sh": "helm install orders bitnami/postgresql\n",
                     "k8s/api.yaml": api("orders-postgresql")})
    r = run_check([tmp_path])
    (budget,) = r.budgets
    assert "no chart version given" in budget.version.source.default
    # the resources the newest chart adds are not known here: said, not a pass
    assert any("the CPU and memory of primary are unknown" in n for n in r.notices)


def test_commands_the_stand_in_does_not_build_stay_said(tmp_path):
    # a release name left to the caller, a chart of another repository
    write(tmp_path, {
        "a/db.sh": 'helm install "$NAME" bitnami/postgresql\n',
        "b/db.sh": "helm repo add acme https://charts.example.org\n"
                   "helm install other acme/postgresql\n",
        "k8s/api.yaml": api("orders-postgresql")})
    r = run_check([tmp_path])
    assert r.budgets == []
    assert sorted(f.location.label() for f in r.findings if f.code == "PA901") == [
        "a/db.sh:1", "b/db.sh:2"]


def test_a_repository_alias_added_for_bitnami_is_bitnami(tmp_path):
    write(tmp_path, {
        "deploy/db.sh": "helm repo add bn https://charts.bitnami.com/bitnami\n"
                        "helm install orders bn/postgresql\n",
        "k8s/api.yaml": api("orders-postgresql")})
    (budget,) = run_check([tmp_path]).budgets
    assert budget.server == "orders-postgresql"


def test_a_values_file_not_in_the_repository_or_an_example_builds_no_server(tmp_path):
    """A values file the repository does not hold (a URL) may set max_connections: no
    number comes from it, so the server is said, not built from the chart's defaults; a
    command in an examples/ folder is applied by hand (zitadel-charts' examples/
    1-postgres-insecure/README.md installed `db` with https values and printed a server)."""
    write(tmp_path, {
        "deploy/db.sh": "helm install orders bitnami/postgresql "
                        "-f https://example.com/values.yaml --version 13.4.4\n",
        "examples/pg/README.md": "    helm install db bitnami/postgresql --version 12.10.0\n",
        "k8s/api.yaml": api("orders-postgresql")})
    r = run_check([tmp_path])
    assert r.budgets == []
    (said,) = [f for f in r.findings if f.code == "PA901" and "orders" in f.message]
    assert "its values https://example.com/values.yaml not in the repository" in said.message
    assert any("(an example" in f.message for f in r.findings if f.code == "PA901")
