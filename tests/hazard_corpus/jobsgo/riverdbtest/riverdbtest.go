package riverdbtest

import "github.com/jackc/pgx/v5/pgxpool"

func TestPool(url string) *pgxpool.Pool {
	pool, _ := pgxpool.New(context.Background(), url) // safe: PA405 Go test-helper package not scanned
	pool.Exec(context.Background(), "SET search_path TO test") // safe: PA401 test helper
	return pool
}
