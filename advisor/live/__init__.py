"""Commands that talk to live systems: inspect a running PgBouncer/PostgreSQL
(inspect, repo), read a cluster (cluster), measure throughput at several client
counts (sweep) and fit the Universal Scalability Law to it (usl)."""
