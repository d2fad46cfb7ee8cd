package delivery

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/store"
)

// webhookSender POSTs each batch as one JSON document, signed as the
// Standard Webhooks specification says: webhook-id (the batch id, the same
// on every redelivery), webhook-timestamp (Unix seconds) and
// webhook-signature "v1,<base64 HMAC-SHA256 of id.timestamp.body>" keyed
// with the base64 part of the whsec_ secret.
type webhookSender struct {
	url    string
	secret credentials.Source // re-read when its file changes
	client *http.Client
	now    func() time.Time
}

// WebhookBatch is the body of a webhook delivery, as a receiver decodes
// it: with the destination's payload raw or canonical, a change lacks the
// parts that payload leaves out (EncodeChange) and decodes all the same.
type WebhookBatch struct {
	// ID is also the webhook-id header: a receiver drops a batch whose id
	// it has processed.
	ID          string `json:"id"`
	Type        string `json:"type"` // "orders.changes"
	Destination string `json:"destination"`
	// FromSeq and ToSeq bound the batch's seqs (inclusive).
	FromSeq int64 `json:"from_seq"`
	ToSeq   int64 `json:"to_seq"`
	// Lane and Lanes (1-based, with max_in_flight > 1) say this batch is
	// one of Lanes delivered at once: all of an order's changes up to
	// ToSeq are in one lane, so lanes may be processed in parallel.
	Lane    int            `json:"lane,omitempty"`
	Lanes   int            `json:"lanes,omitempty"`
	Changes []store.Change `json:"changes"`
}

// webhookBody is WebhookBatch as the sender writes it: the same fields in
// the same order, each change already encoded in the payload.
type webhookBody struct {
	ID          string            `json:"id"`
	Type        string            `json:"type"`
	Destination string            `json:"destination"`
	FromSeq     int64             `json:"from_seq"`
	ToSeq       int64             `json:"to_seq"`
	Lane        int               `json:"lane,omitempty"`
	Lanes       int               `json:"lanes,omitempty"`
	Changes     []json.RawMessage `json:"changes"`
}

func newWebhookSender(d config.Destination) (Sender, error) {
	return &webhookSender{
		url:    d.URL,
		secret: credentials.Static(d.Secret),
		now:    time.Now,
		client: &http.Client{
			Transport: webhookTransport(d),
			// A redirect would send order data to another address; the
			// configured URL is the only place it goes.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// webhookTransport is http.DefaultTransport's settings with the delivery
// dialer (no link-local addresses).
func webhookTransport(d config.Destination) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = deliveryDialer(d.Timeout.D()).DialContext
	return t
}

// webhookKey reads the signing key behind the reference: "whsec_" (which
// the specification puts in front) and base64. The source is asked per
// delivery, so a rotated secret signs the next one.
func webhookKey(ctx context.Context, src credentials.Source) ([]byte, error) {
	secret, err := src.Secret(ctx)
	if err != nil {
		return nil, err
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("webhook secret %s is not whsec_ followed by base64", src)
	}
	return key, nil
}

// SignWebhook returns the webhook-signature value of one delivery (the
// Standard Webhooks "v1," signature of id.timestamp.body).
func SignWebhook(key []byte, id string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, ts)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func (w *webhookSender) Send(ctx context.Context, b Batch) error {
	key, err := webhookKey(ctx, w.secret)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), errPermanent, nil)
	}
	body := webhookBody{ID: b.ID, Type: "orders.changes", Destination: b.Destination,
		FromSeq: b.Changes[0].Seq, ToSeq: b.Changes[len(b.Changes)-1].Seq, Changes: make([]json.RawMessage, len(b.Changes))}
	if b.Lanes > 1 {
		body.Lane, body.Lanes = b.Lane+1, b.Lanes
	}
	for i, c := range b.Changes {
		if body.Changes[i], err = EncodeChange(b.Payload, c); err != nil {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("encode change %d of batch %s: %v", c.Seq, b.ID, err), errPermanent, nil)
		}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return temporal.NewNonRetryableApplicationError("encode batch "+b.ID+": "+err.Error(), errPermanent, nil)
	}
	ts := w.now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(raw))
	if err != nil {
		return temporal.NewNonRetryableApplicationError("webhook request: "+err.Error(), errPermanent, nil)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", b.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", SignWebhook(key, b.ID, ts, raw))
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("post batch %s: %w", b.ID, redactURL(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return classifyWebhookStatus(b.ID, resp)
}

// classifyWebhookStatus maps the receiver's answer: 2xx confirmed; 408,
// 429 and 5xx worth retrying (Retry-After honoured); a redirect is retried
// too (it is a receiver's misconfiguration an operator can fix); any other
// 4xx is a refusal retrying cannot fix. The body is never quoted: a
// receiver may echo order data.
func classifyWebhookStatus(id string, resp *http.Response) error {
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500 || (code >= 300 && code < 400):
		msg := fmt.Sprintf("batch %s: receiver answered HTTP %d", id, code)
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			return temporal.NewApplicationErrorWithOptions(msg, errTransient,
				temporal.ApplicationErrorOptions{NextRetryDelay: min(time.Duration(secs)*time.Second, 10*time.Minute)})
		}
		return temporal.NewApplicationError(msg, errTransient)
	case code == http.StatusRequestEntityTooLarge:
		// Too large for the receiver: the workflow delivers the batch's
		// changes one by one and sets aside only a change too large alone.
		return temporal.NewNonRetryableApplicationError("HTTP 413: the receiver takes no body this large", ErrRefused, nil)
	default:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("HTTP %d", code), ErrRefused, nil)
	}
}

// redactURL drops the URL from a transport error (its query may carry a
// token a receiver put there).
func redactURL(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

func (w *webhookSender) Close() {}
