package storage

import (
	"fmt"
	"log/slog"
)

func (s *Storage) ArchiveEntries(days int) error {
	query := fmt.Sprintf(`UPDATE entries SET status='removed' WHERE published_at < now () - '%d days'::interval`, days) // safe: PA401 UPDATE ... SET
	if _, err := s.db.Exec(query); err != nil {
		slog.Error("Unable to archive entries", slog.Any("error", err))
		return err
	}
	slog.Info("Set entries as removed") // safe: log
	return nil
}

func (s *Storage) SetTimeout(ms int) error {
	_, err := s.db.Exec(fmt.Sprintf("SET statement_timeout = %d", ms)) // expect: PA401 Sprintf SET
	return err
}
