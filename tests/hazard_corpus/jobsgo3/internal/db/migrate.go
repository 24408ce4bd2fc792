package db

import (
	"database/sql"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/postgres" // safe: importing the driver takes no lock; its use below does
	_ "github.com/jackc/pgx/v5/stdlib"
)

func Migrate(url string) error {
	db, err := sql.Open("pgx", url) // expect: PA405 database/sql over pgx stdlib: cache_statement
	if err != nil {
		return err
	}
	driver, err := postgres.WithInstance(db, &postgres.Config{})
	if err != nil {
		return err
	}
	m, _ := migrate.NewWithDatabaseInstance("file://migrations", "postgres", driver) // expect: PA403 golang-migrate takes pg_advisory_lock when it migrates
	return m.Up()
}
