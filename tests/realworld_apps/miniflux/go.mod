module example.org/reader

go 1.23

require github.com/lib/pq v1.10.9
