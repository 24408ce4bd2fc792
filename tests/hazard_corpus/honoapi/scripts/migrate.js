const { drizzle } = require("drizzle-orm/postgres-js");
const { migrate } = require("drizzle-orm/postgres-js/migrator");
const postgres = require("postgres");

async function main() {
  const sql = postgres(process.env.DATABASE_URL + "?prepare=false", { max: 1 }); // safe: PA405 ?prepare=false in the URL
  await migrate(drizzle(sql), { migrationsFolder: "./migrations" });
  await sql.end();
}

function postgresUrl() { // safe: not the driver
  return process.env.DATABASE_URL;
}

main();
