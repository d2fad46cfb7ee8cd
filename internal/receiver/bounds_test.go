package receiver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countingBody is an endless request body that counts what was read.
type countingBody struct{ read int64 }

func (c *countingBody) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	c.read += int64(len(p))
	return len(p), nil
}

func (c *countingBody) Close() error { return nil }

// The demo receiver judges an upload by its headers before it reads the
// body (issue 24): an unsigned or stale upload, or one announcing more
// than MaxBody, is refused with nothing read; before, every upload was
// read up to 32 MB first (30 unsigned uploads: 2.1 GB).
func TestReceiverRefusesBeforeReadingTheBody(t *testing.T) {
	r, err := New("demo-receiver", specSecret)
	require.NoError(t, err)
	now := strconv.FormatInt(time.Now().Unix(), 10)
	stale := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	cases := []struct {
		name   string
		header http.Header
		length int64
		want   int
	}{
		{"unsigned", http.Header{}, -1, http.StatusUnauthorized},
		{"a stale signature (a replay)", specHeader("msg_1", stale, specSig), -1, http.StatusUnauthorized},
		{"no v1 signature", specHeader("msg_1", now, "v2,abc"), -1, http.StatusUnauthorized},
		{"announces more than MaxBody", specHeader("msg_1", now, specSig), MaxBody + 1, http.StatusRequestEntityTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := &countingBody{}
			req := httptest.NewRequest(http.MethodPost, "/", nil)
			req.Body, req.ContentLength, req.Header = body, c.length, c.header
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			require.Equal(t, c.want, w.Code)
			require.Zero(t, body.read, "nothing of the body is read")
		})
	}
	require.Equal(t, int64(len(cases)), r.Stats().Rejected)

	// A signed-looking upload without a length is read up to MaxBody only.
	body := &countingBody{}
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.Body, req.ContentLength, req.Header = body, -1, specHeader("msg_1", now, specSig)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	require.LessOrEqual(t, body.read, int64(MaxBody)+64<<10)
}

// The bodies read at once book at most UploadBudget bytes; an upload that
// finds no room within the wait is told to retry (503 and Retry-After,
// which the webhook sender retries) without reading, and room comes back
// when an upload ends.
func TestReceiverBoundsConcurrentUploads(t *testing.T) {
	r, err := New("demo-receiver", specSecret)
	require.NoError(t, err)
	r.uploadWait = 0
	r.uploading = UploadBudget - 999 // uploads in progress
	now := strconv.FormatInt(time.Now().Unix(), 10)
	body := &countingBody{}
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.Body, req.ContentLength, req.Header = body, 1000, specHeader("msg_1", now, specSig)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.Equal(t, "1", w.Header().Get("Retry-After"))
	require.Zero(t, body.read)

	r.releaseUpload(1) // room for 1000 bytes: the upload is read (and judged by its signature)
	req = httptest.NewRequest(http.MethodPost, "/", io.LimitReader(&countingBody{}, 1000))
	req.ContentLength, req.Header = 1000, specHeader("msg_1", now, specSig)
	w = httptest.NewRecorder()
	r.ServeHTTP(w, req)
	require.Equal(t, http.StatusUnauthorized, w.Code, "read, and its signature does not match")
	require.Equal(t, int64(UploadBudget-1000), r.uploading, "its booking is given back")
}

// The server NewServer builds bounds reading headers, the whole request
// and header size, so a client sending slowly cannot hold a connection
// (and an upload slot) for ever.
func TestNewServerBoundsReads(t *testing.T) {
	srv := NewServer(http.NotFoundHandler())
	require.Positive(t, srv.ReadHeaderTimeout)
	require.Positive(t, srv.ReadTimeout)
	require.Positive(t, srv.MaxHeaderBytes)
}
