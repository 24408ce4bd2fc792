"""The `advise` command family: the plan that makes every server fit (plan), the
proposed PgBouncer (pooler), edits at file:line and their unified diff (edits), and
the trial check that shows where the plan ends (trial)."""
