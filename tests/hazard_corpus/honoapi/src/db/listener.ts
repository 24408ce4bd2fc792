import postgres from "postgres";

// a second client for the pooler, with preparing off as its README says
export const pooled = postgres(process.env.POOLED_URL!, { max: 2, prepare: false }); // safe: PA405 prepare: false
