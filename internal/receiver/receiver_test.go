package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/ordersync/ordersync/delivery"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/order"
	"github.com/ordersync/ordersync/store"
)

// The Standard Webhooks specification's own example.
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTS     = 1614265330
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func specHeader(id, ts, sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", sig)
	return h
}

func TestVerify(t *testing.T) {
	v, err := NewVerifier(specSecret)
	require.NoError(t, err)
	v.Now = func() time.Time { return time.Unix(specTS+10, 0) }
	ts := strconv.Itoa(specTS)
	cases := []struct {
		name   string
		header http.Header
		body   string
		want   string // "" accepts
	}{
		{"the specification's example", specHeader(specID, ts, specSig), specBody, ""},
		{"one of several signatures", specHeader(specID, ts, "v1,AAAA "+specSig), specBody, ""},
		{"another body", specHeader(specID, ts, specSig), `{"test": 1}`, "no v1 signature matches"},
		{"another id", specHeader("msg_other", ts, specSig), specBody, "no v1 signature matches"},
		{"another timestamp", specHeader(specID, strconv.Itoa(specTS+1), specSig), specBody, "no v1 signature matches"},
		{"an unknown version", specHeader(specID, ts, strings.Replace(specSig, "v1,", "v2,", 1)), specBody, "no v1 signature matches"},
		{"no id", specHeader("", ts, specSig), specBody, "no webhook-id"},
		{"no timestamp", specHeader(specID, "", specSig), specBody, "no webhook-timestamp"},
		{"no signature", specHeader(specID, ts, ""), specBody, "no webhook-signature"},
		{"a bad timestamp", specHeader(specID, "yesterday", specSig), specBody, "not Unix seconds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := v.Verify(c.header, []byte(c.body))
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrSignature)
			require.ErrorContains(t, err, c.want)
		})
	}
	v.Now = func() time.Time { return time.Unix(specTS, 0).Add(DefaultTolerance + time.Minute) }
	require.ErrorContains(t, v.Verify(specHeader(specID, ts, specSig), []byte(specBody)), "from now, more than 5m0s", "a replay")

	_, err = NewVerifier("whsec_not base64!")
	require.ErrorContains(t, err, "not whsec_ followed by base64")
}

// post signs a batch as the Standard Webhooks specification says and POSTs it.
func post(t *testing.T, url, secret string, b delivery.WebhookBatch) int {
	t.Helper()
	body, err := json.Marshal(b)
	require.NoError(t, err)
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	ts := time.Now().Unix()
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.%s", b.ID, ts, body)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header = specHeader(b.ID, strconv.FormatInt(ts, 10), "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func batchOf(dest string, seqs ...int64) delivery.WebhookBatch {
	b := delivery.WebhookBatch{ID: fmt.Sprintf("%s-%d-%d", dest, seqs[0], seqs[len(seqs)-1]), Type: "orders.changes", Destination: dest,
		FromSeq: seqs[0], ToSeq: seqs[len(seqs)-1]}
	for _, s := range seqs {
		p := map[bool]string{true: "sim-acme", false: "sim-globex"}[s%2 == 1]
		b.Changes = append(b.Changes, store.Change{Seq: s, Platform: p, OrderID: fmt.Sprint(s)})
	}
	return b
}

func TestReceiverCounts(t *testing.T) {
	r, err := New("demo-receiver", specSecret)
	require.NoError(t, err)
	srv := httptest.NewServer(r)
	defer srv.Close()

	require.Equal(t, http.StatusNoContent, post(t, srv.URL, specSecret, batchOf("demo", 1, 2, 3)))
	require.Equal(t, http.StatusNoContent, post(t, srv.URL, specSecret, batchOf("demo", 1, 2, 3)), "a redelivery is confirmed")
	require.Equal(t, http.StatusNoContent, post(t, srv.URL, specSecret, batchOf("demo", 3, 4)), "re-batched: 3 is dropped by seq")
	require.Equal(t, http.StatusNoContent, post(t, srv.URL, specSecret, batchOf("other", 1)), "seqs are per destination")
	require.Equal(t, http.StatusUnauthorized, post(t, srv.URL, "whsec_"+base64.StdEncoding.EncodeToString([]byte("wrong key")), batchOf("demo", 5)))
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "unsigned")

	s := r.Stats()
	require.Equal(t, int64(5), s.Changes)
	require.Equal(t, map[string]int64{"sim-acme": 3, "sim-globex": 2}, s.Platforms)
	require.Equal(t, int64(3), s.Batches)
	require.Equal(t, int64(2), s.Redelivered)
	require.Equal(t, int64(2), s.Rejected)
	require.Equal(t, int64(4), s.LastSeq)
	require.Equal(t, "demo-receiver: 5 changes received (sim-acme 3, sim-globex 2), last seq 4, 2 redeliveries dropped, 2 requests rejected (bad signature or body)", r.Summary())

	resp, err = http.Get(srv.URL + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var got Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Equal(t, s.Changes, got.Changes)
	require.Equal(t, s.Platforms, got.Platforms)
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		require.Equal(t, want, thousands(n))
	}
}

// TestReceiverChecksCanonicalOrders: the receiver counts the changes that
// carry a canonical order and names those that fail the schema.
func TestReceiverChecksCanonicalOrders(t *testing.T) {
	r, err := New("demo-receiver", specSecret)
	require.NoError(t, err)
	srv := httptest.NewServer(r)
	defer srv.Close()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	b := batchOf("demo", 1, 2, 3)
	b.Changes[0].Order.Canonical = &order.Canonical{Schema: order.SchemaV1, Platform: "sim-acme", Kind: "sim", OrderID: "1",
		UpdatedAt: at, Status: order.StatusOpen, Lines: []order.CanonicalLine{}}
	b.Changes[1].Order.Canonical = &order.Canonical{Schema: order.SchemaV1, Platform: "sim-globex", Kind: "sim", OrderID: "2",
		UpdatedAt: at, Status: "shipped", Lines: []order.CanonicalLine{}} // not a canonical status
	require.Equal(t, http.StatusNoContent, post(t, srv.URL, specSecret, b))
	s := r.Stats()
	require.Equal(t, int64(2), s.Canonical)
	require.Equal(t, int64(1), s.CanonicalInvalid)
	require.Equal(t, "demo-receiver: 3 changes received (sim-acme 2, sim-globex 1), last seq 3, 1 canonical orders invalid under the schema", r.Summary())
}
