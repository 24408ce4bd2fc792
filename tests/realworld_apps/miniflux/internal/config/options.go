package config

type option struct {
	parsedIntValue int
	rawValue       string
}

func defaults() map[string]*option {
	return map[string]*option{
		"DATABASE_MAX_CONNS": {
			parsedIntValue: 20,
			rawValue:       "20",
		},
		"DATABASE_MIN_CONNS": {
			parsedIntValue: 1,
			rawValue:       "1",
		},
	}
}
