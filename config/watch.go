package config

import (
	"log/slog"
	"os"
	"sync"
	"time"
)

// ReloadCheckInterval is how often, at most, a WatchedFile looks at its
// file's size and modification time.
const ReloadCheckInterval = 2 * time.Second

// WatchedFile is a platforms file that follows edits on disk, so a worker
// trusts an endpoint or credential reference the operator changed without
// a restart. It looks for a change lazily, when asked, at most every
// interval (Refresh looks at once); a file that changed is read again, and
// one that no longer loads keeps the last good version and logs an error
// once per change. It is safe for concurrent use.
type WatchedFile struct {
	path     string
	interval time.Duration
	logger   *slog.Logger
	now      func() time.Time

	mu      sync.Mutex
	file    *File
	stamp   fileStamp // of the version in file
	failed  fileStamp // the last version that did not load, already logged
	checked time.Time
}

// fileStamp tells versions of a file apart without reading it.
type fileStamp struct {
	size    int64
	modTime time.Time
	missing bool
}

func (s fileStamp) same(o fileStamp) bool {
	return s.size == o.size && s.modTime.Equal(o.modTime) && s.missing == o.missing
}

func statFile(path string) fileStamp {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{missing: true}
	}
	return fileStamp{size: st.Size(), modTime: st.ModTime()}
}

// WatchFile loads the platforms file at path and returns it watched. An
// interval of 0 means ReloadCheckInterval; a nil logger, slog.Default().
func WatchFile(path string, interval time.Duration, logger *slog.Logger) (*WatchedFile, error) {
	if interval <= 0 {
		interval = ReloadCheckInterval
	}
	if logger == nil {
		logger = slog.Default()
	}
	stamp := statFile(path) // before reading: a change while reading is seen next time
	f, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	return &WatchedFile{path: path, interval: interval, logger: logger, now: time.Now,
		file: f, stamp: stamp, checked: time.Now()}, nil
}

// Current returns the file's newest good version, re-reading it first when
// the last look is older than the interval and the file changed.
func (w *WatchedFile) Current() *File {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.now().Sub(w.checked) >= w.interval {
		w.reloadLocked()
	}
	return w.file
}

// Get returns the platform of that name in the file's newest good version.
func (w *WatchedFile) Get(name string) (Platform, bool) { return w.Current().Get(name) }

// Refresh looks at the file now, whatever the interval, and re-reads it if
// it changed. A worker calls it before refusing settings the version it
// holds does not declare: the operator may have just edited the file.
func (w *WatchedFile) Refresh() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reloadLocked()
}

func (w *WatchedFile) reloadLocked() {
	w.checked = w.now()
	stamp := statFile(w.path)
	if stamp.same(w.stamp) || stamp.same(w.failed) {
		return
	}
	if stamp.missing {
		w.failed = stamp
		w.logger.Error("platforms file is gone; keeping the settings last read from it", "file", w.path)
		return
	}
	f, err := LoadFile(w.path)
	if err != nil {
		w.failed = stamp
		w.logger.Error("platforms file changed but does not load; keeping the settings last read from it",
			"file", w.path, "error", err)
		return
	}
	w.file, w.stamp, w.failed = f, stamp, fileStamp{}
	w.logger.Info("platforms file re-read", "file", w.path, "platforms", len(f.Platforms))
}
