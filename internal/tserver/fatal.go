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
// and abandons the start-up code that called it, so that code does not go
// on with a nil listener: in a goroutine guarded started (NewServer builds
// every listener there) it panics with fatalPanic, which guarded recovers
// (a panic passes through the sync.OnceValue the gRPC listener is built
// in; runtime.Goexit would not); in any other goroutine (fx's start hooks,
// which report a hook whose goroutine ended as failed) it ends the
// goroutine. Once the server runs, a fatal ends the process as the server
// means it to, after saying why on stderr: its log may be a file nobody
// watches.
func (l *fatalLogger) Fatal(msg string, tags ...tag.Tag) {
	if l.st.isRunning() {
		fmt.Fprintf(os.Stderr, "Temporal server: %s\n", describe(msg, tags))
		l.Logger.Fatal(msg, tags...)
		return
	}
	l.st.record(msg, tags)
	l.Logger.Error(msg, tags...)
	if inGuarded() {
		panic(fatalPanic{})
	}
	runtime.Goexit()
}

// fatalPanic is how Fatal leaves start-up code guarded runs.
type fatalPanic struct{}

// inGuarded says whether the calling goroutine is one guarded started.
func inGuarded() bool {
	pcs := make([]uintptr, 4096)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "internal/tserver.guarded.func1") {
			return true
		}
		if !more {
			return false
		}
	}
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

// guarded runs f in a goroutine of its own, so a Fatal that abandons f
// (fatalPanic, or the goroutine's end) does not abandon the caller; it
// returns f's error, or the fatal that ended f.
func guarded(st *fatalState, f func() error) error {
	done := make(chan error, 1)
	go func() {
		returned := false
		defer func() {
			if !returned {
				if p := recover(); p != nil {
					if _, ok := p.(fatalPanic); !ok {
						panic(p)
					}
				}
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
