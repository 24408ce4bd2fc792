const { Pool } = require("pg");
const pool = new Pool({ max: 40 });
module.exports = pool;
