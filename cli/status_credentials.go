package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/store"
)

// platformCredential is a platform's stored credential as `platform
// status` shows it: metadata from the store, never a secret.
type platformCredential struct {
	// Stored is the credential's name (credentials: {stored: NAME}).
	Stored               string           `json:"stored"`
	Kind                 credentials.Kind `json:"kind,omitempty"`
	AccessExpiresAt      time.Time        `json:"access_expires_at,omitzero"`
	RefreshExpiresAt     time.Time        `json:"refresh_expires_at,omitzero"`
	LastRefreshAt        time.Time        `json:"last_refresh_at,omitzero"`
	NeedsReauthorization bool             `json:"needs_reauthorization"`
	// LastError is the last failed refresh's error, clipped.
	LastError string `json:"last_error,omitempty"`
	// Error says why the credential could not be shown (not stored, the
	// store could not be read).
	Error string `json:"error,omitempty"`
}

// maxStatusCredentialError clips a credential's last error in status.
const maxStatusCredentialError = 200

// credentialLookup finds the stored credential of a platform (its registry
// entry, else the platforms file) and reads its metadata; it needs no keys.
type credentialLookup struct {
	reg  accounts.Registry // nil: the store keeps no registry
	file *config.File      // nil: no platforms file
	mgr  *credentials.Manager
	st   store.Store
}

// openCredentialLookup opens the store for status's credential column.
// No store credentials (a store without the table) is nil, nil.
func (a *App) openCredentialLookup(ctx context.Context) (*credentialLookup, error) {
	file, err := a.loadPlatformsIfAny()
	if err != nil {
		file = nil // status shows the workflows without the file; so do credentials
	}
	if backend, target, err := store.ParseDSN(a.Process.StoreDSN); err == nil && backend == store.BackendSQLite {
		path, _, _ := strings.Cut(target, "?")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil // no store here: no stored credentials, and none is created
		}
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := store.Open(octx, a.Process.StoreDSN)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	cs, ok := store.CredentialsOf(st)
	if !ok {
		_ = st.Close()
		return nil, nil
	}
	reg, _ := registryOf(st)
	return &credentialLookup{reg: reg, file: file, mgr: credentials.NewManager(cs, nil, nil, credentials.Options{}), st: st}, nil
}

func (l *credentialLookup) Close() {
	if l != nil {
		_ = l.st.Close()
	}
}

// storedName is the stored credential platform names, "" for none (static
// credentials, or a platform neither registered nor in the file).
func (l *credentialLookup) storedName(ctx context.Context, platform string) (string, error) {
	if l.reg != nil {
		e, ok, err := l.reg.Get(ctx, accounts.ClassPlatform, platform)
		if err != nil {
			return "", err
		}
		if ok && e.State != accounts.Removed {
			p, err := accounts.DecodePlatform(e)
			if err != nil {
				return "", err
			}
			return p.Credentials.Stored, nil
		}
	}
	if l.file != nil {
		for _, p := range l.file.Platforms {
			if p.Name == platform {
				return p.Credentials.Stored, nil
			}
		}
	}
	return "", nil
}

// fill sets the Credential of each row whose platform names a stored
// credential. What cannot be read is said in the row's credential, never
// fails the status.
func (l *credentialLookup) fill(ctx context.Context, rows []platformStatus) {
	if l == nil {
		return
	}
	for i := range rows {
		name, err := l.storedName(ctx, rows[i].Platform)
		if err != nil {
			rows[i].Credential = &platformCredential{Error: textclip.Message(err.Error())}
			continue
		}
		if name == "" {
			continue
		}
		c := &platformCredential{Stored: name}
		rows[i].Credential = c
		s, ok, err := l.mgr.Show(ctx, name)
		switch {
		case err != nil:
			c.Error = textclip.Message(err.Error())
		case !ok:
			c.Error = "not stored (ordersync credentials import " + textclip.Value(name) + ", or install the app)"
		case s.Kind == credentials.KindApp:
			c.Error = "names a stored app, not a token"
		default:
			c.Kind, c.AccessExpiresAt, c.RefreshExpiresAt, c.LastRefreshAt = s.Kind, s.AccessExpiresAt, s.RefreshExpiresAt, s.LastRefreshAt
			c.NeedsReauthorization = s.NeedsReauthorization
			c.LastError = textclip.Clip(s.LastError, maxStatusCredentialError)
		}
	}
}

// renderCredentialTable lists the stored credentials of the rows that have
// one, after the status table; nothing when none has.
func renderCredentialTable(w io.Writer, rows []platformStatus, now time.Time) error {
	some := false
	for _, r := range rows {
		some = some || r.Credential != nil
	}
	if !some {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM\tCREDENTIAL\tKIND\tACCESS EXPIRES\tREFRESH EXPIRES\tLAST REFRESH\tRE-AUTHORIZE\tLAST ERROR")
	for _, r := range rows {
		c := r.Credential
		if c == nil {
			continue
		}
		if c.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t%s\n", term(r.Platform), termOr(c.Stored), clipText(c.Error, 80))
			continue
		}
		reauth := "no"
		if c.NeedsReauthorization {
			reauth = "YES: re-install / re-authorize"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", term(r.Platform), term(c.Stored), c.Kind,
			whenIn(c.AccessExpiresAt, now), whenIn(c.RefreshExpiresAt, now), when(c.LastRefreshAt), reauth, clipText(c.LastError, 80))
	}
	return tw.Flush()
}

// whenIn is an expiry as status shows it: the time and how far off.
func whenIn(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now)
	if d < 0 {
		return when(t) + " (expired)"
	}
	if d >= 48*time.Hour {
		return fmt.Sprintf("%s (in %dd)", when(t), int(d/(24*time.Hour)))
	}
	return fmt.Sprintf("%s (in %s)", when(t), fmtLag(d.Truncate(time.Second)))
}

func termOr(s string) string {
	if s == "" {
		return "-"
	}
	return term(s)
}
