StrongMigrations.start_after = 20_230_101_000_000
StrongMigrations.lock_timeout = 10.seconds # expect: PA401 strong_migrations runs SET lock_timeout in every migration
StrongMigrations.statement_timeout = 1.hour # expect: PA401 SET statement_timeout in every migration
# StrongMigrations.lock_timeout = 5.seconds  (safe: a comment, not code)
StrongMigrations.auto_analyze = true # safe: no SET
