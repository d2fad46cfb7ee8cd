package credentials

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/ordersync/ordersync/config"
)

// keptSecrets is how many secrets Recent remembers: a request sent with
// one may still fail after it was replaced, and its error is redacted
// with the list as it stands then.
const keptSecrets = 4

// recentWrite is how close to its last modification a file is read again
// on every call even when its stamp is unchanged: a second write within
// the file system's timestamp granularity, with the same size, leaves the
// same stamp.
const recentWrite = 2 * time.Second

// Static is the Source of an {env} or {file} reference: the referenced
// text, trimmed. A variable is read at every call (cheap); a file is read
// again when its stamp (modification time, size, identity, so a rename
// over it counts) changed, one stat per call, so a token fixed or rotated
// in the file is used by the next request without a restart. Errors name
// the reference, never the secret (config.CredentialRef.Resolve reads).
// A {stored} reference is no static secret: Secret says so, naming it.
func Static(ref config.CredentialRef) Source { return &static{ref: ref, now: time.Now} }

type static struct {
	ref config.CredentialRef
	now func() time.Time

	mu     sync.Mutex
	val    string      // the file's text when stamp was taken
	stamp  os.FileInfo // nil: not read yet, or the last read failed
	recent []string
}

func (s *static) String() string { return s.ref.String() }

func (s *static) Secret(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ref.Env == "" && s.ref.File != "" && s.stamp != nil {
		if fi, err := os.Stat(s.ref.File); err == nil && sameStamp(s.stamp, fi) && s.now().Sub(fi.ModTime()) > recentWrite {
			return s.val, nil
		}
	}
	return s.read()
}

// read reads the origin now; s.mu is held.
func (s *static) read() (string, error) {
	var before os.FileInfo
	if s.ref.Env == "" && s.ref.File != "" {
		// Stat before reading: a write between the two leaves a stamp
		// older than the text, so the next call reads again.
		before, _ = os.Stat(s.ref.File)
	}
	v, err := s.ref.Resolve()
	if err != nil {
		s.stamp, s.val = nil, ""
		return "", err
	}
	s.stamp, s.val = before, v
	s.remember(v)
	return v, nil
}

func (s *static) Refused(ctx context.Context, secret string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.read()
	if err != nil {
		return false, err
	}
	return v != secret, nil
}

func (s *static) Recent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.recent...)
}

// remember adds v to the recent secrets, newest last; s.mu is held.
func (s *static) remember(v string) {
	if n := len(s.recent); n > 0 && s.recent[n-1] == v {
		return
	}
	for i, r := range s.recent {
		if r == v { // back to an earlier secret: move it to the end
			s.recent = append(s.recent[:i:i], s.recent[i+1:]...)
			break
		}
	}
	s.recent = append(s.recent, v)
	if len(s.recent) > keptSecrets {
		s.recent = s.recent[len(s.recent)-keptSecrets:]
	}
}

// sameStamp says the file looks unchanged: the same file (a rename over
// the path gives another), size and modification time.
func sameStamp(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
