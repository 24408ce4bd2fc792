"""Synapse and Matrix Authentication Service read from the configuration files their
command lines name, as the pod gives them (advisor/read/apps/synapse.py, mas.py,
podfiles.py). Audit h5: in element-hq/ess-helm (cp_max in a ConfigMap key an init
container's matrix-tools render-config deep-merges into /conf/homeserver.yaml) and in
ananace's matrix-synapse chart (the database in a Secret key `cat` into conf.d/, read
with `-c /synapse/config/conf.d/`) every Synapse process was a client of unknown size,
counted as 1 per pod, where each holds cp_max 10."""

from __future__ import annotations

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")


def _clients(root):
    topo = scan([str(root)], CheckOptions(cache=False)).topology
    return {c.name: c for c in topo.clients}


def _peak(root) -> float:
    result = run_check([str(root)], CheckOptions(cache=False))
    (budget,) = [b for b in result.budgets if b.server == "db"]
    return budget.peak


# --- ESS: matrix-tools render-config deep-merges the ConfigMap keys named on its command
# line into an emptyDir file the main container reads with -c

UNDERRIDES = """    database:
      args:
        cp_max: 10
"""
OVERRIDES = """    server_name: chat.example.org
    database:
      name: psycopg2
      args:
        host: db
        user: synapse
        database: synapse
"""


def ess(underrides: str = UNDERRIDES, overrides: str = OVERRIDES,
        extra: str = "/secrets/generated/SYNAPSE_EXTRA", replicas: int = 2,
        command: str = "[python3, -m, synapse.app.homeserver, -c, /conf/homeserver.yaml]",
        kind: str = "StatefulSet") -> str:
    """A StatefulSet as the ESS chart renders one per Synapse process."""
    spec = f"""  replicas: {replicas}
  template:""" if kind == "StatefulSet" else "  template:"
    extra = f"{extra}, " if extra else ""
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: synapse}}
data:
  01-homeserver-underrides.yaml: |
{underrides or "    {}"}
  04-homeserver-overrides.yaml: |
{overrides}
  log_config.yaml: |
    version: 1
---
apiVersion: apps/v1
kind: {kind}
metadata: {{name: synapse-main}}
spec:
{spec}
    spec:
      initContainers:
        - name: render-config
          image: ghcr.io/element-hq/ess-helm/matrix-tools:0.8.1
          args: [render-config, -output, /conf/homeserver.yaml,
                 /config-templates/01-homeserver-underrides.yaml, {extra}
                 /config-templates/04-homeserver-overrides.yaml]
          volumeMounts:
            - {{name: plain-config, mountPath: /config-templates}}
            - {{name: generated, mountPath: /secrets/generated}}
            - {{name: rendered-config, mountPath: /conf}}
      containers:
        - name: synapse
          image: ghcr.io/element-hq/synapse:v1.157.1
          command: {command}
          volumeMounts:
            - {{name: rendered-config, mountPath: /conf/homeserver.yaml,
                subPath: homeserver.yaml}}
            - {{name: plain-config, mountPath: /conf/log_config.yaml,
                subPath: log_config.yaml}}
      volumes:
        - {{name: plain-config, configMap: {{name: synapse}}}}
        - {{name: generated, secret: {{secretName: generated}}}}
        - {{name: rendered-config, emptyDir: {{medium: Memory}}}}
"""


def test_ess_cp_max_of_the_files_render_config_deep_merges(tmp_path):
    """01's database.args.cp_max and 04's database.name/args.host merge key by key
    (renderer.go deepMergeMaps): 10 per process, at 01's line. The generated Secret
    merged after 01 is not in the repository: said in the pool's note."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/synapse.yaml": ess()})
    (pool,) = _clients(tmp_path)["synapse-main"].pools
    assert (pool.label, pool.size.value, pool.bound) == ("Synapse database.args.cp_max",
                                                        10, "fixed")
    assert (pool.size.source.path, pool.size.source.line) == ("k8s/synapse.yaml", 9)
    assert "/secrets/generated/SYNAPSE_EXTRA: Secret generated" in pool.note
    assert (pool.route.host, pool.route.dbname) == ("db", "synapse")
    assert _peak(tmp_path) == 2 * 10


def test_ess_cp_max_unset_is_unknown_when_an_unheld_file_is_merged(tmp_path):
    """Not in any file read, and a Secret not in the repository is merged: unknown,
    not Twisted's default 5; without that Secret, the default."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/synapse.yaml": ess(underrides="")})
    client = _clients(tmp_path)["synapse-main"]
    assert client.pools == [] and "SYNAPSE_EXTRA" in client.unknown
    write(tmp_path, {"k8s/synapse.yaml": ess(underrides="", extra="")})
    (pool,) = _clients(tmp_path)["synapse-main"].pools
    assert (pool.size.value, pool.bound) == (5, "default")


def test_ess_a_later_file_replaces_a_value(tmp_path):
    """The last file given wins a value both set (render-config's order, not names)."""
    overrides = OVERRIDES + "        cp_max: 3\n"
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/synapse.yaml": ess(overrides=overrides, extra="")})
    (pool,) = _clients(tmp_path)["synapse-main"].pools
    assert pool.size.value == 3 and not pool.note


def test_synapse_config_check_job_is_no_client(tmp_path):
    """`python -m synapse.config` loads the configuration and exits
    (synapse/config/__main__.py): no connection, no client (it was >= 1, PA106)."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/synapse.yaml": ess(
        kind="Job", command="[python3, -m, synapse.config, -c, /conf/homeserver.yaml]")})
    assert "synapse-main" not in _clients(tmp_path)


# --- ananace/matrix-synapse: a Secret key `cat` into an emptyDir folder by the
# container's own shell, read with `-c <folder>/`; Synapse merges files shallowly

ANANACE_SECRET = """    database:
      name: psycopg2
      args:
        host: db
        database: synapse
        cp_min: 5
        cp_max: 10
"""
SCRIPT = """|
              cat /synapse/secrets/*.yaml | \\
                sed -e "s/@@POSTGRES_PASSWORD@@/secret/" \\
                    -e "s/@@REDIS_PASSWORD@@//" \\
                       > /synapse/config/conf.d/secrets.yaml

              exec python -B -m synapse.app.homeserver \\
                          -c /synapse/config/homeserver.yaml \\
                          -c /synapse/config/conf.d/"""


def ananace(secret: str = ANANACE_SECRET, homeserver: str = "",
            secret_name: str = "matrix-synapse", script: str = SCRIPT) -> str:
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: matrix-synapse}}
data:
  homeserver.yaml: |
    server_name: chat.example.org
{homeserver}
---
apiVersion: v1
kind: Secret
metadata: {{name: matrix-synapse}}
stringData:
  config.yaml: |
{secret}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: matrix-synapse}}
spec:
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: synapse
          image: matrixdotorg/synapse:v1.157.1
          command:
            - sh
            - -c
            - {script}
          volumeMounts:
            - {{name: config, mountPath: /synapse/config}}
            - {{name: tmpconf, mountPath: /synapse/config/conf.d}}
            - {{name: secrets, mountPath: /synapse/secrets}}
      volumes:
        - {{name: config, configMap: {{name: matrix-synapse}}}}
        - {{name: secrets, secret: {{secretName: {secret_name}}}}}
        - {{name: tmpconf, emptyDir: {{}}}}
"""


def test_ananace_database_of_the_secret_cat_into_conf_d(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/synapse.yaml": ananace()})
    (pool,) = _clients(tmp_path)["matrix-synapse"].pools
    assert (pool.size.value, pool.bound) == (10, "fixed")
    assert pool.route.host == "db" and not pool.note
    assert _peak(tmp_path) == 10


def test_synapse_merges_its_files_shallowly(tmp_path):
    """conf.d's `database` replaces homeserver.yaml's whole (read_config_files
    dict.update): its unset cp_max is the default 5, not homeserver.yaml's 50."""
    homeserver = "    database:\n      name: psycopg2\n      args: {host: db, cp_max: 50}\n"
    secret = "    database:\n      name: psycopg2\n      args: {host: db}\n"
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/synapse.yaml": ananace(secret=secret, homeserver=homeserver)})
    (pool,) = _clients(tmp_path)["matrix-synapse"].pools
    assert (pool.size.value, pool.bound) == (5, "default")


def test_ananace_secret_not_in_the_repository_is_unknown(tmp_path):
    """The Secret the script copies is not in the repository: its cp_max is unknown,
    not the default (the host named by the ConfigMap links the client)."""
    homeserver = "    database:\n      name: psycopg2\n      args: {host: db}\n"
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/synapse.yaml": ananace(
        homeserver=homeserver, secret_name="existing")})
    client = _clients(tmp_path)["matrix-synapse"]
    assert client.pools == [] and "Secret existing" in client.unknown


def test_a_rewrite_not_read_is_not_the_file(tmp_path):
    """`envsubst < a > conf.d/x.yaml` is not read: the folder's file is not known."""
    script = SCRIPT.replace("cat /synapse/secrets/*.yaml |", "envsubst <").replace(
        '"s/@@POSTGRES_PASSWORD@@/secret/"', "/synapse/secrets/config.yaml").replace(
        "sed -e", "").replace('-e "s/@@REDIS_PASSWORD@@//"', "")
    homeserver = "    database:\n      name: psycopg2\n      args: {host: db}\n"
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/synapse.yaml": ananace(
        homeserver=homeserver, script=script)})
    client = _clients(tmp_path)["matrix-synapse"]
    assert client.pools == [] and "envsubst" in client.unknown


def test_a_folder_is_its_yaml_files_in_sorted_order(tmp_path):
    """find_config_files: *.yaml only (c.yml is skipped), in sorted order (b after a)."""
    manifest = """
apiVersion: v1
kind: ConfigMap
metadata: {name: confd}
data:
  b.yaml: |
    database: {name: psycopg2, args: {host: db, cp_max: 9}}
  a.yaml: |
    database: {name: psycopg2, args: {host: db, cp_max: 7}}
  c.yml: |
    database: {name: psycopg2, args: {host: db, cp_max: 99}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: synapse}
spec:
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: synapse
          image: matrixdotorg/synapse:v1.157.1
          args: [run, -c, /conf.d]
          volumeMounts:
            - {name: confd, mountPath: /conf.d}
      volumes:
        - {name: confd, configMap: {name: confd}}
"""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/synapse.yaml": manifest})
    (pool,) = _clients(tmp_path)["synapse"].pools
    assert pool.size.value == 9


# --- Matrix Authentication Service: database.max_connections, default 10

def mas(max_connections: str = "", config_env: str = "/conf/mas-config.yaml") -> str:
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: mas}}
data:
  mas-config-underrides.yaml: |
    policy: {{}}
  mas-config-overrides.yaml: |
    database:
      host: db
      port: 5432
      username: mas
      database: mas
{max_connections}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: mas}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    spec:
      initContainers:
        - name: render-config
          image: ghcr.io/element-hq/ess-helm/matrix-tools:0.8.1
          args: [render-config, -output, /conf/mas-config.yaml,
                 /config-templates/mas-config-underrides.yaml,
                 /config-templates/mas-config-overrides.yaml]
          volumeMounts:
            - {{name: plain-config, mountPath: /config-templates}}
            - {{name: rendered-config, mountPath: /conf}}
        - name: database-migrate
          image: ghcr.io/element-hq/matrix-authentication-service:1.23.0
          args: [database, migrate]
          env: [{{name: MAS_CONFIG, value: "{config_env}"}}]
          volumeMounts:
            - {{name: rendered-config, mountPath: /conf/mas-config.yaml,
                subPath: mas-config.yaml}}
      containers:
        - name: mas
          image: ghcr.io/element-hq/matrix-authentication-service:1.23.0
          args: [server, --no-migrate]
          env: [{{name: MAS_CONFIG, value: "{config_env}"}}]
          volumeMounts:
            - {{name: rendered-config, mountPath: /conf/mas-config.yaml,
                subPath: mas-config.yaml}}
      volumes:
        - {{name: plain-config, configMap: {{name: mas}}}}
        - {{name: rendered-config, emptyDir: {{}}}}
"""


def test_mas_pool_defaults_to_10(tmp_path):
    """It was a client of unknown size (1 per pod, PA106)."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/mas.yaml": mas()})
    (pool,) = _clients(tmp_path)["mas"].pools
    assert (pool.label, pool.size.value, pool.bound) == (
        "Matrix Authentication Service database.max_connections", 10, "default")
    assert "database.rs" in pool.size.source.default
    assert (pool.route.host, pool.route.dbname) == ("db", "mas")
    assert _peak(tmp_path) == 2 * 10


def test_mas_max_connections_of_its_config_file(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/mas.yaml": mas(max_connections="      max_connections: 25")})
    (pool,) = _clients(tmp_path)["mas"].pools
    assert (pool.size.value, pool.bound) == (25, "fixed")
    assert (pool.size.source.path, pool.size.source.line) == ("k8s/mas.yaml", 14)


def test_mas_config_in_the_image_is_unknown(tmp_path):
    """MAS_CONFIG names a file on no volume: not in the repository, so the pool is
    unknown, not the default (the host comes from the ConfigMap it does not read)."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/mas.yaml": mas(config_env="/etc/mas.yaml")})
    client = _clients(tmp_path).get("mas")
    assert client is None or client.pools == []


# --- podfiles: a file written from files written from files... is read in bounded time

FAN_OUT = """
apiVersion: v1
kind: ConfigMap
metadata: {{name: cfg}}
data:
  homeserver.yaml: |
    database: {{name: psycopg2, args: {{host: db, cp_max: 10}}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: synapse}}
spec:
  strategy: {{type: Recreate}}
  template:
    spec:
      initContainers:
        - name: gen
          image: busybox
          command: [sh, -c, "{script}"]
          volumeMounts:
            - {{name: conf, mountPath: /conf}}
            - {{name: cfg, mountPath: /cfg}}
      containers:
        - name: synapse
          image: ghcr.io/element-hq/synapse:v1.120.0
          command: [python, -m, synapse.app.homeserver, -c, /conf/h.yaml]
          volumeMounts:
            - {{name: conf, mountPath: /conf}}
      volumes:
        - {{name: conf, emptyDir: {{}}}}
        - {{name: cfg, configMap: {{name: cfg}}}}
"""


def _counting_reads(monkeypatch) -> list[int]:
    from advisor.read.apps import podfiles

    count = [0]
    read = podfiles.ContainerFiles.read

    def counted(self, path):
        count[0] += 1
        return read(self, path)

    monkeypatch.setattr(podfiles.ContainerFiles, "read", counted)
    return count


def test_a_file_catted_from_itself_is_read_in_bounded_reads(tmp_path, monkeypatch):
    """`cat /conf/h.yaml x 40 > /conf/h.yaml` re-read every input per level up to
    MAX_DEPTH: 65,641 reads (N=120: 11 s, 417 MB). Each (writer, volume, path, depth)
    is now made once, and a tree of more than MAX_READS reads is not held, said in a
    notice, never a default."""
    count = _counting_reads(monkeypatch)
    script = "cat " + " ".join(["/conf/h.yaml"] * 40) + " > /conf/h.yaml"
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/synapse.yaml": FAN_OUT.format(script=script)})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert count[0] < 1000
    assert any("Deployment/synapse: /conf/h.yaml" in n and "more than 1000, not read" in n
               for n in result.notices)
    assert not any(p.size.bound == "default" for c in _clients(tmp_path).values()
                   for p in c.pools)


def test_only_the_last_write_of_a_file_is_read(tmp_path, monkeypatch):
    """The fan-out write is replaced by a later `cp`: only the cp is read (it was built
    too, in 65,641 reads), and its cp_max 10 is the pool."""
    count = _counting_reads(monkeypatch)
    script = "cat " + " ".join(["/conf/h.yaml"] * 40) + " > /conf/h.yaml; " \
        "cp /cfg/homeserver.yaml /conf/h.yaml"
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/synapse.yaml": FAN_OUT.format(script=script)})
    (pool,) = _clients(tmp_path)["synapse"].pools
    assert (pool.size.value, pool.bound) == (10, "fixed") and count[0] < 50


def test_mas_through_a_shell_is_read(tmp_path):
    """`sh -c "mas-cli config check && exec mas-cli server --config ..."`: _command
    looked for a word whose basename is mas-cli, found none in the script, and the
    client was unknown ("no application source folder", PA106). The command line's
    segments are read as Synapse's are: the last that runs mas-cli is the server."""
    manifest = mas(max_connections="      max_connections: 25").replace(
        "          args: [server, --no-migrate]\n",
        '          command: [sh, -c, "mas-cli config check && exec mas-cli server '
        '--no-migrate --config /conf/mas-config.yaml"]\n').replace(
        '          env: [{name: MAS_CONFIG, value: "/conf/mas-config.yaml"}]\n'
        "          volumeMounts:\n"
        "            - {name: rendered-config, mountPath: /conf/mas-config.yaml,\n"
        "                subPath: mas-config.yaml}\n"
        "      volumes:",
        "          volumeMounts:\n"
        "            - {name: rendered-config, mountPath: /conf/mas-config.yaml,\n"
        "                subPath: mas-config.yaml}\n"
        "      volumes:")
    assert "exec mas-cli server" in manifest and manifest.count("MAS_CONFIG") == 1
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/mas.yaml": manifest})
    (pool,) = _clients(tmp_path)["mas"].pools
    assert (pool.size.value, pool.bound) == (25, "fixed")
    assert _peak(tmp_path) == 2 * 25
