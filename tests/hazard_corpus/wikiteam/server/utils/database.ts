import { Sequelize } from "sequelize-typescript";
import env from "@server/env";

export const sequelize = new Sequelize(env.DATABASE_URL, {
  logging: false,
  dialectOptions: { application_name: "outline" },
});

export async function setStatementTimeout(ms: number) {
  await sequelize.query(`SET statement_timeout = ${ms}`); // expect: PA401 template-literal SET through sequelize.query
}

export async function withLock<T>(key: number, fn: () => Promise<T>) {
  await sequelize.query("SELECT pg_advisory_lock(:key)", { replacements: { key } }); // expect: PA403 session lock
  try {
    return await fn();
  } finally {
    await sequelize.query("SELECT pg_advisory_unlock(:key)", { replacements: { key } }); // expect: PA403 unlock
  }
}

export async function withTxLock<T>(key: number, fn: () => Promise<T>) {
  return sequelize.transaction(async (transaction) => {
    await sequelize.query("SELECT pg_advisory_xact_lock(:key)", { replacements: { key }, transaction }); // safe: PA403 xact lock
    return fn();
  });
}
