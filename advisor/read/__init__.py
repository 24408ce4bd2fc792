"""Stage 1, reading: walk the repository (discover, fs), parse what is there
(sources: manifests, postgresql.conf, pgbouncer.ini, operators), render Helm charts and
kustomize overlays (render), read application pool settings (apps) and the SQL they
send (sql), and turn pod templates into workloads. What each file parses to is kept
by content hash between runs (cache)."""
