"""advisor.read.releases, advisor.read.flux and advisor.link.releases on small objects:
which releases are not rendered, the env forms charts take, and the routes that count."""

from __future__ import annotations

import base64

import pytest

from advisor.link.releases import release_client
from advisor.read.flux import apply_target_namespaces, namespace_of, target_namespaces
from advisor.read.releases import env_scopes, find_releases, repo_folder, value_hosts
from advisor.read.sources.k8s import k8s_objects
from advisor.read.workloads import configmap_index

HOSTS = {"pg-rw.db.svc": ("server", "s1"), "pg-rw.db": ("server", "s1"),
         "pg-rw.db.svc.cluster.local": ("server", "s1")}


def objects(text: str):
    found, problems = k8s_objects(text, "r.yaml")
    assert not problems
    return found


def never(_path: str) -> bool:
    return False


def test_repo_folder_strips_the_roots_own_folders_from_a_git_top_path():
    exists = {"apps/x/app", "kubernetes/main/apps/y"}.__contains__
    root = ("home", "repo", "kubernetes", "main")
    assert repo_folder("./kubernetes/main/apps/x/app", root, exists) == "apps/x/app"
    assert repo_folder("kubernetes/main/apps/y", root, exists) == "kubernetes/main/apps/y"
    assert repo_folder("./apps/x/app/", root, exists) == "apps/x/app"
    assert repo_folder("./other/apps/x/app", root, exists) is None  # no suffix guessing
    assert repo_folder("../apps/x/app", root, lambda _p: True) is None


RELEASES = """
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: a, namespace: n1}
spec:
  chart: {spec: {chart: app-template, sourceRef: {kind: HelmRepository, name: bjw}}}
  values: {x: 1}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: b}
spec:
  targetNamespace: n2
  releaseName: b-release
  chartRef: {kind: OCIRepository, name: b-chart}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: in-repo}
spec:
  chart: {spec: {chart: ./charts/mine, sourceRef: {kind: GitRepository, name: self}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: elsewhere}
spec:
  chart: {spec: {chart: ./charts/theirs, sourceRef: {kind: GitRepository, name: other}}}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: argo, namespace: argocd}
spec:
  destination: {namespace: n3}
  sources:
    - {repoURL: https://charts.example.org, chart: one, helm: {valuesObject: {a: 1}}}
    - {repoURL: https://git.example.org/x.git, path: manifests}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmReleaseList
metadata: {name: not-a-release}
"""


def test_which_releases_are_not_rendered():
    found = find_releases(objects(RELEASES), lambda path: path == "./charts/mine")
    assert [(r.kind, r.name, r.namespace, r.chart, r.origin, r.git_path_missing)
            for r in found] == [
        ("HelmRelease", "a", "n1", "app-template", "HelmRepository bjw", False),
        ("HelmRelease", "b-release", "n2", "b-chart", "OCIRepository b-chart", False),
        ("HelmRelease", "elsewhere", None, "./charts/theirs", "GitRepository other", True),
        ("Application", "argo", "n3", "one", "Helm repository https://charts.example.org",
         False)]
    assert [len(r.values) for r in found] == [1, 0, 0, 1]


VALUES = """
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: app, namespace: apps}
spec:
  chartRef: {kind: OCIRepository, name: c}
  values:
    controllers:
      main:
        containers:
          app:
            env:
              PLAIN: "1"
              FROM_SECRET:
                valueFrom:
                  secretKeyRef: {name: s1, key: url}
              SHORT:
                secretKeyRef: {name: s1, key: url}
              MISSING:
                valueFrom:
                  secretKeyRef: {name: nowhere, key: k}
            envFrom:
              - secret: s1
              - configMapRef: {name: cm1}
                prefix: P_
    extraEnvVars:
      - {name: LISTED, value: two}
    extraEnvVarsSecret: s1
    upgrade:
      host: pg-rw.db.svc
    externalDatabase:
      host: pg-rw.db.svc
      port: 5432
---
apiVersion: v1
kind: Secret
metadata: {name: s1, namespace: apps}
data:
  url: URL_B64
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm1, namespace: apps}
data: {K: v}
""".replace("URL_B64", base64.b64encode(b"postgres://u@pg-rw.db.svc/app").decode())


def test_env_forms_of_the_charts():
    objs = objects(VALUES)
    index = configmap_index(objs)
    (release,) = find_releases(objs, never)
    scopes = env_scopes(release.values[0], index, "apps")
    by_scope = [{e.name: (e.value, e.from_ref) for e in env} for env in scopes]
    top, container = by_scope  # breadth first: the values' top level, then the container
    assert top == {"url": ("postgres://u@pg-rw.db.svc/app", "secret:s1/url"),
                   "LISTED": ("two", None)}
    assert container == {
        "url": ("postgres://u@pg-rw.db.svc/app", "secret:s1/url"),
        "P_K": ("v", "configmap:cm1/K"),
        "PLAIN": ("1", None),
        "FROM_SECRET": ("postgres://u@pg-rw.db.svc/app", "secret:s1/url"),
        "SHORT": ("postgres://u@pg-rw.db.svc/app", "secret:s1/url"),
        "MISSING": (None, "secret:nowhere/k (not in repository)")}
    plain = next(e for e in scopes[1] if e.name == "PLAIN")
    assert (plain.source.path, plain.source.line) == ("r.yaml", 13)


def test_a_secret_of_another_namespace_is_not_read():
    objs = objects(VALUES)
    index = configmap_index(objs)
    (release,) = find_releases(objs, never)
    scopes = env_scopes(release.values[0], index, "elsewhere")
    assert all(e.value is None for env in scopes for e in env if e.from_ref
               and e.from_ref.startswith("secret:"))


def test_database_hosts_in_values_only_under_a_database_key():
    (release,) = find_releases(objects(VALUES), never)
    found = [(kind, text, src.key) for kind, text, src, _node in value_hosts(release.values[0])]
    # `upgrade.host` is no database key (no `pg` word in it); externalDatabase.host is
    assert found == [("host", "pg-rw.db.svc", "externalDatabase.host")]


ARGO_TEXT = """
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: wiki, namespace: argocd}
spec:
  destination: {namespace: docs}
  source:
    repoURL: https://charts.example.org
    chart: wiki
    helm:
      values: |
        replicaCount: 2
        env:
          - name: DB_HOST
            value: pg-rw.db.svc
          - name: DB_NAME
            value: wiki
"""


def test_argo_values_text_is_read_at_its_lines_and_links():
    (release,) = find_releases(objects(ARGO_TEXT), never)
    client = release_client(release, {}, {}, HOSTS, "default", None, None)
    assert client is not None and (client.target_kind, client.target_id) == ("server", "s1")
    assert client.route.host == "pg-rw.db.svc" and client.route.dbname == "wiki"
    assert (client.route.source.path, client.route.source.line) == ("r.yaml", 15)
    assert client.kind == "Application" and client.namespace == "docs"
    assert client.replicas_unknown and client.unknown.startswith(
        "connections per pod and replicas unknown: Application wiki (chart wiki")


APP_HOST = """
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: tracker, namespace: apps}
spec:
  chartRef: {kind: OCIRepository, name: c}
  values:
    env:
      TRACKER__POSTGRES_HOST: HOST_VALUE
      TRACKER__POSTGRES_PORT: "6432"
      TRACKER__POSTGRES_USER: tracker
"""


def test_an_applications_own_host_variable_counts_only_when_it_links_or_says_postgres():
    """TRACKER__POSTGRES_HOST names a PostgreSQL host: one that is no server of the
    repository is a server the repository lacks (a client linked nowhere, PA107); a
    DB_HOST-style name counts only when its host links (it may name MySQL)."""
    (linked,) = find_releases(objects(APP_HOST.replace("HOST_VALUE", "pg-rw.db.svc")), never)
    client = release_client(linked, {}, {}, HOSTS, "default", None, None)
    assert client is not None and client.target_id == "s1"
    assert (client.route.port, client.route.user) == (6432, "tracker")
    (elsewhere,) = find_releases(objects(APP_HOST.replace("HOST_VALUE", "cache.apps.svc")), never)
    client = release_client(elsewhere, {}, {}, HOSTS, "default", None, None)
    assert client is not None and client.target_id is None
    assert client.route.host == "cache.apps.svc"
    generic = APP_HOST.replace("TRACKER__POSTGRES_", "TRACKER__DB_")
    (elsewhere,) = find_releases(objects(generic.replace("HOST_VALUE", "cache.apps.svc")), never)
    assert release_client(elsewhere, {}, {}, HOSTS, "default", None, None) is None


HOSTS_WITH_POOLER = {**HOSTS, "pg-bouncer.db.svc": ("pooler", "p1")}

TEMPLATED_SECRET = """
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: linkding, namespace: apps}
spec:
  chartRef: {kind: OCIRepository, name: app-template}
  values:
    controllers:
      main:
        containers:
          app:
            envFrom:
              - secretRef:
                  name: "{{ .Release.Name }}-secret"
---
apiVersion: v1
kind: Secret
metadata: {name: linkding-secret, namespace: apps}
stringData:
  INIT_POSTGRES_HOST: pg-rw.db.svc
  INIT_POSTGRES_DBNAME: linkding
  LD_DB_HOST: pg-bouncer.db.svc
  LD_DB_PORT: "5432"
  LD_DB_USER: linkding
"""


def test_a_secret_named_by_the_release_template_is_read_and_the_apps_host_wins():
    """app-template passes names through `tpl`: `{{ .Release.Name }}-secret` is
    linkding-secret (drag0n141/home-ops: five releases were dropped without a word). Of
    its host variables the application's (LD_DB_HOST, to the pooler) wins over
    onedr0p's postgres-init one (INIT_POSTGRES_HOST, straight to the server), which
    `kubectl kustomize` sorts first."""
    found = objects(TEMPLATED_SECRET)
    (release,) = find_releases(found, never)
    index = configmap_index(found)
    client = release_client(release, index, {}, HOSTS_WITH_POOLER, "default", None, None)
    assert client is not None and (client.target_kind, client.target_id) == ("pooler", "p1")
    assert (client.route.host, client.route.user) == ("pg-bouncer.db.svc", "linkding")
    assert client.route.source.key == "LD_DB_HOST"



TEMPLATED_HOST = """
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: prowlarr, namespace: apps}
spec:
  chartRef: {kind: OCIRepository, name: app-template}
  values:
    controllers:
      main:
        containers:
          app:
            env:
              PROWLARR__POSTGRES__HOST: "{{ .Release.Name }}-rw.db.svc"
              PROWLARR__POSTGRES__PORT: "5432"
              PROWLARR__POSTGRES__USER: "{{ .Release.Name }}"
"""


def test_an_env_value_templated_with_the_release_name_is_read():
    """app-template passes env values through `tpl`: `{{ .Release.Name }}-rw.db.svc` is
    prowlarr-rw.db.svc (joryirving/home-ops: each app's own Cluster printed 'peak 0
    fits' while its release connected to it)."""
    (release,) = find_releases(objects(TEMPLATED_HOST), never)
    client = release_client(release, {}, {}, {"prowlarr-rw.db.svc": ("server", "s9")},
                            "default", None, None)
    assert client is not None and (client.target_kind, client.target_id) == ("server", "s9")
    assert (client.route.host, client.route.user) == ("prowlarr-rw.db.svc", "prowlarr")

FLUX = """
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: a, namespace: flux-system}
spec: {targetNamespace: ns-a, path: ./kubernetes/apps/a}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: a2, namespace: flux-system}
spec: {targetNamespace: ns-other, path: ./kubernetes/apps/a}
---
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
metadata: {name: plain-kustomize}
"""


def test_flux_target_namespace_on_what_it_builds():
    """A folder a second Kustomization builds into another namespace is a build of its
    own, an instance (advisor.read.flux.builders), no longer read in the first's only."""
    folders = target_namespaces(
        objects(FLUX), lambda p: repo_folder(p, ("repo", "kubernetes"), {"apps/a"}.__contains__))
    assert folders == {"apps/a": "ns-a",
                       "apps/a (as Kustomization/flux-system/a2)": "ns-other"}
    assert namespace_of("apps/a/app", folders) == "ns-a"
    assert namespace_of("apps/ab", folders) is None
    built = objects("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n---\n"
                    "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns-a}\n")
    leaves, plain = apply_target_namespaces([("apps/a/app", built)], built, folders)
    assert [o.namespace for o in leaves[0][1]] == ["ns-a", None]  # a Namespace has none
    assert [o.namespace for o in plain] == [None, None]  # r.yaml is in no built folder


def test_a_chart_value_host_with_its_port_links():
    """Forgejo's `database.HOST: forgejo-green-rw.dev.svc.cluster.local:5432`
    (damacus/home-ops printed 'fits, peak 0'): the host before the port resolves; an
    IPv6 literal keeps its colons."""
    from advisor.link.hosts import resolve_host

    hosts = {"forgejo-rw.dev.svc.cluster.local": ("server", "s1")}
    assert resolve_host("forgejo-rw.dev.svc.cluster.local:5432", "dev", hosts) == \
        ("server", "s1")
    assert resolve_host("forgejo-rw:5432", "dev", {"forgejo-rw.dev": ("server", "s1")}) == \
        ("server", "s1")
    assert resolve_host("::1", None, hosts) is None


TEMPORAL_VALUES = """
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: temporal, namespace: datasci}
spec:
  chart: {spec: {chart: temporal, sourceRef: {kind: HelmRepository, name: temporal}}}
  values:
    server:
      config:
        persistence:
          datastores:
            default:
              sql:
                pluginName: postgres12
                databaseName: temporal
                connectAddr: pg-rw.db.svc:5432
"""


def test_a_values_host_that_carries_its_port_links():
    """Temporal's `sql.connectAddr: host:port` names the server (ahgraber/homelab-gitops-k3s:
    the release was no client at all, audit D)."""
    (release,) = find_releases(objects(TEMPORAL_VALUES), never)
    client = release_client(release, {}, {}, HOSTS, "default", None, None)
    assert client is not None and client.target_id == "s1"
    assert (client.route.host, client.route.port, client.route.dbname) == (
        "pg-rw.db.svc", 5432, "temporal")
    assert client.route.source.line == 16


# A CloudNativePG cluster per app, as joryirving/home-ops lays them out: the app's
# HelmRelease (app-template from an OCIRepository) takes only PGPASSWORD from the
# operator's `<cluster>-app` Secret; its host is in a config file the ExternalSecret
# fetches (synapse's homeserver.yaml), which is not read here.
CHAT_CLUSTER = """
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: chat, namespace: comms}
spec:
  instances: 2
  imageName: ghcr.io/cloudnative-pg/postgresql:17.4
  postgresql:
    parameters: {max_connections: "200"}
  bootstrap:
    initdb: {database: chat, owner: chat}
"""

CHAT_RELEASE = """
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: chat, namespace: comms}
spec:
  chartRef: {kind: OCIRepository, name: chat}
  values:
    controllers:
      chat:
        containers:
          app:
            image: {repository: ghcr.io/acme/chat-server, tag: 1.2.0}
            env:
              CHAT_CONFIG_PATH: /data/server.yaml
              PGPASSWORD:
                valueFrom:
                  secretKeyRef:
                    name: "{{ .Release.Name }}-app"
                    key: password
"""

CHAT_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: chat, namespace: comms}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/acme/chat-server:1.2.0
          env:
            - name: PGPASSWORD
              valueFrom: {secretKeyRef: {name: chat-app, key: password}}
"""


@pytest.mark.parametrize("client", ["release", "deployment"])
def test_the_password_of_an_operator_secret_alone_links_to_its_cluster(tmp_path, client):
    """PGPASSWORD from CloudNativePG's chat-app and no host read: the role is on Cluster
    chat only, so the client is counted there (unknown: PA106), with a notice saying
    why; it was no client at all, and the server printed 'fits, peak 0' (audit l:
    joryirving/home-ops synapse)."""
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions
    from tests.tree_helpers import write

    write(tmp_path, {"db/cluster.yaml": CHAT_CLUSTER,
                     "apps/chat.yaml": CHAT_RELEASE if client == "release"
                     else CHAT_DEPLOYMENT})
    result = run_check([str(tmp_path)], CheckOptions())
    rw = next(b for b in result.budgets if b.server == "chat")
    assert not rw.fits and rw.peak_is_floor
    assert rw.unknown_clients == ["chat"]
    assert any(f.code == "PA106" for f in result.findings)
    (note,) = [n for n in result.notices if "is the password of Secret chat-app" in n]
    assert "apps/chat.yaml:" in note and "db/cluster.yaml:" in note
    assert "counted at the Secret's own host chat-rw" in note
    # the replicas are nobody's: still 0 there, and said to be so
    ro = next(b for b in result.budgets if b.server == "chat replicas")
    assert ro.peak == 0


def test_a_secret_key_that_is_no_credential_does_not_link():
    """Only the role's credentials say which cluster: a CA certificate of the operator's
    Secret (ca.crt) is no route."""
    from advisor.link.operators import operator_credentials_route
    from advisor.model import Container, EnvVar, Source
    from advisor.read.workloads import ConfigMapData

    (obj,) = objects(CHAT_CLUSTER)
    made = {("secret", "comms", "chat-app"): ConfigMapData(
        obj, {"host": "chat-rw", "user": "chat", "dbname": "chat"}, secret=True,
        made_by=Source(path="db/cluster.yaml", line=3, default="Secret chat-app made by x"))}
    src = Source(path="a.yaml", line=9)

    def env(key: str) -> Container:
        return Container(name="app", source=src, env=(EnvVar(
            name="X", source=src, from_ref=f"secret:chat-app/{key} (not in repository)",
            secret=True),))

    assert operator_credentials_route(env("ca.crt"), made) is None
    route, why = operator_credentials_route(env("password"), made)
    assert (route.host, route.user, route.dbname) == ("chat-rw", "chat", "chat")
    assert "X (a.yaml:9) is the password of Secret chat-app made by x (db/cluster.yaml:3)" \
        in why
