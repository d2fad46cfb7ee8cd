package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// How the SQLite store survives its file going bad under a running process.
//
// SQLite keeps what it found when a connection opened the file: a deleted
// database stays writable through its open handles (the inode lives on, the
// path no longer leads to it), and a connection that opened an unwritable
// file stays read-only after the file is writable again. So:
//
//   - Before and after every commit the store checks that the path still
//     names the file its pool opened (device and inode). If not, the batch
//     fails, and a store error is something the activity retries and,
//     failing that, dead-letters: the watermark never passes orders that
//     went nowhere. Not covered: a delete after the second check (that
//     removes committed data, as any delete does), and deleting only the
//     -wal and -shm files, which leaves the main file's identity unchanged.
//   - Write errors that leave connections unusable (read-only, I/O error,
//     disk full, corrupt, cannot open, file replaced; see breaksPool) close
//     the whole pool. The next call reopens it on the path (a new *sql.DB,
//     migrations applied), at most once per reopenEvery so a file that stays
//     broken is not hammered. A missing file is not re-created: that would
//     hide the loss behind an empty store. Restore it, or create an empty
//     file at the path to start afresh (restarting the process does that too).
//   - The driver maps the -shm file into memory, so a -shm that cannot be
//     written (chattr +i, a full or vanished file system) faults inside Go
//     code: SIGBUS, which kills the process with no word about the store.
//     Every call into the driver runs under guard, which turns the fault
//     into an error. The connection that faulted is abandoned mid-call and
//     may still hold SQLite's in-process locks on the -shm, so a new pool in
//     this process could wait on them forever; the store therefore refuses
//     all further work and onFault (by default exitOnFault) ends the process
//     with the cause, for the supervisor to restart it. Nothing committed is
//     lost (a WAL commit survives the process), and the batch in flight is
//     retried by Temporal.

const (
	// sqliteReopenEvery spaces attempts to reopen a closed pool.
	sqliteReopenEvery = time.Second
	// faultExitCode is EX_IOERR from sysexits.h.
	faultExitCode = 74
	// faultExitDelay lets the failed activity reach Temporal before the
	// process ends, so the cause also shows in the slice's history.
	faultExitDelay = 2 * time.Second
)

// errFileChanged marks a database file that was deleted or replaced while
// the store had it open.
var errFileChanged = errors.New("database file changed under the store")

// sqlitePool is one *sql.DB and the file it opened.
type sqlitePool struct {
	db   *sql.DB
	file fileID
}

// sqlitePools owns the store's current pool and replaces it after faults.
type sqlitePools struct {
	path        string
	now         func() time.Time
	reopenEvery time.Duration
	// onFault is called once, after a memory fault in the driver.
	onFault func(error)

	mu         sync.RWMutex // held shared while a pool is in use, exclusively to change the fields below
	pool       *sqlitePool  // nil after a write error broke it, until reopened
	broken     error        // why pool is nil
	nextReopen time.Time    // no reopen attempt before this
	fault      error        // a recovered memory fault: the store refuses all work
	closed     bool
}

func newSQLitePools(path string) sqlitePools {
	return sqlitePools{path: path, now: time.Now, reopenEvery: sqliteReopenEvery, onFault: exitOnFault}
}

// openPool opens a pool on the path, applies pending migrations and records
// which file it opened.
func (s *sqlitePools) openPool(ctx context.Context) (*sqlitePool, error) {
	db, err := sql.Open("sqlite", s.path+"?"+sqliteParams)
	if err != nil {
		return nil, err
	}
	if err := migrateSQLite(ctx, db, s.now()); err != nil {
		db.Close()
		return nil, err
	}
	id, err := statFileID(s.path)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("identify the database file: %w", err)
	}
	return &sqlitePool{db: db, file: id}, nil
}

// requireWritable fails when SQLite opened the database read-only, as it
// does when the file cannot be opened for writing (permissions, chattr +i,
// a read-only mount).
func requireWritable(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(interface{ IsReadOnly(string) (bool, error) })
		if !ok {
			return nil
		}
		readOnly, err := c.IsReadOnly("main")
		if err != nil {
			return err
		}
		if readOnly {
			return errors.New("the database file can only be opened read-only")
		}
		return nil
	})
}

// checkFile fails when the path no longer names the file the pool opened.
func (p *sqlitePool) checkFile(path string) error {
	if !p.file.known {
		return nil // no inode numbers on this platform
	}
	id, err := statFileID(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("database file %s was deleted while open: %w", path, errFileChanged)
	case err != nil:
		return fmt.Errorf("check database file %s: %v: %w", path, err, errFileChanged)
	case id != p.file:
		return fmt.Errorf("database file %s was replaced while open (device/inode %d/%d, now %d/%d): %w",
			path, p.file.dev, p.file.ino, id.dev, id.ino, errFileChanged)
	}
	return nil
}

// withPool runs op on the current pool, reopening it first if it was
// closed. Afterwards it closes the pool when op's error broke it, and stops
// the store when op hit a memory fault.
func (s *sqlitePools) withPool(ctx context.Context, op func(*sqlitePool) error) error {
	var used *sqlitePool
	err := guard(func() error {
		p, err := s.acquire(ctx)
		if err != nil {
			return err
		}
		defer s.mu.RUnlock()
		used = p
		return op(p)
	})
	var fault *faultError
	switch {
	case errors.As(err, &fault):
		return s.stop(err)
	case used != nil && breaksPool(err):
		s.drop(used, err)
	}
	return err
}

// acquire returns the current pool with s.mu read-locked, reopening the
// pool first when it is closed.
func (s *sqlitePools) acquire(ctx context.Context) (*sqlitePool, error) {
	for {
		s.mu.RLock()
		if s.pool != nil {
			return s.pool, nil
		}
		s.mu.RUnlock()
		if err := s.reopen(ctx); err != nil {
			return nil, err
		}
	}
}

func (s *sqlitePools) reopen(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.fault != nil:
		return s.fault
	case s.closed:
		return fmt.Errorf("sqlite store %s is closed", s.path)
	case s.pool != nil:
		return nil // another caller reopened it
	}
	now := s.now()
	if now.Before(s.nextReopen) {
		return fmt.Errorf("sqlite store %s closed after an error, next reopen in %s: %w",
			s.path, s.nextReopen.Sub(now).Round(time.Millisecond), s.broken)
	}
	s.nextReopen = now.Add(s.reopenEvery)
	if _, err := os.Stat(s.path); errors.Is(err, fs.ErrNotExist) {
		s.broken = fmt.Errorf("database file %s is missing; restore it, or create an empty file there to start an empty store: %w",
			s.path, errFileChanged)
		return s.broken
	}
	p, err := s.openPool(ctx)
	if err == nil {
		// With nothing to migrate, a read-only file passes openPool, and a
		// pool on it would only fail the next write. (Open does not ask:
		// verify may read a store it cannot write.)
		if err = requireWritable(ctx, p.db); err != nil {
			p.db.Close()
		}
	}
	if err != nil {
		s.broken = fmt.Errorf("reopen sqlite store %s: %w", s.path, err)
		return s.broken
	}
	slog.Info("sqlite store reopened", "path", s.path, "after", s.broken)
	s.pool, s.broken = p, nil
	return nil
}

// drop closes p after err broke it, unless another caller already did.
func (s *sqlitePools) drop(p *sqlitePool, err error) {
	s.mu.Lock()
	if s.pool != p {
		s.mu.Unlock()
		return
	}
	s.pool, s.broken = nil, err
	s.mu.Unlock()
	slog.Warn("sqlite store: closing the connection pool after a write error; the next call reopens it",
		"path", s.path, "err", err)
	var fault *faultError
	if cerr := guard(p.db.Close); errors.As(cerr, &fault) {
		_ = s.stop(cerr)
	}
}

// stop makes the store refuse all work after the memory fault err, reports
// it once and returns the error callers see from now on.
func (s *sqlitePools) stop(err error) error {
	s.mu.Lock()
	first := s.fault == nil
	if first {
		s.fault = fmt.Errorf("sqlite store %s stopped after a memory fault in the SQLite driver "+
			"(is %s-shm or %s-wal unwritable, truncated or on a full file system?); the process must restart: %w",
			s.path, s.path, s.path, err)
	}
	p := s.pool
	s.pool = nil
	stopped := s.fault
	s.mu.Unlock()
	if first {
		s.onFault(stopped)
		if p != nil {
			// Idle connections only: the one that faulted is abandoned. In
			// the background, as closing may run into the fault again.
			go func() { _ = guard(p.db.Close) }()
		}
	}
	return stopped
}

// exitOnFault reports a memory fault and ends the process, so that a
// supervisor restarts it with a fresh SQLite state (see the top of the file).
func exitOnFault(err error) {
	slog.Error("store fault: exiting so that a supervisor restarts the worker",
		"err", err, "exit_code", faultExitCode, "in", faultExitDelay)
	time.AfterFunc(faultExitDelay, func() { os.Exit(faultExitCode) })
}

func (s *sqlitePools) Close() error {
	s.mu.Lock()
	p := s.pool
	s.pool, s.closed = nil, true
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return guard(p.db.Close)
}

func (s *sqlitePools) setClock(now func() time.Time) { s.now = now }

// breaksPool reports errors after which the pool's connections cannot be
// trusted, because SQLite does not revisit what it found when a connection
// opened the file (a read-only fallback stays read-only).
func breaksPool(err error) bool {
	if errors.Is(err, errFileChanged) {
		return true
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff { // primary code of an extended one
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL,
		sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CANTOPEN:
		return true
	}
	return false
}

// faultError is a memory fault (SIGBUS, SIGSEGV) recovered by guard.
type faultError struct {
	addr  uintptr
	cause error
}

func (e *faultError) Error() string {
	return fmt.Sprintf("memory fault at address %#x: %v", e.addr, e.cause)
}

// guard runs op with memory faults turned into panics
// (debug.SetPanicOnFault, which covers this goroutine: database/sql calls
// the driver on the caller's goroutine) and returns such a panic as a
// *faultError. Other panics go on.
func guard(op func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		rerr, isRuntime := r.(runtime.Error)
		addr, isFault := r.(interface{ Addr() uintptr })
		if !isRuntime || !isFault {
			panic(r)
		}
		err = &faultError{addr: addr.Addr(), cause: rerr}
	}()
	return op()
}

// migrationBusyWait bounds how long an opener retries a migration's BEGIN
// that SQLite refused as busy.
const migrationBusyWait = time.Minute

// beginMigration begins the migration's IMMEDIATE transaction. Several
// processes opening a new file at once (workers started together) can be
// refused SQLITE_BUSY at once, without busy_timeout's wait, while another
// one switches the file to WAL or recovers it; that refusal is retried, as
// the other opener's migration ends in milliseconds.
func beginMigration(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	deadline := time.Now().Add(migrationBusyWait)
	wait := 5 * time.Millisecond
	for {
		tx, err := db.BeginTx(ctx, nil)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return tx, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}
