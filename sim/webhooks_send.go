package sim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"time"
)

// Sending the Shopify surface's webhook deliveries (webhooks.go): the
// earliest due first, retried as Shopify retries, the subscription deleted
// after DeleteAfter failed deliveries in a row.

// webhookSenders is how many deliveries are in flight at once.
const webhookSenders = 8

// send runs the senders: each takes the earliest due delivery.
func (h *webhookHub) send() {
	for range webhookSenders - 1 {
		go h.sender()
	}
	h.sender()
}

func (h *webhookHub) sender() {
	for {
		d, wait := h.next()
		if d == nil {
			select {
			case <-h.stop:
				return
			case <-h.wake:
			case <-time.After(wait):
			}
			continue
		}
		h.deliver(d)
	}
}

// next takes a due delivery, or says how long to wait for one.
func (h *webhookHub) next() (*webhookDelivery, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	best := -1
	for i, d := range h.queue {
		if best < 0 || d.due.Before(h.queue[best].due) {
			best = i
		}
	}
	if best < 0 {
		return nil, h.cfg.Tick
	}
	d := h.queue[best]
	if wait := d.due.Sub(now); wait > 0 {
		return nil, min(wait, h.cfg.Tick)
	}
	h.queue = append(h.queue[:best:best], h.queue[best+1:]...)
	return d, 0
}

func (h *webhookHub) deliver(d *webhookDelivery) {
	sig := webhookSign(h.cfg.Secret, d.body)
	if d.forged {
		sig = webhookSign("not-"+h.cfg.Secret, d.body)
	}
	ok := h.post(d, sig)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case d.forged:
		if ok {
			h.stats.ForgedAccepted++
		}
	case ok:
		h.stats.Delivered++
		h.stats.LastDelivered = time.Now().UTC()
		d.sub.failures = 0
	case d.attempt < h.cfg.Retries:
		h.stats.Retried++
		d.attempt++
		d.due = time.Now().Add(time.Duration(d.attempt) * h.cfg.RetryInterval)
		h.enqueue(d)
	default:
		h.stats.Failed++
		d.sub.failures++
		if d.sub.failures >= h.cfg.DeleteAfter && h.removeLocked(d.sub.shop, d.sub.id) {
			h.stats.Deleted++
		}
	}
}

func (h *webhookHub) post(d *webhookDelivery, sig string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.sub.uri, bytes.NewReader(d.body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Shopify-Topic", d.topic)
	req.Header.Set("X-Shopify-Hmac-Sha256", sig)
	req.Header.Set("X-Shopify-Shop-Domain", shopifyDomain(d.sub.shop))
	req.Header.Set("X-Shopify-API-Version", "2026-10")
	req.Header.Set("X-Shopify-Webhook-Id", d.id)
	req.Header.Set("X-Shopify-Event-Id", "ev-"+d.id)
	req.Header.Set("X-Shopify-Triggered-At", time.Now().UTC().Format(time.RFC3339Nano))
	resp, err := h.client.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

func webhookSign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}
