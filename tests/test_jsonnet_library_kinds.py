"""`.jsonnet` files no Argo CD Application renders that name no kind themselves but call
a library of the repository that does. koskev/k8s (audit 15 D4): forgejo.jsonnet,
immich.jsonnet, ... build their CloudNativePG Clusters and apps through `import
'k8s.libsonnet'` (lib/, passed as `-J lib` by the Makefile): the PA901 named only the 6
files with a literal `kind:`, the ~55 others were neither read nor said; a repository of
only such files printed "no PostgreSQL server found", exit 0."""

from __future__ import annotations

from typer.testing import CliRunner

from advisor.cli import app
from tests.tree_helpers import write

CNPG = """\
{
  cluster(name):: {
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'Cluster',
    metadata: { name: name },
    spec: { instances: 1 },
  },
}
"""


def _repo(tmp_path):
    return write(tmp_path, {
        "lib/k8s.libsonnet": "{\n  db:: import 'database/cnpg.libsonnet',\n}\n",
        "lib/database/cnpg.libsonnet": CNPG,
        "apps/forge/forge.jsonnet": "local k8s = import 'k8s.libsonnet';\n"
                                    "[k8s.db.cluster('forge')]\n",
        "apps/notes/notes.jsonnet": "local k8s = import '../../lib/k8s.libsonnet';\n"
                                    "[k8s.db.cluster('notes')]\n",
        "tools/renovate.jsonnet": "{ extends: ['config:base'] }\n"})


def test_files_building_servers_through_a_library_are_said(tmp_path):
    root = _repo(tmp_path)
    result = CliRunner().invoke(app, ["check", "--no-cache", "--root", str(root), str(root)])
    assert result.exit_code == 1, result.output  # before: no server found, exit 0
    assert "PA901 [warning] 2 .jsonnet files (apps/forge/forge.jsonnet, " \
           "apps/notes/notes.jsonnet) describe Kubernetes objects (Cluster)" in result.output
    assert "renovate" not in result.output
