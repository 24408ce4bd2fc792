import "reflect-metadata";
import { DataSource } from "typeorm";
import { Order } from "./entity/Order";

export const AppDataSource = new DataSource({
  type: "postgres",
  url: process.env.DATABASE_URL,
  entities: [Order],
  poolSize: 12,
  extra: {
    max: 25,
    idleTimeoutMillis: 10_000,
  },
  synchronize: false,
});
