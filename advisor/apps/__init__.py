"""Application connection pools: which pools a container's processes open, how big
each is, and where every number was written (or which library default applied).

    app = scan_app_dir(root, "services/checkout")      # I/O: read the source files
    found = pools_for_container(container, app)        # pure
    found.pools  -> [Pool(label="HikariCP maximumPoolSize", size=20 (application.yml:7))]

One small module per stack; each reader takes a StackContext and returns Pools.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from advisor.apps.asyncpg import asyncpg_pools
from advisor.apps.base import StackContext
from advisor.apps.django import django_pools
from advisor.apps.ecto import ecto_pools
from advisor.apps.go_sql import go_sql_pools
from advisor.apps.hikari import hikari_pools
from advisor.apps.knex import knex_pools
from advisor.apps.node_pg import node_pg_pools
from advisor.apps.npgsql import npgsql_pools
from advisor.apps.pgx import pgx_pools
from advisor.apps.prisma import prisma_pools
from advisor.apps.psycopg_pool import psycopg_pools
from advisor.apps.quarkus import quarkus_pools
from advisor.apps.rails import rails_pools
from advisor.apps.sequelize import sequelize_pools
from advisor.apps.source import AppFile, AppSource, scan_app_dir
from advisor.apps.sqlalchemy import sqlalchemy_pools
from advisor.apps.typeorm import typeorm_pools
from advisor.apps.urls import route_from_env, route_from_url
from advisor.model import ConfigProblem, Container, Pool

__all__ = [
    "AppFile",
    "AppPools",
    "AppSource",
    "pools_for_container",
    "route_from_env",
    "route_from_url",
    "scan_app_dir",
]

Reader = Callable[[StackContext], list[Pool]]

READERS: tuple[tuple[str, Reader], ...] = (
    ("hikari", hikari_pools),
    ("sqlalchemy", sqlalchemy_pools),
    ("django", django_pools),
    ("psycopg_pool", psycopg_pools),
    ("asyncpg", asyncpg_pools),
    ("node-postgres", node_pg_pools),
    ("sequelize", sequelize_pools),
    ("knex", knex_pools),
    ("typeorm", typeorm_pools),
    ("prisma", prisma_pools),
    ("pgx", pgx_pools),
    ("database/sql", go_sql_pools),
    ("rails", rails_pools),
    ("npgsql", npgsql_pools),
    ("ecto", ecto_pools),
    ("quarkus", quarkus_pools),
)


class AppPools(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pools: list[Pool] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list)
    problems: list[ConfigProblem] = Field(default_factory=list)

    @property
    def default_applied(self) -> list[Pool]:
        return [p for p in self.pools if p.bound == "default"]

    @property
    def unbounded(self) -> list[Pool]:
        return [p for p in self.pools if p.bound == "unbounded"]

    @property
    def cpu_dependent(self) -> list[Pool]:
        return [p for p in self.pools if p.bound == "cpu"]

    def per_pod(self) -> float:
        return sum(p.per_pod() for p in self.pools)


def pools_for_container(container: Container, app: AppSource | None = None, *,
                        profile: str | None = None, node_cpus: int | None = None) -> AppPools:
    """Every pool the container's processes open, from its env/args and its app source.
    `profile` (e.g. a Spring profile from configuration) beats what the env says.
    `node_cpus` sizes CPU-derived defaults (pgx, Prisma, cpu_count() workers); without
    it 4 CPUs are assumed and the pool says so (bound="cpu", cpus term)."""
    ctx = StackContext(container=container, app=app, profile=profile, node_cpus=node_cpus)
    pools: list[Pool] = []
    for _, reader in READERS:
        pools.extend(reader(ctx))
    problems = list(app.problems) if app is not None else []
    notices = list(app.notices) if app is not None else []
    return AppPools(pools=pools, notices=notices + ctx.notices, problems=problems + ctx.problems)
