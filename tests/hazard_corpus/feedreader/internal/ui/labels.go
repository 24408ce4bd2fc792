package ui

var labels = map[string]string{
	"reset":   "Reset password",       // safe: UI label
	"execute": "Execute filter rules", // safe: UI label
	"load":    "Load more entries",    // safe: UI label
}
