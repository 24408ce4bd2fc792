package storage

import (
	"github.com/gobuffalo/pop/v6"

	"example.org/auth/internal/conf"
)

func details(config *conf.DBConfiguration) *pop.ConnectionDetails {
	return &pop.ConnectionDetails{
		Dialect:  config.Driver,
		URL:      config.URL,
		Pool:     config.MaxPoolSize,
		IdlePool: config.MaxIdlePoolSize,
	}
}
