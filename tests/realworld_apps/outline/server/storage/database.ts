import { Sequelize } from "sequelize-typescript";
import env from "../env";

const poolMax = env.DATABASE_CONNECTION_POOL_MAX ?? 5;
const databaseConfig = env.DATABASE_CONNECTION_POOL_URL || env.DATABASE_URL;

export function createDatabaseInstance(input: object): Sequelize {
  const commonOptions = {
    pool: {
      max: poolMax,
      min: 0,
      acquire: 30000,
    },
  };
  let instance;
  if (typeof databaseConfig === "string") {
    instance = new Sequelize(databaseConfig, commonOptions);
  } else {
    instance = new Sequelize({ ...databaseConfig, ...commonOptions });
  }
  return instance;
}
