package notifier

import (
	"context"
	"fmt"
	"strconv"
)

func (n *Notifier) listen(ctx context.Context, topic string) error {
	_, err := n.conn.Exec(ctx, "LISTEN "+strconv.Quote(topic)) // expect: PA402 LISTEN with a concatenated channel
	if err != nil {
		return fmt.Errorf("error listening on topic %q: %w", topic, err)
	}
	n.logger.Info("Listen succeeded") // safe: log
	return nil
}

func (n *Notifier) unlisten(ctx context.Context, topic string) error {
	_, err := n.conn.Exec(ctx, fmt.Sprintf("UNLISTEN %s", topic)) // expect: PA402 UNLISTEN via Sprintf
	return err
}

func (n *Notifier) notify(ctx context.Context, topic, payload string) error {
	_, err := n.conn.Exec(ctx, "SELECT pg_notify($1, $2)", topic, payload) // safe: PA402 NOTIFY is fine
	return err
}
