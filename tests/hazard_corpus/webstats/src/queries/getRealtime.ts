import { rawQuery } from "@/lib/prisma";

const REALTIME_QUERY = `
  select website_id, count(*) from website_event where created_at > {{startDate}} group by 1
`; // safe: plain query with template placeholders

export function getRealtime(websiteId: string) {
  return rawQuery(REALTIME_QUERY, { websiteId });
}

export const labels = ["Set filter", "Reset filter", "Execute report"]; // safe: UI labels
