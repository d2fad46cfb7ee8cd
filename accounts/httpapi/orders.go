package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/store"
)

// maxRefetchWait bounds how long POST /v1/orders/{platform}/refetch waits
// for results; the refetches run on after it.
const maxRefetchWait = 60 * time.Second

// orderRoutes are the order operations (package orderops), the same as
// `ordersync orders get|search|refetch`.
func (h *Handler) orderRoutes() []route {
	return []route{
		{method: http.MethodGet, path: "/v1/orders", params: []string{"platform", "number", "status", "from", "to", "limit", "after"}, serve: h.searchOrders},
		{method: http.MethodGet, path: "/v1/orders/{platform}/{id}", params: []string{"raw"}, serve: h.getOrder},
		{method: http.MethodPost, path: "/v1/orders/{platform}/refetch", serve: h.refetchOrders},
	}
}

func (h *Handler) orders() (*orderops.Service, error) {
	if h.ops == nil {
		return nil, &apiError{Status: http.StatusNotImplemented, Message: "this server does not serve order operations"}
	}
	return h.ops, nil
}

func (h *Handler) searchOrders(w http.ResponseWriter, r *http.Request, q map[string]string) error {
	ops, err := h.orders()
	if err != nil {
		return err
	}
	sq := store.SearchQuery{Platform: q["platform"], Number: q["number"], Status: q["status"], After: q["after"]}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"from", &sq.UpdatedFrom}, {"to", &sq.UpdatedTo}} {
		if v := q[t.name]; v != "" {
			if *t.dst, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return badRequest(t.name, fmt.Sprintf("%s is not an RFC3339 time like 2026-11-20T00:00:00Z", textclip.Quote(v)))
			}
		}
	}
	if v := q["limit"]; v != "" {
		if sq.Limit, err = strconv.Atoi(v); err != nil || sq.Limit < 1 {
			return badRequest("limit", fmt.Sprintf("want 1 to %d, got %s", store.MaxSearchLimit, textclip.Quote(v)))
		}
	}
	page, err := ops.Search(r.Context(), sq)
	if errors.Is(err, orderops.ErrBadRequest) {
		return badRequest("", err.Error())
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}

func (h *Handler) getOrder(w http.ResponseWriter, r *http.Request, q map[string]string) error {
	ops, err := h.orders()
	if err != nil {
		return err
	}
	raw := false
	if v, ok := q["raw"]; ok {
		if raw, err = strconv.ParseBool(v); err != nil {
			return badRequest("raw", "want true or false")
		}
	}
	platform, id := r.PathValue("platform"), r.PathValue("id")
	o, found, err := ops.Get(r.Context(), platform, id, orderops.GetOptions{Raw: raw})
	if err != nil {
		return err
	}
	if !found {
		return &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf("order %s of %s is not in the store", textclip.Quote(id), textclip.Quote(platform)),
			Hint: fmt.Sprintf("POST /v1/orders/%s/refetch with {\"ids\":[...]} fetches it now", platform)}
	}
	return writeJSON(w, http.StatusOK, o)
}

// refetchBody is POST /v1/orders/{platform}/refetch's body.
type refetchBody struct {
	IDs []string `json:"ids"`
	// Priority: 1 (first) to 5 (last); 0 or absent: 2.
	Priority int `json:"priority"`
	// WaitSeconds: how long to wait for results (0: answer at once, 202).
	WaitSeconds float64 `json:"wait_seconds"`
}

func (h *Handler) refetchOrders(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	ops, err := h.orders()
	if err != nil {
		return err
	}
	m, err := decodeBody(w, r, MaxBody, false)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(m)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var body refetchBody
	if err := dec.Decode(&body); err != nil {
		return badRequest("", "want {\"ids\": [\"...\"], \"priority\": 1-5, \"wait_seconds\": 0-60}: "+err.Error())
	}
	if body.WaitSeconds < 0 || body.WaitSeconds > maxRefetchWait.Seconds() {
		return badRequest("wait_seconds", fmt.Sprintf("want 0 to %v", maxRefetchWait.Seconds()))
	}
	platform := r.PathValue("platform")
	rs, err := ops.StartRefetch(r.Context(), orderops.RefetchRequest{Platform: platform, IDs: body.IDs, Priority: body.Priority})
	switch {
	case errors.Is(err, orderops.ErrBadRequest):
		return badRequest("", err.Error())
	case errors.Is(err, orderops.ErrUnknownPlatform):
		return notFound(platform)
	case err != nil:
		return &apiError{Status: http.StatusBadGateway, Message: err.Error()}
	}
	status := http.StatusAccepted
	if body.WaitSeconds > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), time.Duration(body.WaitSeconds*float64(time.Second)))
		ops.Wait(ctx, rs)
		cancel()
		status = http.StatusOK
	}
	return writeJSON(w, status, map[string]any{"platform": platform, "priority": max(body.Priority, 0), "orders": rs, "default_priority": api.RefetchDefaultPriority})
}
