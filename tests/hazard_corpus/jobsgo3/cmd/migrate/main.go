package main

import (
	"log"
	"os"

	gomigrate "github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/source/file"
)

// The postgres driver is registered by internal/db (register.go): the URL's scheme
// picks it, and Up takes its pg_advisory_lock.
func main() {
	m, err := gomigrate.New("file://migrations", os.Getenv("DATABASE_URL")) // expect: PA403 golang-migrate's postgres driver (registered in internal/db) takes pg_advisory_lock
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Up(); err != nil && err != gomigrate.ErrNoChange {
		log.Fatal(err)
	}
}
