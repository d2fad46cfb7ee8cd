package activities

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/delivery"
)

// A webhook secret rotated in its file signs the next delivery of the
// same sender (the source notices the file changed).
func TestWebhookSecretFileRotationApplies(t *testing.T) {
	const first, second = "whsec_Zmlyc3Qtd2ViaG9vay1rZXk=", testWebhookSecret
	var mu sync.Mutex
	want := first
	var signedWith []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		mu.Lock()
		defer mu.Unlock()
		for _, k := range []string{first, second} {
			key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(k, "whsec_"))
			if r.Header.Get("webhook-signature") == delivery.SignWebhook(key, r.Header.Get("webhook-id"), ts, body) {
				signedWith = append(signedWith, k)
				if k != want {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "whsec")
	require.NoError(t, os.WriteFile(file, []byte(first+"\n"), 0o600))
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Secret = "oms", "webhook", srv.URL, config.CredentialRef{File: file}
	a := &Activities{Feed: feedStore(t, 2), Deliveries: &Deliveries{Destinations: map[string]config.Destination{"oms": d}}}
	defer a.Deliveries.Close()
	ctx := context.Background()
	deliver := func() error {
		_, err := a.DeliverChanges(ctx, api.DeliverRequest{Destination: "oms", SeqRange: api.SeqRange{After: 0, To: 4}, Expect: 4})
		return err
	}
	require.NoError(t, deliver())
	require.NoError(t, os.WriteFile(file, []byte(second+"\n"), 0o600))
	mu.Lock()
	want = second
	mu.Unlock()
	require.NoError(t, deliver(), "the rotated key signs the next delivery")
	require.Equal(t, []string{first, second}, signedWith)
}

// natsWithToken runs nats-server -js requiring token on port (0: any)
// with its store in dir, and returns its port and a stop function.
func natsWithToken(t *testing.T, dir string, port int, token string) (int, func()) {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		t.Skip("nats-server not installed (apt-get install nats-server); NATS token rotation is NOT tested")
	}
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port = l.Addr().(*net.TCPAddr).Port
		require.NoError(t, l.Close())
	}
	logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("nats-%d.log", time.Now().UnixNano())))
	require.NoError(t, err)
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-sd", filepath.Join(dir, "js"), "--auth", token)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() { _ = cmd.Process.Kill(); <-exited; logf.Close() }
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", port), nats.Token(token))
		if err == nil {
			nc.Close()
			return port, stop
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("nats-server on port %d not ready: %v", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A NATS token rotated in its file (and on the server, which restarts)
// is used when the sender reconnects, without a restart of the worker.
// (Before, the reconnects sent the token read when the connection was
// opened until the client gave up after repeated refusals and closed it;
// the next delivery then connected afresh. This guards the end result;
// the token handler makes the first reconnect use the new token.)
func TestNATSTokenFileRotationAppliesOnReconnect(t *testing.T) {
	dir := t.TempDir()
	port, stop := natsWithToken(t, dir, 0, "nats-token-first")
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := nats.Connect(url, nats.Token("nats-token-first"))
	require.NoError(t, err)
	js, err := jetstream.New(admin)
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Duplicates: time.Minute})
	require.NoError(t, err)
	admin.Close()

	file := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(file, []byte("nats-token-first\n"), 0o600))
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Subject, d.Secret = "bus", "nats", url, "orders", config.CredentialRef{File: file}
	d.Timeout = config.Duration(2 * time.Second)
	a := &Activities{Feed: feedStore(t, 3), Deliveries: &Deliveries{Destinations: map[string]config.Destination{"bus": d}}}
	defer a.Deliveries.Close()
	deliver := func(after, to int64, n int) error {
		_, err := a.DeliverChanges(ctx, api.DeliverRequest{Destination: "bus", SeqRange: api.SeqRange{After: after, To: to}, Expect: n})
		return err
	}
	require.NoError(t, deliver(0, 2, 2))

	// Rotate: the file first, then the server.
	require.NoError(t, os.WriteFile(file, []byte("nats-token-second\n"), 0o600))
	stop()
	_, stop = natsWithToken(t, dir, port, "nats-token-second")
	defer func() { stop() }()

	// The sender's connection reconnects on its own (every 2 s); each
	// delivery until then fails and would be retried by Temporal.
	var last error
	for ctx.Err() == nil {
		if last = deliver(2, 4, 2); last == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, last, "the reconnect uses the rotated token")

	check, err := nats.Connect(url, nats.Token("nats-token-second"))
	require.NoError(t, err)
	defer check.Close()
	js2, err := jetstream.New(check)
	require.NoError(t, err)
	stream, err := js2.Stream(ctx, "ORDERS")
	require.NoError(t, err)
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(4), info.State.Msgs)
}
