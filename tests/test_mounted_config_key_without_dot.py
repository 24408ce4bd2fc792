"""A mounted ConfigMap key named like a YAML file without the dot (the zitadel chart's
`zitadel-config-yaml`, mounted at /config and passed as `--config
/config/zitadel-config-yaml`) is read for its PostgreSQL section's host. Audit 47 D3
(zitadel/zitadel-charts with examples/1-postgres-insecure/zitadel-values.yaml:
configmapConfig.Database.Postgres.Host db-postgresql): the check read the pool
(MaxOpenConns 20) from that file but said the Deployment "names no database host in its
env, arguments or mounted configuration", a false reason; the host is named, and no
Service of the repository is it (PA107). Written in the chart's rendered shape."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

RENDERED = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: idp-config-yaml
data:
  idp-config-yaml: |-
    Database:
      Postgres:
        Host: db-postgresql
        Port: 5432
        Database: idp
        MaxOpenConns: 20
        User:
          Username: postgres
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: idp
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: zitadel
          image: ghcr.io/zitadel/zitadel:v4.13.0
          args: [start-from-init, --config, /config/idp-config-yaml]
          volumeMounts:
            - name: idp-config-yaml
              mountPath: /config
      volumes:
        - name: idp-config-yaml
          configMap:
            name: idp-config-yaml
"""


def test_a_mounted_yaml_key_without_a_dot_names_its_host(tmp_path):
    write(tmp_path, {"k8s/idp.yaml": RENDERED})
    r = run_check([tmp_path], CheckOptions(root=tmp_path))
    assert not [n for n in r.notices if "names no database host" in n], r.notices
    (pa107,) = [f for f in r.findings if f.code == "PA107"]
    assert "'db-postgresql'" in pa107.message and pa107.location.line == 9
