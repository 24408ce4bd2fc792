package db

import (
	"database/sql"

	_ "github.com/golang-migrate/migrate/v4/database/postgres" // safe: a blank import registers the postgres:// scheme; nothing here migrates
)

// Open is the connection the handlers use; migrations run in migrate.go and cmd/.
func Open(url string) (*sql.DB, error) {
	return sql.Open("postgres", url)
}
