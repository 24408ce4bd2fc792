alter table :GRAPHILE_WORKER_SCHEMA.jobs add column revision int default 0 not null;
create function :GRAPHILE_WORKER_SCHEMA.add_job(identifier text) returns :GRAPHILE_WORKER_SCHEMA.jobs as $$
declare
  v_job :GRAPHILE_WORKER_SCHEMA.jobs;
begin
  -- isn't it nice: an apostrophe inside the body
  select * into v_job from :GRAPHILE_WORKER_SCHEMA.jobs limit 1;
  return v_job;
end;
$$ language plpgsql volatile set search_path to pg_catalog, public, pg_temp; -- safe: PA401 function-scoped SET
set search_path to :GRAPHILE_WORKER_SCHEMA, public; -- expect: PA401 session SET with a psql-style variable
