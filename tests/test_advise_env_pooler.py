"""advise on a PgBouncer configured by environment (the Bitnami image's PGBOUNCER_*
variables, edoburu's upper-case keys): a limit the files do not set is added as the
image's variable in the container's own env list, so that `advise --write` ends where
`check` passes; the text says what a peak with unknown clients is."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from advisor.advise.edits import plan
from advisor.advise.records import Edit
from tests.test_advise import cli
from tests.test_linking import DB as LINKING_DB
from tests.test_linking import web

# the database of tests/test_linking.py, with 40 slots: 37 usable (3 reserved)
DB = LINKING_DB.lstrip("\n").replace("max_connections=50", "max_connections=40")

BITNAMI_ENV = """\
            - name: POSTGRESQL_HOST
              value: db
            - name: PGBOUNCER_DATABASE
              value: shop
            - name: PGBOUNCER_POOL_MODE
              value: transaction
            - {name: PGBOUNCER_QUERY_WAIT_TIMEOUT, value: "20"}
            - {name: PGBOUNCER_IDLE_TRANSACTION_TIMEOUT, value: "60"}
            - {name: PGBOUNCER_MAX_PREPARED_STATEMENTS, value: "100"}
"""

EDOBURU_ENV = """\
            - name: DB_HOST
              value: db
            - name: DB_NAME
              value: shop
            - name: POOL_MODE
              value: transaction
            - {name: QUERY_WAIT_TIMEOUT, value: "20"}
            - {name: IDLE_TRANSACTION_TIMEOUT, value: "60"}
            - {name: MAX_PREPARED_STATEMENTS, value: "100"}
"""


def bouncer(image: str, env: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: pgbouncer}}
spec:
  replicas: 3
  strategy: {{type: Recreate}}
  template:
    metadata: {{labels: {{app: pgbouncer}}}}
    spec:
      containers:
        - name: pgbouncer
          image: {image}
          env:
{env}---
apiVersion: v1
kind: Service
metadata: {{name: pgbouncer}}
spec:
  selector: {{app: pgbouncer}}
"""


# 4 pods x HikariCP 10, through the PgBouncer
WEB = web("pgbouncer", size=10, replicas=4)


def repo(tmp_path: Path, image: str, env: str) -> Path:
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s/db.yaml").write_text(DB)
    (tmp_path / "k8s/bouncer.yaml").write_text(bouncer(image, env))
    (tmp_path / "k8s/web.yaml").write_text(WEB)
    return tmp_path


@pytest.mark.parametrize(("image", "env", "variable"), [
    ("bitnami/pgbouncer:1.22.1", BITNAMI_ENV, "PGBOUNCER_DEFAULT_POOL_SIZE"),
    ("edoburu/pgbouncer:v1.22.1-p0", EDOBURU_ENV, "DEFAULT_POOL_SIZE"),
])
def test_write_adds_the_images_variable_and_check_passes(tmp_path, image, env, variable):
    root = repo(tmp_path, image, env)
    # 3 replicas x default_pool_size 20 (PgBouncer default) = 60 > 37 usable
    before = cli("check", str(root))
    assert before.returncode == 1 and "PA105" in before.stdout, before.stdout

    diff = cli("advise", str(root), "--diff")
    added = [x for x in diff.stdout.splitlines() if x.startswith("+ ")]
    # 37 usable over 3 replicas: 12 per replica
    assert added == [f"+            - {{name: {variable}, value: \"12\"}}"], diff.stdout

    wrote = cli("advise", str(root), "--write", "--yes")
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    text = (root / "k8s/bouncer.yaml").read_text()
    assert f"          env:\n            - {{name: {variable}, value: \"12\"}}\n" in text
    after = cli("check", str(root))
    assert after.returncode == 0, after.stdout


def test_rendered_or_envless_bouncer_is_left_to_the_user(tmp_path):
    # No env list of its own to add to (only envFrom): the variable is named, not written.
    root = repo(tmp_path, "bitnami/pgbouncer:1.22.1", BITNAMI_ENV)
    cm = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bouncer-env}\ndata:\n"
          "  POSTGRESQL_HOST: db\n  PGBOUNCER_DATABASE: shop\n  PGBOUNCER_POOL_MODE: transaction\n"
          "  PGBOUNCER_QUERY_WAIT_TIMEOUT: '20'\n  PGBOUNCER_IDLE_TRANSACTION_TIMEOUT: '60'\n"
          "  PGBOUNCER_MAX_PREPARED_STATEMENTS: '100'\n")
    (root / "k8s/cm.yaml").write_text(cm)
    text = (root / "k8s/bouncer.yaml").read_text()
    text = text.replace("          env:\n" + BITNAMI_ENV,
                        "          envFrom:\n            - configMapRef: {name: bouncer-env}\n")
    (root / "k8s/bouncer.yaml").write_text(text)
    r = cli("advise", str(root))
    assert r.returncode == 1, r.stdout
    assert "by hand: add `PGBOUNCER_DEFAULT_POOL_SIZE: \"12\"` to the PgBouncer container's env" \
        in r.stdout


def _yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "a.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_list_insert_takes_the_items_indentation(tmp_path):
    _yaml(tmp_path, """\
        env:
            - name: A
              value: "1"
        """)
    edit = Edit(path="a.yaml", line=1, key="B", old="", new='- {name: B, value: "2"}',
                insert=True, indent_from=2)
    result = plan([edit], [tmp_path])
    assert not result.refused
    (change,) = result.changes
    assert change.after == 'env:\n    - {name: B, value: "2"}\n    - name: A\n      value: "1"\n'


def test_list_insert_is_refused_when_the_line_is_no_longer_an_item(tmp_path):
    _yaml(tmp_path, """\
        env:
          A: "1"
        """)
    edit = Edit(path="a.yaml", line=1, key="B", old="", new='- {name: B, value: "2"}',
                insert=True, indent_from=2)
    result = plan([edit], [tmp_path])
    assert not result.changes
    ((_, why),) = result.refused
    assert "not a `- ` list item" in why


def test_unknown_clients_are_neither_fit_nor_over(tmp_path):
    root = repo(tmp_path, "bitnami/pgbouncer:1.22.1", BITNAMI_ENV)
    (root / "k8s/web.yaml").write_text(WEB.replace(
        '            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "10"}\n', "")
        .replace("acme/web:1", "acme/mystery:1").replace("SPRING_DATASOURCE_URL", "DB_URL")
        .replace("jdbc:postgresql://pgbouncer:5432/shop", "postgres://db:5432/shop"))
    r = cli("advise", str(root))
    first = r.stdout.splitlines()[0]
    assert first.startswith("== db: not known (") and "1 client(s) unknown" in first, r.stdout


def test_nothing_to_propose_ends_its_line(tmp_path):
    from advisor.advise.text import render_text

    assert render_text([]).endswith("(use --all).\n")


@pytest.mark.parametrize(("image", "env"), [("bitnami/pgbouncer:1.22.1", BITNAMI_ENV),
                                            ("edoburu/pgbouncer:v1.22.1-p0", EDOBURU_ENV)])
def test_env_settings_are_read_as_the_images_pgbouncer_version(tmp_path, image, env):
    # max_prepared_statements is a 1.21 key: it was dropped when the environment was read
    # with the assumed 1.18 table, so PA405 fired although the image tracks statements.
    from advisor.engine.check import scan
    from advisor.engine.options import CheckOptions

    topo = scan([str(repo(tmp_path, image, env))], CheckOptions()).topology
    (pooler,) = topo.poolers
    assert pooler.version.text == "1.22"
    assert pooler.settings["max_prepared_statements"].value == 100
    assert pooler.env_first is not None and pooler.env_first.line == 14
