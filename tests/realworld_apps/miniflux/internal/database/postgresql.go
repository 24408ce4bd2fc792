package database

import (
	"database/sql"
	"time"

	_ "github.com/lib/pq"
)

func NewConnectionPool(dsn string, minConnections, maxConnections int, lifetime time.Duration) (*sql.DB, error) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(maxConnections)
	db.SetMaxIdleConns(minConnections)
	db.SetConnMaxLifetime(lifetime)
	return db, nil
}
