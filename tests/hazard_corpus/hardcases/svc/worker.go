package svc

import "context"

const setAppName = "SET application_name = 'worker'" // expect: PA401 constant reaching Exec

func (w *Worker) Start(ctx context.Context) error {
	if _, err := w.conn.Exec(ctx, setAppName); err != nil {
		return err
	}
	w.log.Printf("Begin %s", "worker") // safe: log
	return nil
}
