/* eslint-disable no-console */
const { PrismaClient } = require("@prisma/client");

const prisma = new PrismaClient();

async function checkV1Tables() {
  console.log("Execute migration check"); // safe: log message
  await prisma.$executeRawUnsafe("SET lock_timeout = '2s'"); // expect: PA401 session SET from the start-up check script
  await prisma.$queryRaw`select * from _prisma_migrations where migration_name = '01_init'`; // safe: plain query
}

checkV1Tables();
