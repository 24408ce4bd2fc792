package storage

import (
	"github.com/gobuffalo/pop/v6"
	"github.com/sirupsen/logrus"
)

// Dial opens the pop connection (pgx v4 stdlib underneath).
func Dial(url string, pool int) (*pop.Connection, error) {
	cd := &pop.ConnectionDetails{Dialect: "postgres", URL: url, Pool: pool}
	db, err := pop.NewConnection(cd) // expect: PA405 pop opens PostgreSQL through pgx v4: prepared statement cache
	if err != nil {
		logrus.Warn("Set DATABASE_URL to a postgres URL") // safe: log message
		return nil, err
	}
	return db, db.Open()
}
