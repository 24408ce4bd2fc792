test("listen", async () => {
  await client.query("LISTEN test"); // safe: PA402 tests not scanned
});
