"""`docker build -f Dockerfile.api -t IMAGE .` in a README: the image holds what
Dockerfile.api copies, not the whole root (audit 39 D6, humble92/todo-pg's shape: the
root's Dockerfile.fastapi copies requirements.txt and main.py; worker/ beside it is
another image's build context; its asyncpg pool of 3 was counted in the API's pods too:
13 per pod, right 10). Our own tree."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

API = """import asyncpg
from fastapi import FastAPI

app = FastAPI()


@app.on_event("startup")
async def startup():
    app.state.pool = await asyncpg.create_pool("postgresql://u:p@db:5432/todo", max_size=10)
"""
WORKER = """import asyncio

import asyncpg


async def main():
    pool = await asyncpg.create_pool("postgresql://u:p@db:5432/todo", max_size=3)
    await pool.close()

asyncio.run(main())
"""
API_DOCKERFILE = """FROM python:3.11-slim
WORKDIR /app
COPY requirements.txt /app/requirements.txt
RUN pip install -r /app/requirements.txt
COPY main.py /app/main.py
CMD ["uvicorn", "main:app", "--host", "0.0.0.0"]
"""
README = """# Build

```bash
docker build -f DOCKERFILE -t acme/todo-api:latest .
docker build -f worker/Dockerfile -t acme/todo-worker:latest ./worker
```
"""
K8S = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers: [{name: api, image: "acme/todo-api:latest"}]
"""


def _peak(tmp_path, dockerfile: str) -> float:
    write(tmp_path, {"main.py": API, "requirements.txt": "fastapi\nasyncpg==0.29.0\nuvicorn\n",
                     dockerfile: API_DOCKERFILE,
                     "README.md": README.replace("DOCKERFILE", dockerfile),
                     "worker/reminder.py": WORKER, "worker/requirements.txt": "asyncpg==0.29.0\n",
                     "worker/Dockerfile": 'FROM python:3.11-slim\nCOPY . .\n'
                                          'CMD ["python", "reminder.py"]\n',
                     "k8s/db.yaml": POSTGRES_DB, "k8s/api.yaml": K8S})
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    return budget.peak


def test_the_api_image_holds_only_what_its_dockerfile_copies(tmp_path):
    assert _peak(tmp_path, "Dockerfile.fastapi") == 2 * 10
