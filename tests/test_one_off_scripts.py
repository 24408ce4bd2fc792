"""Audit 13f N1 / audit 41: one-off Python scripts beside a FastAPI backend (seed_*.py,
check_*.py, scripts/*.py run from a laptop with `python FILE`) are code no workload
runs: they meet no pooler of the repository and are not checked against it. A script a
container's command names, or a module the application imports, still is."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.test_sqlalchemy_asyncpg_engine import BACKEND, BOUNCER, DATABASE_PY
from tests.tree_helpers import write

pytest.importorskip("pglast")

SEED = """\
import asyncio, os, sys
sys.path.insert(0, ".")
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool


async def main():
    engine = create_async_engine(os.environ["DATABASE_URL"], poolclass=NullPool,
        connect_args={"statement_cache_size": 0, "command_timeout": 30})
    print("Run check_rows.py next")


if __name__ == "__main__":
    asyncio.run(main())
"""

CHECK = SEED.replace('if __name__ == "__main__":\n    ', "")


def _run(tmp_path: Path, extra: dict[str, str], cmd: str = '["uvicorn", "app.main:app"]'):
    url = "{name: DATABASE_URL, valueFrom: {secretKeyRef: {name: s, key: DATABASE_URL}}}"
    write(tmp_path, {
        "k8s/pgbouncer.yaml": BOUNCER,
        "k8s/backend.yaml": BACKEND.format(url=url),
        "backend/Dockerfile": f"FROM python:3.12-slim\nCOPY . /app\nCMD {cmd}\n",
        "backend/requirements.txt": "sqlalchemy==2.0.36\nasyncpg==0.30.0\n",
        "backend/database.py": DATABASE_PY,
        "backend/app/main.py": "from database import engine\n",
        **extra,
    })
    result = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    found = sorted((f.code, f.location.path) for f in result.findings
                   if f.code.startswith("PA4"))
    return found, [n for n in result.notices if "one-off" in n]


def test_scripts_no_workload_runs_are_not_checked(tmp_path):
    found, notices = _run(tmp_path, {"backend/seed_users.py": SEED,
                                     "backend/check_rows.py": CHECK,
                                     "backend/scripts/fix_codes.py": SEED})
    # the application's own engine is still checked
    assert ("PA405", "backend/database.py") in found
    assert not [f for f in found if "seed" in f[1] or "check" in f[1] or "scripts" in f[1]]
    [notice] = notices
    assert "backend/check_rows.py, backend/scripts/fix_codes.py, backend/seed_users.py" \
        in notice and "3 pooling hazard(s)" in notice


def test_a_script_the_container_runs_or_the_app_imports_is_checked(tmp_path):
    found, notices = _run(tmp_path, {"backend/worker.py": SEED},
                          cmd='["python", "worker.py"]')
    assert ("PA405", "backend/worker.py") in found and notices == []
    found, notices = _run(tmp_path, {"backend/worker.py": SEED,
                                     "backend/app/main.py": "from worker import main\n"})
    assert ("PA405", "backend/worker.py") in found and notices == []
