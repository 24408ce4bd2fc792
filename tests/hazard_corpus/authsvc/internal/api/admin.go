package api

import "net/http"

func (a *API) adminUserDeleteFactor(w http.ResponseWriter, r *http.Request) error {
	return badRequestError(ErrorCodeValidationFailed, "Reset MFA factor failed") // safe: error message
}

func (a *API) setTimeout(tx *storage.Connection) error {
	return tx.RawQuery("SET LOCAL statement_timeout = '5s'").Exec() // safe: PA401 SET LOCAL
}

func (a *API) setRole(tx *storage.Connection, role string) error {
	return tx.RawQuery("SET ROLE " + role).Exec() // expect: PA401 SET ROLE concatenated
}
