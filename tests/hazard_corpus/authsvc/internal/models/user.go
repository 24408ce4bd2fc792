package models

const findUserQuery = `SELECT * FROM auth.users WHERE email = ? LIMIT 1` // safe: plain query

var messages = map[string]string{
	"set":   "Set password",   // safe: message
	"begin": "Begin sign-in", // safe: message
}

func (u *User) lock(tx *storage.Connection) error {
	return tx.RawQuery(`SELECT pg_advisory_xact_lock(hashtext(?))`, u.ID).Exec() // safe: PA403 xact lock
}
