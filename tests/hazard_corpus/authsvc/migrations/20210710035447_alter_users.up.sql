ALTER TABLE auth.users ADD COLUMN IF NOT EXISTS phone_change text NULL DEFAULT '';
SET statement_timeout = '1min'; -- expect: PA401 session SET in a migration
COMMENT ON COLUMN auth.users.phone_change IS 'Set on phone change'; -- safe: comment text
