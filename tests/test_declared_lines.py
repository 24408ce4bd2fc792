"""The numbers of a configuration file's `[[servers]]` and `[[workloads]]` blocks are
cited at their line (audit s22: `100 (max_connections, .pool-advisor.toml)` said no line;
every number must trace to a file:line)."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions

CONFIG = """\
# two servers: the second's lines are its own, not the first block's
[[servers]]
name = "other"
hosts = ["other.example.com"]
max_connections = 50

[[servers]]
name = "orders"
hosts = ["orders.example.com"]
instances = 1
max_connections = 120
superuser_reserved_connections = 5

[servers.settings]
work_mem = "8MB"

[[workloads]]
name = "api"
pool-size = 7
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 2
  strategy:
    rollingUpdate:
      maxSurge: 0
  template:
    spec:
      containers:
        - name: api
          image: example/api:1
          env:
            - name: DATABASE_URL
              value: postgres://u:p@orders.example.com:5432/orders
"""


def _line(text: str, start: str, after: int = 0) -> int:
    lines = text.splitlines()
    return next(n for n, line in enumerate(lines, 1) if n > after and line.startswith(start))


def test_declared_server_and_workload_numbers_cite_their_lines(tmp_path: Path) -> None:
    (tmp_path / ".pool-advisor.toml").write_text(CONFIG)
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "api.yaml").write_text(DEPLOYMENT)
    result = run_check([tmp_path], CheckOptions(cache=False))
    (budget,) = [b for b in result.budgets if b.server == "orders"]
    second = _line(CONFIG, 'name = "orders"')
    mc = budget.max_connections
    assert (mc.value, mc.source.path, mc.source.line) == (
        120, ".pool-advisor.toml", _line(CONFIG, "max_connections", second))
    server = next(s for s in scan([tmp_path], CheckOptions(cache=False)).topology.servers
                  if s.name == "orders")
    reserved = server.settings["superuser_reserved_connections"]
    assert reserved.source.line == _line(CONFIG, "superuser_reserved_connections")
    assert server.settings["work_mem"].source.line == _line(CONFIG, "work_mem")
    assert server.instances.source.line == _line(CONFIG, "instances")
    (api,) = [c for c in budget.contributions if c.who == "api"]
    size = next(f for f in api.factors if f.label == "declared pool size")
    assert (size.value, size.source.line) == (7, _line(CONFIG, "pool-size"))
