import { sequelize } from "@server/utils/database";

it("locks", async () => {
  await sequelize.query("SELECT pg_advisory_lock(1)"); // safe: PA403 tests not scanned
});
