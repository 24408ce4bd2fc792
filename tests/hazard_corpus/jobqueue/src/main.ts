import { Pool, PoolClient } from "pg";

const LISTEN_SQL = 'LISTEN "jobs:insert"; LISTEN "worker:migrate";'; // expect: PA402 LISTEN constant named *SQL
const UNLISTEN_SQL = 'UNLISTEN "jobs:insert"; UNLISTEN "worker:migrate";'; // expect: PA402 UNLISTEN

export async function listenForChanges(pool: Pool) {
  const client: PoolClient = await pool.connect();
  await client.query(LISTEN_SQL);
  client.on("notification", () => {
    console.log("Listen triggered"); // safe: log message
  });
  return () => client.query(UNLISTEN_SQL);
}

export async function getJob(client: PoolClient, workerId: string) {
  return client.query({
    name: "get_job", // expect: PA405 node-postgres named query
    text: "select * from graphile_worker.get_job($1)",
    values: [workerId],
  });
}

export async function completeJob(client: PoolClient, id: string) {
  return client.query({ text: "select graphile_worker.complete_job($1)", values: [id] }); // safe: PA405 no name
}
