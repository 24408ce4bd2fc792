package svc

func (s *Session) UpdateAAL(tx *Connection, aal string) error {
	return tx.RawQuery("UPDATE "+(&Model{Value: Session{}}).TableName()+" set aal = ?, factor_id = ? WHERE id = ?", aal, s.FactorID, s.ID).Exec() // safe: PA401 the tail of an UPDATE built by concatenation
}
