package main

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	return pgxpool.New(ctx, url) // expect: PA405 pgx v5 default exec mode cache_statement
}
