import { Client } from "pg";
import Logger from "@server/logging/Logger";

export default class NotificationsProcessor {
  async listen(client: Client) {
    await client.query("LISTEN notifications"); // expect: PA402 LISTEN on a pooled connection
    Logger.info("processor", "Listen started"); // safe: log message
    await client.query({ name: "fetch-notification", text: "SELECT * FROM notifications WHERE id = $1", values: [1] }); // expect: PA405 node-postgres named query
    await client.query({ text: "SELECT * FROM notifications WHERE id = $1", values: [2] }); // safe: PA405 unnamed query config
  }
}
