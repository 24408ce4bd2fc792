import { Pool } from "pg";

export function makePool(connectionString: string, maxPoolSize = 10) {
  return new Pool({ connectionString, max: maxPoolSize });
}
