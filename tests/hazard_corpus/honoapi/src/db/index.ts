import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";

import env from "@/env";

// named prepared statements unless prepare is turned off
const queryClient = postgres(env.DATABASE_URL, { // expect: PA405 postgres.js default prepare: true
  max: 10,
  idle_timeout: 10,
});

export const db = drizzle(queryClient);
