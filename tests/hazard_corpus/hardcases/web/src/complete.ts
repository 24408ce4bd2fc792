export async function completeBatch(client, schema, ids) {
  await client.query({
    text: `prepare cj (bigint) as delete from ${schema}.jobs where id = $1;
${ids.map((id) => `execute cj(${id});`).join("\n")}
deallocate cj;`, // safe: PA404 PREPARE/EXECUTE/DEALLOCATE in one simple-protocol message run on one server
  });
}
