module example.org/auth

go 1.23

require github.com/gobuffalo/pop/v6 v6.1.1
