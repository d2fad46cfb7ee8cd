package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/store"
)

// Issue 24, item 7: ESC, OSC, C0 and C1 sequences from a platform or a
// message reached the terminal raw. Each table writer escapes them.

// hostile clears the screen, retitles the window, writes a hyperlink,
// uses a C1 CSI and a bidi override, and carries invalid UTF-8.
const hostile = "\x1b[2J\x1b]0;owned\x07\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\\u009b31m\u202eexe.txt\xff"

// requireNoRawControl fails on any control character but the table's tabs
// and newlines, on a bidi override, and on invalid UTF-8.
func requireNoRawControl(t *testing.T, out string) {
	t.Helper()
	require.True(t, strings.ToValidUTF8(out, "?") == out, "invalid UTF-8 reached the terminal: %q", out)
	for _, r := range out {
		if r == '\t' || r == '\n' {
			continue
		}
		require.False(t, r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e', "raw %U reached the terminal: %q", r, out)
	}
	require.Contains(t, out, `\x1b[2J`, "escaped, still readable")
}

func TestStatusTableEscapesControlSequences(t *testing.T) {
	now := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	rows := []platformStatus{{Platform: "p", Running: true, Cursor: &api.CursorStatus{
		Platform: "p", Watermark: now.Add(-time.Hour), PlatformState: "paused", Paused: true,
		Waiting: api.WaitPaused + ": " + hostile, LastError: "fetch page 1 of slice/p/x: id " + hostile + ": bad total",
		InFlight: []api.SliceView{},
	}}}
	var out bytes.Buffer
	require.NoError(t, renderStatusTable(&out, rows, now))
	requireNoRawControl(t, out.String())
}

func TestDeliveryTableEscapesControlSequences(t *testing.T) {
	st := api.DeliveryStatus{State: api.DeliveryState{Paused: true, PauseReason: hostile, LastError: "pause signal: " + hostile,
		Pending: &api.PendingRange{SeqRange: api.SeqRange{After: 7, To: 9}, Lanes: 2, Left: []api.LaneBatch{{Lane: 1, Seqs: []int64{8, 9}}}}},
		Waiting: "paused: " + hostile}
	var out bytes.Buffer
	require.NoError(t, writeDeliveryTable(&out, []deliveryReport{{Destination: "oms", Running: true, Status: &st}}))
	requireNoRawControl(t, out.String())
}

func TestChangeRowEscapesTheOrderID(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, writeChangeRow(&out, store.Change{Seq: 1, Platform: "p", OrderID: hostile, Kind: "upsert"}))
	requireNoRawControl(t, out.String())
}

func TestVerifyIDListEscapes(t *testing.T) {
	var out bytes.Buffer
	listIDs(&out, "missing", []string{"ok-1", hostile})
	requireNoRawControl(t, out.String())
	require.Contains(t, out.String(), "ok-1")
}

// The dlq table's ERROR column and refusal line go through clipText.
func TestClipTextEscapesAndCutsOnARune(t *testing.T) {
	requireNoRawControl(t, clipText(causeFirst("slice slice/p/x dead-lettered: p: id "+hostile, "p"), 100))
	require.Equal(t, "ab...", clipText("ab€€€", 6), "not inside a rune")
	require.Equal(t, `line one line two`, clipText("line one\nline two", 80))
}

func TestExecuteEscapesTheError(t *testing.T) {
	root := &cobra.Command{Use: "x", SilenceErrors: true, SilenceUsage: true,
		RunE: func(*cobra.Command, []string) error { return errors.New("query status: " + hostile + "\nsecond line") }}
	var stderr bytes.Buffer
	require.NotEqual(t, ExitOK, Execute(root, nil, &stderr))
	requireNoRawControl(t, stderr.String())
	require.Contains(t, stderr.String(), "\nordersync: second line")
}
