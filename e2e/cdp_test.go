package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"
)

// browser is headless Chromium driven through the DevTools protocol: a
// page is loaded, its text read until what the test looks for appears,
// then captured. `chromium --screenshot` and `--dump-dom` wait for the page
// to go idle, which a workflow page of the Web UI (it polls) never does.
type browser struct {
	t    *testing.T
	cmd  *exec.Cmd
	ws   *websocket.Conn
	mu   sync.Mutex
	next int
}

// startBrowser starts Chromium with one blank page of width x height.
func startBrowser(t *testing.T, width, height int) *browser {
	t.Helper()
	dir := t.TempDir()
	args := append(chromiumFlags(dir), "--remote-debugging-port=0", "--remote-allow-origins=*",
		fmt.Sprintf("--window-size=%d,%d", width, height), "--hide-scrollbars", "about:blank")
	cmd := exec.Command(chromiumPath, args...)
	require.NoError(t, cmd.Start(), "start chromium")
	b := &browser{t: t, cmd: cmd}
	t.Cleanup(b.close)

	// Chromium writes the port it chose into the profile directory.
	var port string
	eventually(t, 30*time.Second, "chromium's DevTools port", func() bool {
		raw, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if err != nil {
			return false
		}
		port = strings.SplitN(string(raw), "\n", 2)[0]
		return port != ""
	})
	var targets []struct {
		Type string `json:"type"`
		URL  string `json:"webSocketDebuggerUrl"`
	}
	eventually(t, 30*time.Second, "chromium's page target", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		targets = nil
		if json.NewDecoder(resp.Body).Decode(&targets) != nil {
			return false
		}
		for _, tg := range targets {
			if tg.Type == "page" {
				return true
			}
		}
		return false
	})
	for _, tg := range targets {
		if tg.Type == "page" {
			ws, err := websocket.Dial(tg.URL, "", "http://127.0.0.1/")
			require.NoError(t, err, "connect to chromium's page %s", tg.URL)
			b.ws = ws
			break
		}
	}
	return b
}

func (b *browser) close() {
	if b.ws != nil {
		_ = b.ws.Close()
	}
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
}

// call sends one DevTools command and returns its result, skipping the
// events that arrive meanwhile.
func (b *browser) call(method string, params any, result any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	id := b.next
	if err := websocket.JSON.Send(b.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return fmt.Errorf("send %s: %w", method, err)
	}
	_ = b.ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := websocket.JSON.Receive(b.ws, &msg); err != nil {
			return fmt.Errorf("receive the answer to %s: %w", method, err)
		}
		if msg.ID != id {
			continue // an event
		}
		if msg.Error != nil {
			return fmt.Errorf("%s: %s", method, msg.Error.Message)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(msg.Result, result)
	}
}

// pageText is the page's visible text with that of its frames: the Web
// UI renders markdown (current details) in an iframe of the same origin.
const pageText = `(() => {
  let t = document.body ? document.body.innerText : "";
  for (const f of document.querySelectorAll("iframe")) {
    try { t += "\n" + f.contentDocument.body.innerText; } catch (e) {}
  }
  return t;
})()`

// open loads page and waits until its visible text contains every one of
// want, returning the text.
func (b *browser) open(page string, want ...string) string {
	b.t.Helper()
	require.NoError(b.t, b.call("Page.navigate", map[string]any{"url": page}, nil))
	var text string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		var r struct {
			Result struct {
				Value string `json:"value"`
			} `json:"result"`
		}
		if b.call("Runtime.evaluate", map[string]any{"expression": pageText, "returnByValue": true}, &r) != nil {
			continue
		}
		text = r.Result.Value
		missing := false
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = true
			}
		}
		if !missing {
			time.Sleep(time.Second) // let the rest of the page settle for the screenshot
			return text
		}
	}
	b.t.Fatalf("the Web UI page %s did not show %q in 90s; it shows:\n%s", page, want, text)
	return ""
}

// screenshot saves the page as it is now, as a PNG.
func (b *browser) screenshot(out string) {
	b.t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	require.NoError(b.t, b.call("Page.captureScreenshot", map[string]any{"format": "png"}, &r))
	raw, err := base64.StdEncoding.DecodeString(r.Data)
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(out, raw, 0o644))
	b.t.Logf("screenshot %s (%d bytes)", out, len(raw))
}

// chromiumAvailable skips the test where Chromium is missing, except in CI.
func chromiumAvailable(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: .ci/run installs Debian's chromium package", chromiumPath)
		}
		t.Skipf("!!! SKIPPING the Web UI test: %s not found (apt-get install chromium); CI runs it", chromiumPath)
	}
}
