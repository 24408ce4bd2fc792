-- backfill email identities
do $$
begin
  update {{ index .Options "Namespace" }}.identities set last_sign_in_at = now();
end $$;
SET search_path = {{ index .Options "Namespace" }}; -- safe: PA401 templated SQL (Go template): skipped with a notice
