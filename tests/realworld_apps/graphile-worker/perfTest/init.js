const { Pool } = require("pg");
const pool = new Pool({ connectionString: process.env.PERF_DATABASE_URL, max: 50 });
module.exports = pool;
