"""A workload named for a JavaScript front end (react-app, image acme/react-builds) is not
given the repository root's Python application (audit 34 D7, krish-96/FlaskPostgresK8s
shape, written here in our own words): the root holds a Flask app (requirements.txt), the
root Dockerfile builds the API's image, and the React pod got the Flask source, its
SQLAlchemy pool with no host 'may connect here', so the server's peak was only a floor.
A Python-named workload still takes the root."""

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps.locate import frontend_word
from tests.tree_helpers import write

SERVER = """
apiVersion: v1
kind: Service
metadata: {name: pg}
spec:
  selector: {app: pg}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: pg}
spec:
  template:
    metadata: {labels: {app: pg}}
    spec:
      containers: [{name: postgres, image: "postgres:15"}]
"""
API = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: api
          image: acme/secret_space:v4
          env: [{name: PG_HOST, value: pg}]
"""
UI = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: react-app}
spec:
  template:
    spec:
      containers:
        - name: react-todo
          image: acme/react-builds:todo_v1
          ports: [{containerPort: 5173}]
"""
DB = """import os

from sqlalchemy import create_engine

ENGINE = create_engine("postgresql://svc@%s:5432/notes" % os.environ["PG_HOST"])
"""


def test_a_react_workload_does_not_take_the_root_s_python_app(tmp_path):
    write(tmp_path, {
        "requirements.txt": "Flask==3.1.0\nSQLAlchemy==2.0.36\npsycopg2-binary==2.9.10\n",
        "tasks.py": "def run():\n    pass\n",
        "webapp/__init__.py": "", "webapp/db.py": DB,
        "webapp/app.py": "from flask import Flask\n\nfrom webapp.db import ENGINE\n\n"
                         "app = Flask(__name__)\n\nif __name__ == '__main__':\n    app.run()\n",
        "Dockerfile": 'FROM python:3.11-slim\nCOPY . /app\nWORKDIR /app\n'
                      'ENTRYPOINT ["python", "webapp/app.py"]\n',
        "k8s/pg.yaml": SERVER, "k8s/api.yaml": API, "k8s/ui.yaml": UI})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert [c.who for c in budget.contributions] == ["api"], budget
    assert budget.peak == 3 * 15 and not budget.peak_is_floor, budget
    assert budget.unplaced_clients == []
    assert any("react-app" in n and "JavaScript front end" in n for n in result.notices)


def test_only_a_front_end_framework_s_name_counts():
    assert frontend_word({"react-app", "acme/react-builds"}) == "react"
    assert frontend_word({"shop-vue-ui"}) == "vue"
    assert frontend_word({"api", "acme/secret_space"}) is None
    assert frontend_word({"reactor"}) is None  # a word, not a substring
