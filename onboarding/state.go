package onboarding

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// StateTTL bounds how long a merchant may take on the consent page.
const StateTTL = 10 * time.Minute

// errTooManyFlows: more flows are waiting for merchants than maxPendingStates.
var errTooManyFlows = refuse(http.StatusServiceUnavailable, "too many authorizations are in progress; try again in a few minutes")

// maxPendingStates bounds the states held at once: a client that starts
// flows without finishing them must not grow the process without limit.
const maxPendingStates = 10000

// pending is one issued state: the flow and the account it was issued for.
type pending struct {
	flow    string // "shopify" or "amazon"
	subject string // the shop domain, or the account name asked for
	expires time.Time
}

// states holds the issued, unused states. A state is removed when it is
// used, so a replayed callback finds nothing. It lives in this process:
// one serve (or a sticky route) handles a merchant's whole flow.
type states struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]pending
}

func newStates(now func() time.Time) *states {
	return &states{now: now, m: make(map[string]pending)}
}

// issue returns a new random state for flow and subject.
func (s *states) issue(flow, subject string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	st := base64.RawURLEncoding.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(s.m) >= maxPendingStates {
		for k, p := range s.m {
			if now.After(p.expires) {
				delete(s.m, k)
			}
		}
		if len(s.m) >= maxPendingStates {
			return "", errTooManyFlows
		}
	}
	s.m[st] = pending{flow: flow, subject: subject, expires: now.Add(StateTTL)}
	return st, nil
}

// take consumes state: it reports the pending flow when the state was
// issued here for flow, is unused and has not expired.
func (s *states) take(flow, state string) (pending, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.m[state]
	if !ok {
		return pending{}, false
	}
	delete(s.m, state)
	if p.flow != flow || s.now().After(p.expires) {
		return pending{}, false
	}
	return p, true
}
