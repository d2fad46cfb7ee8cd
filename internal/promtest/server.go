package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a Prometheus process started for one test, with its HTTP API.
type Server struct {
	URL string
	cmd *exec.Cmd
}

// Start runs the prometheus binary with config (YAML text) on a free
// loopback port and a temporary database, waits until it is ready, and
// stops it when the test ends. Its log goes to the test's temp directory
// and is shown when the test fails.
func Start(t *testing.T, binary, config string) *Server {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatalf("write prometheus config: %v", err)
	}
	// Prometheus binds the port it is given; another process may take it
	// between the pick and the bind, so a start that says so is made
	// again on a fresh port.
	for attempt := 1; ; attempt++ {
		s, inUse := start(t, binary, cfgPath, dir, attempt)
		if !inUse {
			return s
		}
		if attempt == 5 {
			t.Fatalf("prometheus found its port taken %d times in a row", attempt)
		}
	}
}

// start makes one start of prometheus on a freshly picked port; inUse
// says it exited because the port was taken.
func start(t *testing.T, binary, cfgPath, dir string, attempt int) (*Server, bool) {
	t.Helper()
	port := freePort(t)
	logPath := filepath.Join(dir, fmt.Sprintf("prometheus-%d.log", attempt))
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("create prometheus log: %v", err)
	}
	cmd := exec.Command(binary,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port),
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", binary, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			logFile.Close()
			b, _ := os.ReadFile(logPath)
			if strings.Contains(string(b), "address already in use") {
				return nil, true
			}
			t.Fatalf("prometheus exited before it was ready:\n%s", b)
		default:
		}
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(func() {
					stop()
					if t.Failed() {
						if b, err := os.ReadFile(logPath); err == nil {
							t.Logf("prometheus log:\n%s", b)
						}
					}
				})
				return s, false
			}
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("prometheus not ready at %s within 30s (log: %s)", s.URL, logPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Sample is one series of an instant query's answer.
type Sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// Query evaluates expr now; a PromQL error (unknown function, bad syntax)
// is returned as an error.
func (s *Server) Query(ctx context.Context, expr string) ([]Sample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := s.get(ctx, "/api/v1/query?query="+url.QueryEscape(expr), &data); err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	if data.ResultType == "scalar" {
		return []Sample{{}}, nil
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %s, want vector", expr, data.ResultType)
	}
	var out []Sample
	if err := json.Unmarshal(data.Result, &out); err != nil {
		return nil, fmt.Errorf("query %s: decode result: %w", expr, err)
	}
	return out, nil
}

// MetricNames lists every metric name Prometheus has series of.
func (s *Server) MetricNames(ctx context.Context) (map[string]bool, error) {
	var names []string
	if err := s.get(ctx, "/api/v1/label/__name__/values", &names); err != nil {
		return nil, fmt.Errorf("metric names: %w", err)
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// Alert is one entry of /api/v1/alerts.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	Value       string            `json:"value"`
}

// Alerts lists the pending and firing alerts.
func (s *Server) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := s.get(ctx, "/api/v1/alerts", &data); err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	return data.Alerts, nil
}

// get calls the HTTP API and decodes its data field.
func (s *Server) get(ctx context.Context, path string, data any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var envelope struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	if envelope.Status != "success" {
		return fmt.Errorf("%s", envelope.Error)
	}
	return json.Unmarshal(envelope.Data, data)
}
