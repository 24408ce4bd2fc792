"""asyncpg: which calls named create_pool are asyncpg's (a worker's own wrapper is not)."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product

WRAPPER = '''import os
import asyncpg

POOL_MAX_SIZE = int(os.getenv("WORKER_POOL_MAX_SIZE", "3"))


async def create_pool() -> asyncpg.Pool:
    return await asyncpg.create_pool(os.environ["DATABASE_URL"], max_size=POOL_MAX_SIZE)


async def main() -> None:
    async def _with_retry() -> asyncpg.Pool:
        return await create_pool()

    pool = await _with_retry()
'''


def _found(tmp_path: Path, files: dict[str, str], env: dict[str, str] | None = None):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "requirements.txt").write_text("asyncpg==0.29.0\n")
    app = scan_app_dir(Root.of(tmp_path), "")
    return pools_for_container(container(
        env={"DATABASE_URL": "postgresql://u@db:5432/app", **(env or {})},
        args=("python", "-u", "worker.py")), app)


def test_own_create_pool_wrapper_is_not_a_second_pool(tmp_path):
    # the call inside the wrapper is asyncpg's (3, or the env's 5); the bare create_pool()
    # calls the wrapper, not asyncpg with its default 10
    found = _found(tmp_path, {"worker.py": WRAPPER}, {"WORKER_POOL_MAX_SIZE": "5"})
    assert product(found.pools) == "1 x 5 = 5"
    assert found.default_applied == []


def test_create_pool_imported_from_asyncpg_or_through_an_alias_counts(tmp_path):
    found = _found(tmp_path, {"worker.py": (
        "import asyncpg as apg\nfrom asyncpg import create_pool as make\n"
        "async def main():\n"
        "    a = await apg.create_pool('postgresql://u@db/app', max_size=4)\n"
        "    b = await make('postgresql://u@db/app')\n")})
    assert product(found.pools) == "1 x 4 + 1 x 10 = 14"
