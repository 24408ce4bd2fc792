import { PrismaClient, Prisma } from "@prisma/client";

const client = new PrismaClient();

function getSchema() {
  return new URL(process.env.DATABASE_URL).searchParams.get("schema");
}

export async function rawQuery(sql: string, data: object) {
  const schema = getSchema();
  if (schema) {
    await client.$executeRawUnsafe(`SET search_path TO "${schema}";`); // expect: PA401 SET search_path leaks to the next client
  }
  return client.$queryRawUnsafe(sql, data);
}

export async function timeout() {
  await client.$executeRaw`SET statement_timeout = 5000`; // expect: PA401 tagged $executeRaw SET
  await client.$executeRaw`SET LOCAL statement_timeout = 5000`; // safe: PA401 SET LOCAL
  return client.$queryRaw(Prisma.sql`SELECT pg_try_advisory_lock(${1})`); // expect: PA403 Prisma.sql session lock
}

export const MESSAGES = {
  reset: "Reset website data", // safe: UI message
  begin: "Begin tracking", // safe: UI message
};
