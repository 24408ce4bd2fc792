module github.com/acme/ledger

go 1.22

require github.com/jackc/pgx/v5 v5.6.0
