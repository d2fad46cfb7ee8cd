// Package receiver is the receiving end of a webhook destination: it
// checks the Standard Webhooks signature of each batch, drops a batch it
// already processed (same webhook-id) and counts the changes that arrived.
// `ordersync receiver` and `ordersync dev`'s demo receiver serve it; the
// chaos test verifies every delivery with its Verifier.
package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far webhook-timestamp may be from now, either
// way, as the Standard Webhooks specification recommends: an older
// signature is a replay.
const DefaultTolerance = 5 * time.Minute

// ErrSignature is wrapped by every Verify failure.
var ErrSignature = errors.New("webhook signature")

// Verifier checks webhook-id, webhook-timestamp and webhook-signature.
type Verifier struct {
	key       []byte
	Tolerance time.Duration
	Now       func() time.Time
}

// NewVerifier takes the signing secret as the sender has it: "whsec_"
// followed by base64.
func NewVerifier(secret string) (*Verifier, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(strings.TrimSpace(secret), "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, errors.New("the webhook secret is not whsec_ followed by base64")
	}
	return &Verifier{key: key, Tolerance: DefaultTolerance, Now: time.Now}, nil
}

// Verify checks one request's headers against its body. The signature
// header may list several space-separated "v1,<base64>" values (a sender
// rotating its secret); one matching is enough.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	if err := v.CheckHeaders(h); err != nil {
		return err
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	mac := hmac.New(sha256.New, v.key)
	fmt.Fprintf(mac, "%s.%s.", id, ts)
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		version, b64, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("%w: no v1 signature matches the body", ErrSignature)
}

// CheckHeaders checks what Verify checks without the body: the three
// headers are present, the timestamp is within the tolerance, and a v1
// signature of the right length is offered. A receiver calls it before it
// reads the body, so an unsigned or replayed upload costs no memory.
func (v *Verifier) CheckHeaders(h http.Header) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	switch {
	case id == "":
		return fmt.Errorf("%w: no webhook-id header", ErrSignature)
	case ts == "":
		return fmt.Errorf("%w: no webhook-timestamp header", ErrSignature)
	case sigs == "":
		return fmt.Errorf("%w: no webhook-signature header", ErrSignature)
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: webhook-timestamp %q is not Unix seconds", ErrSignature, ts)
	}
	if skew := v.Now().Sub(time.Unix(secs, 0)); skew > v.Tolerance || skew < -v.Tolerance {
		return fmt.Errorf("%w: webhook-timestamp is %s from now, more than %s", ErrSignature, skew.Round(time.Second), v.Tolerance)
	}
	for _, s := range strings.Fields(sigs) {
		version, b64, ok := strings.Cut(s, ",")
		if got, err := base64.StdEncoding.DecodeString(b64); ok && version == "v1" && err == nil && len(got) == sha256.Size {
			return nil
		}
	}
	return fmt.Errorf("%w: no v1 signature matches (webhook-signature offers none)", ErrSignature)
}
