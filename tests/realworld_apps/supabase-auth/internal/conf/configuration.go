package conf

type DBConfiguration struct {
	Driver string `json:"driver" required:"true"`
	URL    string `json:"url" envconfig:"DATABASE_URL" required:"true"`

	// MaxPoolSize defaults to 0 (unlimited).
	MaxPoolSize     int `json:"max_pool_size" split_words:"true"`
	MaxIdlePoolSize int `json:"max_idle_pool_size" split_words:"true"`
}
