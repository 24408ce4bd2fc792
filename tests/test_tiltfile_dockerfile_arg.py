"""A Tiltfile's `docker_build(IMAGE, FOLDER, dockerfile=...)` names the Dockerfile that
builds IMAGE (Kludex/fastapi-microservices shape, written here in our own words: the worker
image is built from the API's folder with docker/worker.dockerfile, whose CMD runs
`arq app.worker.WorkerSettings`). The command is read from that file (lower-case
`.dockerfile` is a Dockerfile too), and arq's dotted settings path names its entry module."""

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

WORKER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: jobs-worker}
spec:
  template:
    spec:
      containers:
        - {name: jobs-worker, image: jobs-worker, env: [{name: REDIS_HOST, value: redis}]}
"""


def test_the_tiltfile_s_dockerfile_gives_the_worker_s_command(tmp_path):
    write(tmp_path, {
        "Tiltfile": "k8s_yaml(['k8s/worker.yaml'])\n"
                    "docker_build('jobs-worker', 'svc',\n"
                    "             dockerfile='svc/docker/worker.dockerfile')\n",
        "svc/requirements.txt": "arq==0.20.0\nsqlalchemy==1.4.11\nasyncpg==0.22.0\n",
        "svc/docker/worker.dockerfile": 'FROM python:3.8-slim\nCOPY ./app /app/app\n'
                                        'CMD ["arq", "app.worker.WorkerSettings"]\n',
        "svc/app/__init__.py": "",
        "svc/app/worker.py": "async def job(ctx):\n    return 1\n\n\n"
                             "class WorkerSettings:\n    functions = [job]\n",
        "svc/app/db.py": "from sqlalchemy.ext.asyncio import create_async_engine\n\n"
                         "engine = create_async_engine('postgresql+asyncpg://u@pg/app')\n",
        "k8s/worker.yaml": WORKER})
    result = run_check([str(tmp_path)], CheckOptions())
    assert any("command taken from svc/docker/worker.dockerfile" in n for n in result.notices), \
        result.notices
    assert any("no SQLAlchemy engine is made by a module app/worker.py imports" in n
               for n in result.notices), result.notices
