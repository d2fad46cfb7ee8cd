package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/textclip"
)

// maxProblems bounds the problems one answer lists (an apply of
// thousands of broken entries would otherwise answer megabytes).
const maxProblems = 100

// apiError is the JSON body of every error answer.
type apiError struct {
	Status   int       `json:"-"`
	Message  string    `json:"error"`
	Problems []problem `json:"problems,omitempty"`
	// Hint says how to do what was refused, when there is a way.
	Hint string `json:"hint,omitempty"`
	// Fix and Entry come with a 502: the registry holds Entry, and Fix is
	// what to run to finish the Temporal step that failed.
	Fix   string          `json:"fix,omitempty"`
	Entry *accounts.Entry `json:"entry,omitempty"`
	// Changes an apply made before it failed.
	Changes []accounts.Change `json:"changes,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

// problem is one invalid setting, as config.Problem names it.
type problem struct {
	Platform string `json:"platform,omitempty"`
	Field    string `json:"field,omitempty"`
	Reason   string `json:"reason"`
}

func badRequest(field, reason string) *apiError {
	msg := reason
	if field != "" {
		msg = field + ": " + reason
	}
	return &apiError{Status: http.StatusBadRequest, Message: msg, Problems: []problem{{Field: field, Reason: reason}}}
}

// clean makes untrusted text safe to echo: escaped for a terminal (a
// caller reading the answer with curl sees \x1b, not an escape
// sequence), then clipped.
func clean(s string, max int) string {
	return textclip.Clip(textclip.Terminal(textclip.Clip(s, max)), max)
}

// asAPIError maps what the service and the registry return to a status.
func asAPIError(err error) *apiError {
	var ae *apiError
	var ve *config.ValidationError
	var ee *accounts.EngineError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &ve):
		return validationError(ve)
	case errors.As(err, &ee):
		return &apiError{Status: http.StatusBadGateway, Message: err.Error(), Fix: ee.Fix, Entry: &ee.Entry}
	case errors.Is(err, accounts.ErrNotFound):
		return &apiError{Status: http.StatusNotFound, Message: err.Error()}
	case errors.Is(err, accounts.ErrRemovedName):
		return &apiError{Status: http.StatusConflict, Message: err.Error(),
			Hint: "a removed platform's name is taken again only explicitly: POST /v1/platforms?reuse_removed=true (or apply with reuse_removed=true)"}
	case errors.Is(err, accounts.ErrExists):
		return &apiError{Status: http.StatusConflict, Message: err.Error(), Hint: "PATCH /v1/platforms/{name} changes a registered platform"}
	case errors.Is(err, accounts.ErrConflict):
		return &apiError{Status: http.StatusConflict, Message: err.Error(), Hint: "read the platform again (GET /v1/platforms/{name}) and retry with its revision in If-Match"}
	}
	return &apiError{Status: http.StatusInternalServerError, Message: err.Error()}
}

func validationError(ve *config.ValidationError) *apiError {
	ae := &apiError{Status: http.StatusBadRequest}
	lines := make([]string, 0, len(ve.Problems))
	for i, p := range ve.Problems {
		if i == maxProblems {
			ae.Problems = append(ae.Problems, problem{Reason: "more problems left out"})
			break
		}
		field := p.Field
		if field == "" && p.Platform != "" && strings.HasPrefix(p.Reason, "name ") {
			// config reports a malformed name without a field (it is the
			// file's key there); here it is the body's "name".
			field = "name"
		}
		ae.Problems = append(ae.Problems, problem{Platform: p.Platform, Field: field, Reason: p.Reason})
		lines = append(lines, p.String())
	}
	ae.Message = "invalid settings: " + strings.Join(lines, "; ")
	return ae
}

// fail writes err as JSON and logs it; 5xx answers are logged as errors.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	ae := asAPIError(err)
	if ae.Entry != nil {
		e := h.stored(r.Context(), *ae.Entry)
		ae.Entry = &e
	}
	h.write(w, r, ae)
}

func (h *Handler) write(w http.ResponseWriter, r *http.Request, ae *apiError) {
	out := *ae
	out.Message = clean(out.Message, textclip.MessageMax)
	out.Hint = clean(out.Hint, textclip.MessageMax)
	out.Fix = clean(out.Fix, textclip.MessageMax)
	out.Problems = make([]problem, len(ae.Problems))
	for i, p := range ae.Problems {
		out.Problems[i] = problem{Platform: clean(p.Platform, textclip.ValueMax), Field: clean(p.Field, textclip.ValueMax),
			Reason: clean(p.Reason, textclip.ValueMax)}
	}
	level := slog.LevelInfo
	if out.Status >= 500 {
		level = slog.LevelError
	}
	h.log.Log(r.Context(), level, "request refused", "method", r.Method, "path", clean(r.URL.Path, textclip.ValueMax),
		"status", out.Status, "error", out.Message)
	_ = writeJSON(w, out.Status, out)
}
