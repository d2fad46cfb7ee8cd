package connectors

import (
	"encoding/json"
	"time"
)

// Order is the normalized form every connector returns. Raw keeps the
// platform's own JSON so nothing the platform said is lost.
type Order struct {
	Platform  string          `json:"platform"`
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	CreatedAt time.Time       `json:"created_at"` // UTC
	UpdatedAt time.Time       `json:"updated_at"` // UTC; the slicing and upsert key
	Currency  string          `json:"currency"`
	Total     string          `json:"total"` // decimal string, never a float
	LineCount int             `json:"line_count"`
	Raw       json.RawMessage `json:"raw"`
}
