from alembic import op

revision = "7205816877ec"


def upgrade():
    op.execute("SET statement_timeout TO 0")  # expect: PA401 alembic migration SET through the pooler
    op.execute(
        """
        ALTER TABLE queries ALTER COLUMN options TYPE jsonb USING options::jsonb
        """  # safe: DDL
    )
    op.execute("SET LOCAL lock_timeout TO '4s'")  # safe: PA401 SET LOCAL


def downgrade():
    op.execute("RESET statement_timeout")  # expect: PA401 RESET
