"""advise on a pool whose size is a sum of two settings (SQLAlchemy QueuePool pool_size +
max_overflow, Dify's SQLALCHEMY_POOL_SIZE + SQLALCHEMY_MAX_OVERFLOW): it moves the
settings, each at its own line, so the sum is the size proposed. Audit 13d: on
BorisPolonsky/dify-helm it proposed `SQLALCHEMY_POOL_SIZE 40 -> 17`; set so, the default
overflow 10 stays on top (27 per process) and the server was over by 37 where advise
said 94 <= 97 fits; with the value written (30) the edit was refused as "'40' not found
on the line"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from advisor.advise.client_pools import split_parts
from advisor.model import Source, Term
from tests.test_advise import advise_json, cli

DB = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  replicas: 1
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
        - name: postgres
          image: postgres:16
          args: ["-c", "max_connections=60"]
---
apiVersion: v1
kind: Service
metadata:
  name: db
spec:
  selector: {app: db}
  ports:
    - port: 5432
"""

API = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 1
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
        - name: api
          image: langgenius/dify-api:1.4.0
          env:
            - name: MODE
              value: api
            - name: DB_HOST
              value: db
ENV"""

POOL_SIZE_30 = """\
            # the engine's pool; the overflow keeps Dify's default
            - name: SQLALCHEMY_POOL_SIZE
              value: "30"
"""


def _repo(tmp_path: Path, env: str) -> Path:
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s/db.yaml").write_text(DB)
    (tmp_path / "k8s/api.yaml").write_text(API.replace("ENV", env))
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def test_the_written_pool_size_is_edited_so_the_sum_fits(tmp_path: Path):
    # (1 + 1 surge) pods x (30 + 10) = 80 > 57 usable: 28 per process, so pool_size 18
    # at its line, the default overflow 10 left as it is; git apply, check fits at 56
    repo = _repo(tmp_path, POOL_SIZE_30)
    (server,) = advise_json(str(repo))
    (p,) = server["proposals"]
    assert (p["key"], p["new"]) == ("SQLALCHEMY_POOL_SIZE", "18")
    assert p["edit"]["line"] == 23 and p["edit"]["old"] == "30"
    assert p["reason"].startswith("SQLALCHEMY_POOL_SIZE 18 + SQLALCHEMY_MAX_OVERFLOW 10 = 28 "
                                  "per process")
    assert server["peak_after"] == 56 and server["fits_after"]
    diff = cli("advise", str(repo), "--diff")
    assert "not edited" not in diff.stderr, diff.stderr
    patch = diff.stdout[diff.stdout.index("--- a/"):]
    applied = subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=repo,
                             capture_output=True)
    assert applied.returncode == 0, applied.stderr
    after = cli("check", "-v", str(repo))
    assert after.returncode == 0, after.stdout
    assert "x 28 (Dify SQLAlchemy pool (pool_size + max_overflow), k8s/api.yaml:23) = 56" \
        in after.stdout


def test_default_settings_are_one_step_by_hand_that_makes_the_sum(tmp_path: Path):
    # both Dify defaults: one setting by hand (SQLALCHEMY_POOL_SIZE 18, the overflow 10
    # on top makes 28), not the sum at SQLALCHEMY_POOL_SIZE; done so, check fits at 56
    repo = _repo(tmp_path, "")
    (server,) = advise_json(str(repo))
    (p,) = server["proposals"]
    assert (p["key"], p["new"], p["edit"]) == ("SQLALCHEMY_POOL_SIZE", "18", None)
    assert "set it to 18" in p["manual"]
    api = repo / "k8s/api.yaml"
    api.write_text(api.read_text() + POOL_SIZE_30.replace('"30"', '"18"'))
    after = cli("check", str(repo))
    assert after.returncode == 0, after.stdout


def _term(label: str, value: float, line: int | None) -> Term:
    source = Source(path="k8s/api.yaml", line=line, key=label) if line else \
        Source.default_of(f"default {label}", key=label)
    return Term(label=label, value=value, source=source)


def test_split_prefers_the_written_setting_then_one_that_takes_the_cut_alone():
    size, overflow = _term("pool_size", 30, None), _term("max_overflow", 10, 24)
    # the written overflow goes first, to 0, then pool_size by hand to 17
    assert [t.value for t in split_parts([size, overflow], 17)] == [17, 0]
    both_default = [_term("pool_size", 30, None), _term("max_overflow", 10, None)]
    assert [t.value for t in split_parts(both_default, 17)] == [7, 10]
    # a cut neither can take alone (pool_size stays at least 1): the overflow goes first
    assert [t.value for t in split_parts(both_default, 3)] == [3, 0]


FLASK_APP = """\
import os

from flask import Flask
from sqlalchemy import create_engine

app = Flask(__name__)
engine = create_engine(os.environ["DATABASE_URL"], pool_size=SIZE, max_overflow=5, pool_timeout=15)
"""

FLASK_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
        - name: app
          image: registry.example.com/app:1
          command: ["gunicorn", "-w", "2", "app:app"]
          env:
            - name: DATABASE_URL
              value: postgresql://app@db:5432/app
            - name: DB_POOL_SIZE
              value: "10"
"""


@pytest.mark.parametrize(("size", "edited", "old", "new"), [
    # (1 + 1 surge) pods x 2 workers x (10 + 5) = 60 > 57: 14 per process
    ("10", "app/app.py", "max_overflow=5", "max_overflow=4"),
    # pool_size from the variable the Deployment sets: the overflow at the call still
    # goes first (written at a line too), pool_timeout=15 untouched
    ('int(os.environ["DB_POOL_SIZE"])', "app/app.py", "max_overflow=5", "max_overflow=4"),
    # the overflow a default (10): pool_size moves, in the Deployment that sets it
    # (2 x 2 x (10 + 10) = 80: 14 per process, pool_size 4)
    ('int(os.environ["DB_POOL_SIZE"]), max_overflow=DEFAULT', "k8s/app.yaml", 'value: "10"',
     'value: "4"'),
])
def test_create_engine_keywords_are_edited_not_the_sum(tmp_path: Path, size: str,
                                                       edited: str, old: str, new: str):
    # audit 13d: the sum 15 was edited as a token on the call's line, which was
    # pool_timeout=15 (-> 14): the pool stayed 10 + 5 and check still said over by 3
    (tmp_path / "k8s").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "k8s/db.yaml").write_text(DB)
    (tmp_path / "k8s/app.yaml").write_text(FLASK_DEPLOYMENT)
    app = FLASK_APP.replace("SIZE", size)
    if "DEFAULT" in app:
        app = app.replace(", max_overflow=DEFAULT, max_overflow=5", "")
    (tmp_path / "app/app.py").write_text(app)
    (tmp_path / "app/requirements.txt").write_text("flask==3.0.3\nsqlalchemy==2.0.30\n"
                                                   "psycopg2-binary==2.9.9\ngunicorn==22.0.0\n")
    (tmp_path / "app/Dockerfile").write_text("FROM python:3.12-slim\nCOPY . .\n"
                                             'CMD ["gunicorn", "-w", "2", "app:app"]\n')
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    before = (tmp_path / edited).read_text()
    diff = cli("advise", str(tmp_path), "--diff")
    patch = diff.stdout[diff.stdout.index("--- a/"):]
    applied = subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=tmp_path,
                             capture_output=True)
    assert applied.returncode == 0, applied.stderr
    assert (tmp_path / edited).read_text() == before.replace(old, new)
    after = cli("check", str(tmp_path))
    assert after.returncode == 0, after.stdout


def test_the_after_note_shows_the_proposed_parts_not_the_old_reading(tmp_path: Path):
    # audit 13d: the After block said "QueuePool pool_size 30 ... + max_overflow 10" under
    # a pool of 28; it now leads with the settings proposed
    repo = _repo(tmp_path, POOL_SIZE_30)
    (server,) = advise_json(str(repo))
    notes = [x for x in server["after"] if x.strip().startswith("note:")]
    assert notes and notes[0].strip().startswith(
        "note: proposed: SQLALCHEMY_POOL_SIZE 18 + SQLALCHEMY_MAX_OVERFLOW 10 (unchanged) = 28; "
        "as read before: QueuePool pool_size 30"), notes
