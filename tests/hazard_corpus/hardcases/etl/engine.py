from sqlalchemy import create_engine

engine = create_engine(
    "postgresql+psycopg://etl@pgbouncer/etl",  # safe: PA405 connect_args turns prepares off
    connect_args={"prepare_threshold": None},
)
legacy = create_engine("postgresql+psycopg2://etl@pgbouncer/etl")  # safe: PA405 psycopg2 never prepares
