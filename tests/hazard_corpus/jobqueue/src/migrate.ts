import { PoolClient } from "pg";

export async function migrate(client: PoolClient, schema: string) {
  await client.query("begin"); // safe: PA409 transaction mode: blocks are fine
  await client.query(`select pg_advisory_xact_lock(${0x7757})`); // safe: PA403 xact lock
  await client.query(`set local search_path to ${schema}`); // safe: PA401 SET LOCAL
  await client.query("commit"); // safe: commit
}

export async function lockForever(client: PoolClient) {
  await client.query("select pg_advisory_lock(1234)"); // expect: PA403 session lock
}
