"""pydantic settings fields as pool sizes (audit5 D3, tariron/saasodoo's services):
`create_pool(max_size=settings.db_pool_max_size)` with `class Settings(BaseSettings)`
is the field's variable from the container env, else its default; unknown when a
Secret or an envFrom source not held may set it."""

from __future__ import annotations

from pathlib import Path

from advisor.model import Container, EnvVar, Source
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root

CONFIG_V2 = '''from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    postgres_host: str = "localhost"
    db_name: str = "admin"
    db_service_user: str = "admin_service"
    db_pool_max_size: int = 20
    pool_min: int = Field(2, validation_alias="POOL_MIN_SIZE")
    model_config = SettingsConfigDict(env_prefix="ADMIN_", env_file=".env")

    @property
    def database_url(self) -> str:
        return f"postgresql://{self.db_service_user}@{self.postgres_host}/{self.db_name}"


settings = Settings()
'''

DB = '''import asyncpg
from sqlalchemy.ext.asyncio import create_async_engine
from app.config import settings


async def init():
    pool = await asyncpg.create_pool(dsn=settings.database_url,
                                     max_size=settings.db_pool_max_size)
    url = settings.database_url.replace("postgresql://", "postgresql+asyncpg://")
    engine = create_async_engine(url, pool_size=settings.pool_min,
                                 max_overflow=settings.db_pool_max_size - settings.pool_min)
    return pool, engine
'''

CONFIG_V1 = '''from typing import Optional
from pydantic_settings import BaseSettings


class DatabaseConfig(BaseSettings):
    pool_size: int = 10

    class Config:
        env_prefix = ""


_db: Optional[DatabaseConfig] = None


def get_db_config() -> DatabaseConfig:
    global _db
    if _db is None:
        _db = DatabaseConfig()
    return _db
'''

EMAIL = '''import asyncpg
from app.utils.config import get_db_config


class Email:
    async def pool(self):
        if self._pool is None:
            db_config = get_db_config()
            self._pool = await asyncpg.create_pool(host="db", max_size=db_config.pool_size)
        return self._pool
'''


def _app(tmp_path: Path, files: dict[str, str]):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "requirements.txt").write_text("asyncpg\nsqlalchemy\npydantic-settings\n")
    return scan_app_dir(Root.of(tmp_path), "")


def _container(*env: EnvVar) -> Container:
    return Container(name="app", env=env, source=Source(path="k8s/app.yaml", line=5))


def _var(name: str, value: str | None, line: int, ref: str | None = None) -> EnvVar:
    return EnvVar(name=name, value=value, source=Source(path="k8s/app.yaml", line=line),
                  from_ref=ref, secret=ref is not None and ref.startswith("secret"))


def test_a_settings_field_is_its_prefixed_variable_in_any_case_else_its_default(tmp_path):
    app = _app(tmp_path, {"app/config.py": CONFIG_V2, "app/db/database.py": DB})
    found = pools_for_container(_container(), app)
    assert found.unknown == [], found.unknown
    by_label = {p.label: p for p in found.pools}
    asyncpg = by_label["asyncpg create_pool max_size"]
    assert asyncpg.size.value == 20
    assert (asyncpg.size.source.path, asyncpg.size.source.line) == ("app/config.py", 9)
    # the @property DSN built from the fields is the route
    assert (asyncpg.route.host, asyncpg.route.dbname, asyncpg.route.user) == (
        "localhost", "admin", "admin_service")
    engine = next(p for p in found.pools if p.label.startswith("SQLAlchemy"))
    assert engine.size.value == 2 + (20 - 2)  # pool_size + max_overflow
    assert engine.route.user == "admin_service"

    # env_prefix + the field name, matched in any case; a validation alias has no prefix
    found = pools_for_container(_container(
        _var("admin_db_pool_max_size", "30", 11), _var("ADMIN_POSTGRES_HOST", "pooler", 12),
        _var("POOL_MIN_SIZE", "4", 13), _var("DB_POOL_MAX_SIZE", "99", 14)), app)
    by_label = {p.label: p for p in found.pools}
    asyncpg = by_label["asyncpg create_pool max_size"]
    assert asyncpg.size.value == 30 and asyncpg.size.source.line == 11
    assert asyncpg.route.host == "pooler"
    engine = next(p for p in found.pools if p.label.startswith("SQLAlchemy"))
    assert engine.size.value == 4 + (30 - 4)


def test_a_settings_field_from_a_secret_or_an_envfrom_not_held_is_unknown(tmp_path):
    app = _app(tmp_path, {"app/config.py": CONFIG_V2, "app/db/database.py": DB})
    secret = pools_for_container(_container(
        _var("ADMIN_DB_POOL_MAX_SIZE", None, 11, "secret:db/size")), app)
    assert not any(p.label == "asyncpg create_pool max_size" for p in secret.pools)
    assert any("ADMIN_DB_POOL_MAX_SIZE" in u for u in secret.unknown), secret.unknown
    # an envFrom Secret not in the repository, whose keys may set ADMIN_*
    env_from = pools_for_container(_container(_var("ADMIN_*", None, 9, "secret:app-env")), app)
    assert not any(p.label == "asyncpg create_pool max_size" for p in env_from.pools)
    # the source may or may not hold the key: "may be set", naming the source, not "is set"
    assert "asyncpg create_pool max_size: ADMIN_DB_POOL_MAX_SIZE may be set by Secret " \
        "app-env (envFrom with prefix ADMIN_, k8s/app.yaml:9), not in the repository" \
        in env_from.unknown, env_from.unknown
    assert not any(" is set by " in u for u in env_from.unknown), env_from.unknown
    # a secretKeyRef naming the key does set it
    assert "asyncpg create_pool max_size is set by ADMIN_DB_POOL_MAX_SIZE (k8s/app.yaml:11) " \
        "from a secret or reference whose value is not in the repository" in secret.unknown
    # a prefix the envFrom source does not cover leaves the default
    other = pools_for_container(_container(_var("REDIS_*", None, 9, "secret:redis")), app)
    assert any(p.label == "asyncpg create_pool max_size" and p.size.value == 20
               for p in other.pools)


def test_a_v1_config_and_a_getter_assigned_in_the_function_are_read(tmp_path):
    """notification-service's shape: `class Config: env_prefix = ""`, a getter annotated
    to return the class, and `db_config = get_db_config()` inside the method."""
    app = _app(tmp_path, {"app/utils/config.py": CONFIG_V1,
                          "app/services/email.py": EMAIL})
    found = pools_for_container(_container(_var("POOL_SIZE", "7", 12)), app)
    (pool,) = found.pools
    assert pool.size.value == 7 and pool.size.source.line == 12
    found = pools_for_container(_container(), app)
    (pool,) = found.pools
    assert pool.size.value == 10 and pool.size.source.path == "app/utils/config.py"


CONFIG_CACHED = '''from functools import lru_cache
from pydantic import Field
from pydantic_settings import BaseSettings


class Settings(BaseSettings):
    DATABASE_URL: str = Field(default="postgresql+asyncpg://app@postgres-service/app")
    DATABASE_POOL_SIZE: int = Field(default=20)
    DATABASE_MAX_OVERFLOW: int = Field(default=10)


@lru_cache
def get_settings() -> Settings:
    return Settings()
'''

MANAGER = '''from typing import Optional
from sqlalchemy.ext.asyncio import create_async_engine
from .config import Settings, get_settings


class DatabaseManager:
    def __init__(self, settings: Optional[Settings] = None):
        self.settings = settings or get_settings()
        self._engine = None

    @property
    def engine(self):
        if self._engine is None:
            self._engine = create_async_engine(
                self.settings.DATABASE_URL,
                pool_size=self.settings.DATABASE_POOL_SIZE,
                max_overflow=self.settings.DATABASE_MAX_OVERFLOW,
            )
        return self._engine


db_manager = DatabaseManager()
'''


def test_a_settings_field_held_by_an_instance_attribute_is_read(tmp_path):
    """audit21 D1 (10srav/Quantum-Inspired-Real-Time-Traffic-Logistics-Optimization):
    `self.settings = settings or get_settings()` in __init__, then
    `pool_size=self.settings.DATABASE_POOL_SIZE` in a method: the field's variable from
    the container (20 + 10 from its ConfigMap), not SQLAlchemy's 5 + 10 for 'not
    readable' (peak 315 printed for 630)."""
    app = _app(tmp_path, {"src/config.py": CONFIG_CACHED, "src/database.py": MANAGER,
                          "src/__init__.py": ""})
    found = pools_for_container(_container(), app)
    engine = next(p for p in found.pools if p.label.startswith("SQLAlchemy"))
    assert engine.size.value == 20 + 10
    assert engine.route.host == "postgres-service"
    found = pools_for_container(_container(_var("DATABASE_POOL_SIZE", "40", 11)), app)
    engine = next(p for p in found.pools if p.label.startswith("SQLAlchemy"))
    assert engine.size.value == 40 + 10
    # a parameter with no default is what a caller passes: not read
    unknown_arg = MANAGER.replace("settings: Optional[Settings] = None", "settings")
    app = _app(tmp_path, {"src/database.py": unknown_arg})
    found = pools_for_container(_container(), app)
    # unknown (PA106), never SQLAlchemy's 5 + 10, which does not apply to a pool_size
    # the code sets
    assert not any(p.label.startswith("SQLAlchemy") for p in found.pools)
    assert any("SQLAlchemy pool_size" in why and "not read statically" in why
               for why in found.unknown)


NESTED_CONFIG = '''from pydantic import Field
from pydantic_settings import BaseSettings


class EngineSettings(BaseSettings):
    sqlalchemy_pool_size: int = Field(50)
    sqlalchemy_max_overflow: int = Field(MAX_OVERFLOW)


class Settings(BaseSettings):
    engine: EngineSettings = Field(default_factory=EngineSettings)
    database_url: str = "postgresql+asyncpg://u@orders-db/orders"
'''

PROVIDER = '''from sqlalchemy.ext.asyncio import create_async_engine
from app.config.settings import Settings


class DatabaseProvider:
    def provide_engine(self, settings: Settings):
        return create_async_engine(
            settings.database_url,
            pool_size=settings.engine.sqlalchemy_pool_size,
            max_overflow=settings.engine.sqlalchemy_max_overflow,
        )
'''


def test_a_nested_settings_object_of_a_settings_typed_parameter_is_read(tmp_path):
    """serker72/test-payment-processing-service-ca: a DI provider's `settings: Settings`
    parameter, its `sqlalchemy: SQLAlchemySettings = Field(default_factory=...)` nested
    settings, `pool_size=settings.sqlalchemy.sqlalchemy_pool_size` (50) and max_overflow
    -1: the pool is unbounded; it was SQLAlchemy's 5 + 10 ("not readable", a notice)."""
    unbounded = NESTED_CONFIG.replace("MAX_OVERFLOW", "-1")
    app = _app(tmp_path, {"app/config/settings.py": unbounded, "app/db/provider.py": PROVIDER})
    (pool,) = pools_for_container(_container(), app).pools
    assert pool.bound == "unbounded" and pool.size.value == 50
    # the nested class reads its own variables
    app = _app(tmp_path, {"app/config/settings.py": NESTED_CONFIG.replace("MAX_OVERFLOW", "5"),
                          "app/db/provider.py": PROVIDER})
    (pool,) = pools_for_container(_container(_var("SQLALCHEMY_POOL_SIZE", "12", 7)), app).pools
    assert pool.size.value == 12 + 5
