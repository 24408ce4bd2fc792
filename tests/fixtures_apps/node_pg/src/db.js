// Primary and read-replica pools.
const { Pool } = require('pg');

const MAX_CONNECTIONS = Number(process.env.PG_POOL_MAX) || 10;

const primary = new Pool({
  connectionString: process.env.DATABASE_URL,
  max: MAX_CONNECTIONS,
  idleTimeoutMillis: 30000,
});

const replica = new Pool({
  connectionString: process.env.REPLICA_URL,
  // max not set: pg-pool default
});

module.exports = { primary, replica };
