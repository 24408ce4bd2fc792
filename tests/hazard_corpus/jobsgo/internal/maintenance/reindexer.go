package maintenance

import "context"

func (s *Reindexer) reindexOne(ctx context.Context, index string) error {
	if _, err := s.exec.Exec(ctx, "SET statement_timeout = '1h'"); err != nil { // expect: PA401 session SET
		return err
	}
	_, err := s.exec.Exec(ctx, "REINDEX INDEX CONCURRENTLY "+index) // safe: maintenance statement
	return err
}
