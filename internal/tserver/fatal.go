package tserver

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// The Temporal server reports a listener it cannot bind with its logger's
// Fatal, which exits the process: a port taken between the moment it was
// picked and the moment the server binds it ended a whole test binary with
// no test named, and `ordersync dev` with 7233 taken exited 1 with the
// cause only in the server's log file. fatalLogger turns Fatal, while the
// server starts, into an error Start returns.

// fatalState is what one start attempt's logger saw.
type fatalState struct {
	mu      sync.Mutex
	running bool // started: a fatal is the server's own again
	fatal   *fatalRecord
	// metricsErr is the metrics listener's failure (only warned about).
	metricsErr string
}

// fatalRecord is a Fatal log line, by its message and the tags that say
// what failed.
type fatalRecord struct {
	msg, address, err string
}

func (r *fatalRecord) Error() string {
	s := r.msg
	if r.address != "" {
		s += " on " + r.address
	}
	if r.err != "" {
		s += ": " + r.err
	}
	return s
}

func (st *fatalState) record(msg string, tags []tag.Tag) {
	r := &fatalRecord{msg: msg}
	for _, t := range tags {
		switch t.Key() {
		case "address":
			r.address = fmt.Sprint(t.Value())
		case "error":
			r.err = fmt.Sprint(t.Value())
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.fatal == nil {
		st.fatal = r
	}
}

func (st *fatalState) isRunning() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.running
}

func (st *fatalState) setRunning() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.running = true
}

// first is the first fatal the attempt saw, or nil.
func (st *fatalState) first() *fatalRecord {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.fatal
}

// fatalLogger is the server's logger with Fatal caught while it starts.
type fatalLogger struct {
	log.Logger
	st *fatalState
}

// Fatal, before the server runs, records the cause, logs it as an error
// and ends the calling goroutine (runtime.Goexit), so the start-up code
// after it does not run on a nil listener; the start-up code that called
// it sees its goroutine end (guarded, or fx's start hooks, which report
// such a hook as failed). Once the server runs, a fatal ends the process as
// the server means it to, after saying why on stderr: its log may be a
// file nobody watches.
func (l *fatalLogger) Fatal(msg string, tags ...tag.Tag) {
	if l.st.isRunning() {
		fmt.Fprintf(os.Stderr, "Temporal server: %s\n", describe(msg, tags))
		l.Logger.Fatal(msg, tags...)
		return
	}
	l.st.record(msg, tags)
	l.Logger.Error(msg, tags...)
	runtime.Goexit()
}

func describe(msg string, tags []tag.Tag) string {
	var b strings.Builder
	b.WriteString(msg)
	for _, t := range tags {
		fmt.Fprintf(&b, " %s=%v", t.Key(), t.Value())
	}
	return b.String()
}

// With keeps the catch on loggers the server derives (log.With would wrap
// this one anyway; this keeps the inner logger's cheaper With).
func (l *fatalLogger) With(tags ...tag.Tag) log.Logger {
	return &fatalLogger{Logger: log.With(l.Logger, tags...), st: l.st}
}

// errGoexit is what guarded reports when f ended its goroutine with no
// recorded fatal (not expected: only Fatal does so).
var errGoexit = errors.New("the Temporal server's start-up ended its goroutine")

// guarded runs f in a goroutine of its own, so a Fatal that ends the
// goroutine ends f, not the caller; it returns f's error, or the fatal
// that ended it.
func guarded(st *fatalState, f func() error) error {
	done := make(chan error, 1)
	go func() {
		returned := false
		defer func() {
			if !returned {
				if r := st.first(); r != nil {
					done <- r
				} else {
					done <- errGoexit
				}
			}
		}()
		err := f()
		returned = true
		done <- err
	}()
	return <-done
}
