package database

import (
	"database/sql"

	_ "github.com/lib/pq"
)

// NewConnectionPool opens lib/pq: unnamed statements only.
func NewConnectionPool(dsn string, minConns, maxConns int) (*sql.DB, error) {
	db, err := sql.Open("postgres", dsn) // safe: PA405 lib/pq uses the unnamed statement
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(maxConns)
	return db, nil
}
