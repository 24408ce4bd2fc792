package database

import "database/sql"

var migrations = []func(tx *sql.Tx) error{
	func(tx *sql.Tx) (err error) {
		sql := `
			CREATE TABLE schema_version (version text not null);
			CREATE TABLE users (id serial not null, username text not null unique);
		` // safe: DDL
		_, err = tx.Exec(sql)
		return err
	},
	func(tx *sql.Tx) (err error) {
		sql := `SET lock_timeout = '10s'; ALTER TABLE entries ADD COLUMN starred bool default 'f';` // expect: PA401 session SET in a migration
		_, err = tx.Exec(sql)
		return err
	},
	func(tx *sql.Tx) (err error) {
		_, err = tx.Exec(`CREATE TEMPORARY TABLE entry_ids AS SELECT id FROM entries`) // expect: PA406 temp table
		return err
	},
}
