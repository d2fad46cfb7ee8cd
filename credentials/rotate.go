package credentials

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// RotateReport counts what RotateKey did.
type RotateReport struct {
	Key      string   `json:"key"`      // the current key id every row is now sealed with
	Resealed int      `json:"resealed"` // rows re-sealed with it
	Retried  int      `json:"retried"`  // writes retried after losing a race (a refresh, an import)
	Failed   []string `json:"failed,omitempty"`
}

// maxRotateTries bounds the attempts to re-seal one row that keeps
// changing under the rotation.
const maxRotateTries = 20

// RotateKey re-seals every stored credential not sealed with the
// keyring's current key, one row at a time: it takes the row's refresh
// lease (so no refresh commits in between), opens it with its old key,
// seals it with the current one and writes it back compare-and-swap on
// its generation. Afterwards no row needs an old key, and the old key
// can be removed from the keys setting. A row whose key is not in the
// keyring is reported in Failed and left as it is.
func (m *Manager) RotateKey(ctx context.Context) (RotateReport, error) {
	if m.keys == nil {
		return RotateReport{}, fmt.Errorf("rotate key: %w", ErrNoKeys)
	}
	current := m.keys.CurrentID()
	rep := RotateReport{Key: current}
	var errs []error
	after := ""
	for {
		page, err := m.st.Stale(ctx, current, after, MaxPage)
		if err != nil {
			return rep, err
		}
		for _, r := range page {
			after = r.Name
			retried, err := m.reseal(ctx, r)
			rep.Retried += retried
			switch {
			case err == nil:
				rep.Resealed++
			case ctx.Err() != nil:
				return rep, err
			default:
				rep.Failed = append(rep.Failed, r.Name)
				errs = append(errs, err)
			}
		}
		if len(page) < MaxPage {
			break
		}
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("rotate key: %d credential(s) not re-sealed (%s): %w", len(rep.Failed), strings.Join(rep.Failed, ", "), errors.Join(errs...))
	}
	return rep, nil
}

// reseal re-seals one row with the current key, and reports how many
// writes it retried.
func (m *Manager) reseal(ctx context.Context, r Record) (int, error) {
	owner := leaseOwner()
	wait := m.opt.PollMin
	retried := 0
	// Waiting for another holder's lease is not a lost race: a refresh may
	// hold it for as long as its token endpoint takes, and a lease whose
	// holder died runs out after LeaseTTL. So lease waits are bounded by
	// that, and only writes that raced count against maxRotateTries.
	leaseDeadline := time.Now().Add(m.opt.LeaseTTL + m.opt.PollMax)
	for try := 0; try < maxRotateTries; {
		got, err := m.st.TryLease(ctx, r.Name, owner, m.opt.Now().Add(m.opt.LeaseTTL))
		if errors.Is(err, ErrConflict) {
			return retried, nil // removed meanwhile: nothing to re-seal
		}
		if err != nil {
			return retried, err
		}
		if !got {
			// A refresh is under way; it seals with the current key too.
			if time.Now().After(leaseDeadline) {
				return retried, fmt.Errorf("stored credential %q: its lease stayed taken for %s, longer than a lease lasts: %w",
					r.Name, m.opt.LeaseTTL+m.opt.PollMax, ErrConflict)
			}
			if err := waitLease(ctx, r.Name, wait); err != nil {
				return retried, err
			}
			wait = min(wait*2, m.opt.PollMax)
			continue
		}
		try++
		done, err := m.resealLeased(ctx, r.Name)
		m.releaseLease(ctx, r.Name, owner)
		if err != nil || done {
			return retried, err
		}
		retried++
	}
	return retried, fmt.Errorf("stored credential %q: changed on every one of %d attempts to re-seal it: %w", r.Name, maxRotateTries, ErrConflict)
}

// resealLeased re-reads the row under its lease and re-seals it; done is
// false when a write raced it (the caller tries again).
func (m *Manager) resealLeased(ctx context.Context, name string) (bool, error) {
	r, ok, err := m.st.Get(ctx, name)
	if err != nil {
		return false, err
	}
	if !ok || r.KeyID == m.keys.CurrentID() {
		return true, nil
	}
	p, err := openPayload(m.keys, r)
	if err != nil {
		return false, err
	}
	if err := p.seal(m.keys, &r); err != nil {
		return false, err
	}
	if _, err := m.st.Update(ctx, r, r.Generation); err != nil {
		if errors.Is(err, ErrConflict) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
