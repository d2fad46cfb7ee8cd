package api

// AlertHandover is what a run of a long-running workflow (cursor, delivery,
// dead letter) hands to its next run of the alerts it could not deliver
// before it continued as new: the next run sends them again first. An
// input without it (an older run's) hands over nothing.
type AlertHandover struct {
	// Alerts are the alerts still undelivered, oldest first, at most
	// workflows' bound (the newest are kept).
	Alerts []Alert `json:"alerts,omitempty"`
	// Dropped counts the alerts dropped over the workflow's life because
	// more than the bound waited to be handed over.
	Dropped int64 `json:"dropped,omitempty"`
}
