const { Sequelize } = require("sequelize");

const sequelize = new Sequelize(process.env.DB_NAME, process.env.DB_USER, process.env.DB_PASS, {
  host: process.env.DB_HOST,
  dialect: "postgres",
  pool: { max: parseInt(process.env.DB_POOL_MAX ?? "8", 10), min: 0, idle: 10000 },
  logging: false,
});

module.exports = sequelize;
