"use strict";

module.exports = {
  async up(queryInterface) {
    await queryInterface.sequelize.query(`SET maintenance_work_mem = '1GB'`); // expect: PA401 migration SET
    await queryInterface.sequelize.query(`
      CREATE INDEX CONCURRENTLY documents_tsv_idx ON documents USING gin(search_vector);
    `); // safe: DDL
    await queryInterface.sequelize.query(
      "UPDATE documents SET search_vector = to_tsvector('english', title)" // safe: PA401 UPDATE ... SET
    );
  },
  async down(queryInterface) {
    await queryInterface.removeIndex("documents", "documents_tsv_idx");
  },
};
