"""A compose service's build matched to an owner's image by its bare name alone does not
decide that the image has no source (audit 46 D4). requarks/wiki: the chart runs
requarks/wiki:2; dev/containers/docker-compose.yml's service `wiki` builds
dev/containers/Dockerfile, a dev container that copies nothing and runs `tail -f
/dev/null` (compose tags that build <project>-wiki, not requarks/wiki). It was taken as
the image's build, so "application source not inferred ... copies no application
folder", while the image is built from the repository root's server/ (dev/build/
Dockerfile). The shape below is written for this test, after that layout."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps.locate import BuildHints, image_dockerfile
from tests.tree_helpers import write

SHAPE = {
    "package.json": '{"name": "wiki", "main": "server/index.js", '
                    '"dependencies": {"knex": "0.21.7", "pg": "8.16.3"}}',
    "server/index.js": "require('./core/db').init()\n",
    "server/core/db.js": "const Knex = require('knex')\nmodule.exports = { init () {\n"
                         "  this.knex = Knex({ client: 'pg', connection: process.env."
                         "DATABASE_URL, pool: { max: 8 } })\n} }\n",
    "dev/build/Dockerfile": "FROM node:24-alpine\nWORKDIR /wiki\nCOPY ./server ./server\n"
                            "COPY ./package.json ./package.json\n"
                            'CMD ["node", "server"]\n',
    "dev/containers/Dockerfile": "FROM node:24\nWORKDIR /wiki\nEXPOSE 3000\n"
                                 'CMD ["tail", "-f", "/dev/null"]\n',
    "dev/containers/docker-compose.yml": """\
services:
  db:
    image: postgres:17-alpine
  wiki:
    build:
      context: ../..
      dockerfile: dev/containers/Dockerfile
    depends_on: [db]
""",
    ".github/workflows/build.yml": """\
on: {push: {branches: [main]}}
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
    - uses: actions/checkout@v4
    - name: Build and push Docker images
      uses: docker/build-push-action@v7
      with:
        context: .
        file: dev/build/Dockerfile
        push: true
        tags: |
          requarks/wiki:canary
""",
    "dev/k8s/wiki.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: release-wiki}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app.kubernetes.io/name: wiki, app.kubernetes.io/instance: release}}
  template:
    metadata: {labels: {app.kubernetes.io/name: wiki, app.kubernetes.io/instance: release}}
    spec:
      containers:
        - name: wiki
          image: "requarks/wiki:2"
          env:
            - {name: DATABASE_URL, value: "postgres://wiki@wiki-postgresql:5432/wiki"}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: wiki-postgresql}
spec:
  serviceName: wiki-postgresql
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: postgres, image: "postgres:17"}]
---
apiVersion: v1
kind: Service
metadata: {name: wiki-postgresql}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
""",
}


def test_a_dev_container_named_like_the_image_does_not_end_the_search(tmp_path):
    write(tmp_path, SHAPE)
    r = run_check([str(tmp_path / "dev" / "k8s")], CheckOptions(cache=False, root=tmp_path))
    assert not any("application source not inferred" in n for n in r.notices)
    (budget,) = r.budgets
    assert budget.unknown_clients == []
    assert budget.peak == 8  # 1 pod (Recreate) x Knex pool max 8, the root's server/


def test_the_bare_name_match_is_marked():
    hints = BuildHints(dockerfiles=(("wiki", "dev/containers/Dockerfile", "compose"),),
                       dockerfile_files=(("dev/containers/Dockerfile", "node:24"),))
    found = image_dockerfile(hints, ["requarks/wiki:2"], {"wiki"})
    assert found is not None and found.by_bare_name
    # the full image named by the build is that image's
    hints = BuildHints(dockerfiles=(("requarks/wiki:2", "dev/build/Dockerfile", "compose"),),
                       dockerfile_files=(("dev/build/Dockerfile", "node:24"),))
    found = image_dockerfile(hints, ["requarks/wiki:2"], {"wiki"})
    assert found is not None and not found.by_bare_name
    # an image without an owner is the compose service's own name
    hints = BuildHints(dockerfiles=(("wiki", "Dockerfile", "compose"),),
                       dockerfile_files=(("Dockerfile", "node:24"),))
    found = image_dockerfile(hints, ["wiki"], {"wiki"})
    assert found is not None and not found.by_bare_name
