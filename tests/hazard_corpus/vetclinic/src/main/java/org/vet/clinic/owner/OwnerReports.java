package org.vet.clinic.owner;

import org.springframework.jdbc.core.JdbcTemplate;

class OwnerReports {
    private static final String TITLE = "Reset owner report"; // safe: label
    private static final String TIMEOUT_SQL = "SET statement_timeout = 60000"; // expect: PA401 constant named *SQL
    private final JdbcTemplate jdbc;

    void run(String schema) {
        jdbc.execute(TIMEOUT_SQL);
        jdbc.execute("SET search_path TO " + schema); // expect: PA401 concatenated SET
        jdbc.queryForList("SELECT * FROM owners WHERE city = ?", "Madison"); // safe: plain query
        jdbc.update("CREATE TEMP TABLE owner_report (id int)"); // expect: PA406 temp table
        log.info("Begin report for " + schema); // safe: log
    }
}
