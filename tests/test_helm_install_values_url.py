"""A `helm install ... --values <GitHub URL>` whose URL is a file this repository holds
at that path reads that file. Audit 47 D5 (zitadel/zitadel-charts
examples/1-postgres-insecure/README.md:18: `helm install --wait db bitnami/postgresql
--values https://raw.githubusercontent.com/zitadel/zitadel-charts/main/examples/
1-postgres-insecure/postgres-values.yaml`): the check said "its values <URL> not in the
repository: what they set is not known", a false reason; the file is in the repository.
Written in that README's shape (here outside an examples folder, so the server is built)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

URL = "https://raw.githubusercontent.com/acme/idp-charts/main/deploy/postgres-values.yaml"
README = f"""\
# Install

```bash
helm repo add bitnami https://charts.bitnami.com/bitnami
helm install --wait db bitnami/postgresql --version 16.7.4 --values {URL}
```
"""
VALUES = """\
primary:
  extendedConfiguration: |
    max_connections = 40
"""


def test_a_github_url_of_a_file_here_is_that_file(tmp_path):
    write(tmp_path, {"README.md": README, "deploy/postgres-values.yaml": VALUES})
    r = run_check([tmp_path], CheckOptions(root=tmp_path))
    assert not [f for f in r.findings if "not in the repository" in f.message]
    (budget,) = r.budgets
    assert budget.server == "db-postgresql"
    assert budget.max_connections.value == 40
    assert budget.max_connections.source.path == "deploy/postgres-values.yaml"


def test_a_url_of_a_file_not_here_is_still_not_read(tmp_path):
    write(tmp_path, {"README.md": README.replace("deploy/postgres-values", "other/values")})
    r = run_check([tmp_path], CheckOptions(root=tmp_path))
    (pa901,) = [f for f in r.findings if f.code == "PA901"]
    assert "not in the repository" in pa901.message
