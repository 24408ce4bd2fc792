package indexworker

import (
	"fmt"

	"github.com/gobuffalo/pop/v6"
)

func lockName(ns string) string { return ns + "_index_worker" }

func Run(db *pop.Connection, ns string) error {
	lockQuery := fmt.Sprintf("SELECT pg_try_advisory_lock(hashtext('%s')::bigint)", lockName(ns)) // expect: PA403 Sprintf session lock reaching RawQuery
	var ok bool
	if err := db.RawQuery(lockQuery).First(&ok); err != nil {
		return err
	}
	defer db.RawQuery(fmt.Sprintf("SELECT pg_advisory_unlock(hashtext('%s')::bigint)", lockName(ns))).Exec() // expect: PA403 unlock
	return db.RawQuery("SELECT 1").Exec() // safe: plain query
}
