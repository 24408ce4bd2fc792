const knex = require("knex")({ client: "pg", connection: process.env.DATABASE_URL });

async function forTenant(schema) {
  await knex.raw("SET search_path = ??", [schema]); // expect: PA401 knex identifier binding
  await knex.raw("select ?? from ?? where id = ?", ["name", "users", 1]); // safe: plain query
  return knex.schema.raw("SET LOCAL search_path = app"); // safe: PA401 SET LOCAL
}

const statusText = { reset: "Reset", declare: "Declare winner" }; // safe: labels
module.exports = { forTenant, statusText };
