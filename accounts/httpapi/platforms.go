package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/textclip"
)

// stored is e as the registry holds it (with its update time, which the
// service's answer lacks), unless it changed again meanwhile.
func (h *Handler) stored(ctx context.Context, e accounts.Entry) accounts.Entry {
	if got, found, err := h.svc.Registry.Get(ctx, accounts.ClassPlatform, e.Name); err == nil && found && got.Revision == e.Revision {
		return got
	}
	return e
}

// writeEntry answers with an entry as the registry holds it (settings
// hold credential references, never secrets) and its revision as the
// ETag, which If-Match takes back.
func writeEntry(w http.ResponseWriter, status int, e accounts.Entry) error {
	w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(e.Revision, 10)))
	return writeJSON(w, status, e)
}

// page is the answer of GET /v1/platforms.
type page struct {
	Platforms []accounts.Entry `json:"platforms"`
	// Next is the `after` of the next page; absent on the last one.
	Next string `json:"next,omitempty"`
}

// list: GET /v1/platforms?state=&kind=&task_queue=&after=&limit=
func (h *Handler) list(w http.ResponseWriter, r *http.Request, q map[string]string) error {
	f := accounts.Filter{Class: accounts.ClassPlatform, State: accounts.State(q["state"]), Kind: q["kind"],
		TaskQueue: q["task_queue"], After: q["after"], Limit: 100}
	if f.State != "" && !f.State.Valid() {
		return badRequest("state", "want active, paused or removed")
	}
	for _, k := range []string{"kind", "task_queue", "after"} {
		if len(q[k]) > accounts.MaxNameLength {
			return badRequest(k, fmt.Sprintf("longer than %d bytes", accounts.MaxNameLength))
		}
	}
	if s, ok := q["limit"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > accounts.MaxPage {
			return badRequest("limit", fmt.Sprintf("want a number from 1 to %d (default 100)", accounts.MaxPage))
		}
		f.Limit = n
	}
	want := f.Limit
	if f.Limit < accounts.MaxPage {
		f.Limit++ // one more tells whether a next page exists
	}
	entries, err := h.svc.Registry.List(r.Context(), f)
	if err != nil {
		return err
	}
	out := page{Platforms: []accounts.Entry{}}
	if len(entries) > want || (len(entries) == accounts.MaxPage && want == accounts.MaxPage) {
		entries = entries[:want]
		out.Next = entries[want-1].Name
	}
	out.Platforms = append(out.Platforms, entries...)
	return writeJSON(w, http.StatusOK, out)
}

// get: GET /v1/platforms/{name}, removed platforms included (their
// tombstone says when the name was given up).
func (h *Handler) get(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	name := r.PathValue("name")
	e, found, err := h.svc.Registry.Get(r.Context(), accounts.ClassPlatform, name)
	switch {
	case err != nil:
		return err
	case !found:
		return notFound(name)
	}
	return writeEntry(w, http.StatusOK, e)
}

func notFound(name string) *apiError {
	return &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf("platform %s is not registered", textclip.Quote(name))}
}

// live reads a platform that is registered and not removed: the answer
// for a missing one is 404, for a removed one 409 (the name is taken).
func (h *Handler) live(ctx context.Context, name string) (accounts.Entry, error) {
	e, found, err := h.svc.Registry.Get(ctx, accounts.ClassPlatform, name)
	switch {
	case err != nil:
		return e, err
	case !found:
		return e, notFound(name)
	case e.State == accounts.Removed:
		return e, &apiError{Status: http.StatusConflict,
			Message: fmt.Sprintf("platform %s was removed at revision %d", textclip.Quote(name), e.Revision),
			Hint:    "POST /v1/platforms?reuse_removed=true registers the name again"}
	}
	return e, nil
}

// add: POST /v1/platforms?reuse_removed=&paused= with one platform's
// settings (a platforms-file entry as JSON) and its "name".
func (h *Handler) add(w http.ResponseWriter, r *http.Request, q map[string]string) error {
	var err error
	var opts accounts.AddOptions
	if opts.ReuseRemoved, err = boolParam(q, "reuse_removed"); err != nil {
		return err
	}
	if opts.Paused, err = boolParam(q, "paused"); err != nil {
		return err
	}
	body, err := decodeBody(w, r, MaxBody, false)
	if err != nil {
		return err
	}
	name, err := takeName(body, "name")
	if err != nil {
		return err
	}
	p, err := accounts.BuildPlatform(name, body)
	if err != nil {
		return err
	}
	e, err := h.svc.AddPlatform(r.Context(), p, opts)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/platforms/"+url.PathEscape(e.Name))
	return writeEntry(w, http.StatusCreated, h.stored(r.Context(), e))
}

// takeName removes the "name" key from a platform's settings and returns
// it: the name is the platform's key, not one of its settings.
func takeName(m map[string]any, field string) (string, error) {
	raw, ok := m["name"]
	if !ok {
		return "", badRequest(field, "missing: every platform needs a name")
	}
	name, ok := raw.(string)
	if !ok || name == "" {
		return "", badRequest(field, "want a non-empty string")
	}
	delete(m, "name")
	return name, nil
}

// edit: PATCH /v1/platforms/{name}, a JSON merge patch (RFC 7386) of the
// registered settings: a key set to null goes back to unset. If-Match
// (or ?revision=) guards it with the revision the caller read.
func (h *Handler) edit(w http.ResponseWriter, r *http.Request, q map[string]string) error {
	expect, err := revisionGuard(r, q)
	if err != nil {
		return err
	}
	patch, err := decodeBody(w, r, MaxBody, false)
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if raw, ok := patch["name"]; ok {
		if s, isString := raw.(string); !isString || s != name {
			return badRequest("name", "the name cannot be edited (remove the platform and add the new name)")
		}
		delete(patch, "name")
	}
	if len(patch) == 0 {
		return badRequest("", "nothing to change: the patch is empty")
	}
	if _, err := h.live(r.Context(), name); err != nil {
		return err
	}
	var editErr error
	e, err := h.svc.EditPlatform(r.Context(), name, expect, func(p *config.Platform) error {
		editErr = accounts.EditSettings(p, func(m map[string]any) error {
			mergePatch(m, patch)
			return nil
		})
		return editErr
	})
	if editErr != nil {
		return editErr
	}
	if err != nil {
		return err
	}
	return writeEntry(w, http.StatusOK, h.stored(r.Context(), e))
}

// revisionGuard reads If-Match ("7" or 7, as the ETag gives it) or
// ?revision=7; 0 when neither is given.
func revisionGuard(r *http.Request, q map[string]string) (int64, error) {
	var expect int64
	if v := strings.TrimSpace(r.Header.Get("If-Match")); v != "" {
		n, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(v, "W/"), `"`), 10, 64)
		if err != nil || n < 1 {
			return 0, badRequest("If-Match", "want the revision the platform was read at (its ETag), e.g. \"7\"")
		}
		expect = n
	}
	if v, ok := q["revision"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return 0, badRequest("revision", "want the revision the platform was read at, a number above 0")
		}
		if expect != 0 && n != expect {
			return 0, badRequest("revision", "differs from If-Match; give one")
		}
		expect = n
	}
	return expect, nil
}

// mergePatch applies an RFC 7386 merge patch to target.
func mergePatch(target, patch map[string]any) {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(target, k)
		case map[string]any:
			t, ok := target[k].(map[string]any)
			if !ok {
				t = map[string]any{}
			}
			mergePatch(t, pv)
			target[k] = t
		default:
			target[k] = v
		}
	}
}

// maxReason bounds a pause reason: it travels into the cursor's history.
const maxReason = 200

// pause: POST /v1/platforms/{name}/pause with an optional {"reason": "..."}.
func (h *Handler) pause(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	body, err := decodeBody(w, r, MaxBody, true)
	if err != nil {
		return err
	}
	reason := "paused through the HTTP API"
	for k, v := range body {
		s, ok := v.(string)
		switch {
		case k != "reason":
			return badRequest(k, "unknown field; the body takes reason")
		case !ok:
			return badRequest("reason", "want a string")
		case len(s) > maxReason:
			return badRequest("reason", fmt.Sprintf("longer than %d bytes", maxReason))
		}
		// The reason reaches the cursor's history and the status of
		// every CLI: one clean line.
		if s = textclip.Line(s); s != "" {
			reason = s
		}
	}
	return h.setPaused(w, r, true, reason)
}

// resume: POST /v1/platforms/{name}/resume.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	body, err := decodeBody(w, r, MaxBody, true)
	if err != nil {
		return err
	}
	for k := range body {
		return badRequest(k, "unknown field; resume takes no body")
	}
	return h.setPaused(w, r, false, "")
}

func (h *Handler) setPaused(w http.ResponseWriter, r *http.Request, paused bool, reason string) error {
	name := r.PathValue("name")
	if _, err := h.live(r.Context(), name); err != nil {
		return err
	}
	e, err := h.svc.SetPaused(r.Context(), name, paused, reason)
	if err != nil {
		return err
	}
	return writeEntry(w, http.StatusOK, h.stored(r.Context(), e))
}

// remove: DELETE /v1/platforms/{name}?discard_dead_letters=
func (h *Handler) remove(w http.ResponseWriter, r *http.Request, q map[string]string) error {
	var err error
	var opts accounts.RemoveOptions
	if opts.DiscardDeadLetters, err = boolParam(q, "discard_dead_letters"); err != nil {
		return err
	}
	name := r.PathValue("name")
	if _, err := h.live(r.Context(), name); err != nil {
		return err
	}
	e, err := h.svc.RemovePlatform(r.Context(), name, opts)
	if err != nil {
		return err
	}
	return writeEntry(w, http.StatusOK, h.stored(r.Context(), e))
}

// applyResult is the answer of POST /v1/platforms:apply.
type applyResult struct {
	DryRun  bool              `json:"dry_run"`
	Changes []accounts.Change `json:"changes"`
}

// apply: POST /v1/platforms:apply?prune=&dry_run=&reuse_removed=&discard_dead_letters=
// with {"default": {...}, "platforms": [{"name": ..., ...}, ...]}: a
// platforms file as JSON, applied like `platform apply -f`.
func (h *Handler) apply(w http.ResponseWriter, r *http.Request, q map[string]string) error {
	var err error
	var opts accounts.ApplyOptions
	for k, dst := range map[string]*bool{"prune": &opts.Prune, "dry_run": &opts.DryRun,
		"reuse_removed": &opts.ReuseRemoved, "discard_dead_letters": &opts.DiscardDeadLetters} {
		if *dst, err = boolParam(q, k); err != nil {
			return err
		}
	}
	body, err := decodeBody(w, r, config.MaxFileSize, false)
	if err != nil {
		return err
	}
	var defaults map[string]any
	var list []any
	keys := make([]string, 0, len(body))
	for k := range body {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var ok bool
		switch k {
		case "default":
			if defaults, ok = body[k].(map[string]any); !ok {
				return badRequest("default", "want an object of settings every platform starts from")
			}
		case "platforms":
			if list, ok = body[k].([]any); !ok {
				return badRequest("platforms", "want a list of platforms, each with its name")
			}
		default:
			return badRequest(k, "unknown field; the body takes default and platforms")
		}
	}
	if len(list) == 0 {
		return badRequest("platforms", "no platforms given (an apply never removes everything by omission)")
	}
	if len(list) > config.MaxPlatforms {
		return badRequest("platforms", fmt.Sprintf("%d platforms; the limit is %d per apply", len(list), config.MaxPlatforms))
	}
	entries := make(map[string]map[string]any, len(list))
	for i, item := range list {
		field := fmt.Sprintf("platforms[%d]", i)
		m, ok := item.(map[string]any)
		if !ok {
			return badRequest(field, "want an object of settings with a name")
		}
		name, err := takeName(m, field+".name")
		if err != nil {
			return err
		}
		if _, dup := entries[name]; dup {
			return &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf("platform %s is listed twice", textclip.Quote(name)),
				Problems: []problem{{Platform: name, Field: field + ".name", Reason: "listed twice"}}}
		}
		entries[name] = m
	}
	platforms, err := accounts.BuildPlatforms(defaults, entries)
	if err != nil {
		return err
	}
	changes, err := h.svc.ApplyPlatforms(r.Context(), platforms, opts)
	if err != nil {
		ae := asAPIError(err)
		ae.Changes = changes
		return ae
	}
	if changes == nil {
		changes = []accounts.Change{}
	}
	return writeJSON(w, http.StatusOK, applyResult{DryRun: opts.DryRun, Changes: changes})
}

// boolParam reads a true/false query parameter (absent: false).
func boolParam(q map[string]string, k string) (bool, error) {
	v, ok := q[k]
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest(k, "want true or false")
	}
	return b, nil
}
