package db

import (
	"database/sql"
	"os"

	_ "github.com/lib/pq"
)

// Open connects to the notifications database. Connections are opened on demand.
func Open() (*sql.DB, error) {
	db, err := sql.Open("postgres", os.Getenv("DATABASE_URL"))
	if err != nil {
		return nil, err
	}
	db.SetMaxIdleConns(5)
	return db, nil
}
