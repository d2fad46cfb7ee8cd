package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/credentials"
)

// credentialCases is the stored-credential behaviour every backend must
// show. Each case gets a DSN naming a fresh, empty store.
var credentialCases = []conformanceCase{
	{"Create and Get round-trip every field", testCredRoundTrip},
	{"Create refuses a taken name", testCredCreateConflict},
	{"Update compares and swaps on generation", testCredUpdateCAS},
	{"the lease is taken only when free, expired or its owner's", testCredLease},
	{"List pages in byte order without secrets", testCredList},
	{"Stale lists the rows another key sealed", testCredStale},
	{"Delete", testCredDelete},
	{"what the store cannot keep writes nothing", testCredRefuses},
	{"concurrent guarded updates lose nothing", testCredConcurrentCAS},
}

func TestConformanceCredentials(t *testing.T) { runConformance(t, credentialCases) }

// openCredentials opens a store on dsn and returns its credentials.
func openCredentials(t *testing.T, dsn string) credentials.Store {
	t.Helper()
	c, ok := CredentialsOf(openStore(t, dsn))
	require.True(t, ok, "the store keeps stored credentials")
	return c
}

// credRecord is a token record with opaque sealed bytes (the store
// neither seals nor opens).
func credRecord(name string) credentials.Record {
	return credentials.Record{Name: name, Kind: credentials.KindShopify, App: "app-a", KeyID: "k1", Sealed: []byte("sealed-" + name)}
}

func testCredRoundTrip(t *testing.T, dsn string) {
	ctx := context.Background()
	c := openCredentials(t, dsn)
	at := time.Date(2026, 11, 26, 4, 0, 0, 123456789, time.UTC)
	r := credentials.Record{
		Name: "shop-a", Kind: credentials.KindShopify, App: "app-a",
		AccessExpiresAt: at, RefreshExpiresAt: at.Add(90 * 24 * time.Hour), LastRefreshAt: at.Add(-time.Hour),
		LastError: "HTTP 503 busy", KeyID: "k1", Sealed: []byte{0, 1, 2, 255},
		Generation: 99, LeaseOwner: "ignored", LeaseUntil: at,
	}
	gen, err := c.Create(ctx, r)
	require.NoError(t, err)
	require.EqualValues(t, 1, gen)
	got, ok, err := c.Get(ctx, "shop-a")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, at.Truncate(time.Microsecond), got.AccessExpiresAt)
	require.Equal(t, r.RefreshExpiresAt.Truncate(time.Microsecond), got.RefreshExpiresAt)
	require.Equal(t, r.LastRefreshAt.Truncate(time.Microsecond), got.LastRefreshAt)
	require.Equal(t, []byte{0, 1, 2, 255}, got.Sealed)
	require.EqualValues(t, 1, got.Generation, "Create starts at generation 1")
	require.Empty(t, got.LeaseOwner, "Create takes no lease")
	require.True(t, got.LeaseUntil.IsZero())
	require.Equal(t, "HTTP 503 busy", got.LastError)
	require.Equal(t, credentials.KindShopify, got.Kind)
	require.Equal(t, "app-a", got.App)
	require.Equal(t, "k1", got.KeyID)
	require.False(t, got.UpdatedAt.IsZero())

	// Zero times stay zero.
	_, err = c.Create(ctx, credRecord("shop-b"))
	require.NoError(t, err)
	got, _, err = c.Get(ctx, "shop-b")
	require.NoError(t, err)
	require.True(t, got.AccessExpiresAt.IsZero() && got.RefreshExpiresAt.IsZero() && got.LastRefreshAt.IsZero())

	_, ok, err = c.Get(ctx, "nobody")
	require.NoError(t, err)
	require.False(t, ok)
}

func testCredCreateConflict(t *testing.T, dsn string) {
	ctx := context.Background()
	c := openCredentials(t, dsn)
	_, err := c.Create(ctx, credRecord("a"))
	require.NoError(t, err)
	r := credRecord("a")
	r.Sealed = []byte("other")
	_, err = c.Create(ctx, r)
	require.ErrorIs(t, err, credentials.ErrConflict)
	got, _, err := c.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, []byte("sealed-a"), got.Sealed, "the refused create wrote nothing")
}

func testCredUpdateCAS(t *testing.T, dsn string) {
	ctx := context.Background()
	c := openCredentials(t, dsn)
	_, err := c.Create(ctx, credRecord("a"))
	require.NoError(t, err)
	r := credRecord("a")
	r.Sealed, r.KeyID, r.LastError = []byte("v2"), "k2", "x"
	gen, err := c.Update(ctx, r, 1)
	require.NoError(t, err)
	require.EqualValues(t, 2, gen)

	r.Sealed = []byte("stale")
	_, err = c.Update(ctx, r, 1)
	require.ErrorIs(t, err, credentials.ErrConflict, "a write expecting an old generation")
	_, err = c.Update(ctx, credRecord("nobody"), 1)
	require.ErrorIs(t, err, credentials.ErrConflict, "a write to no row")

	got, _, err := c.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, []byte("v2"), got.Sealed)
	require.Equal(t, "k2", got.KeyID)
	require.EqualValues(t, 2, got.Generation)

	// The lease is not the record's: Update leaves it and the generation
	// does not move for it.
	ok, err := c.TryLease(ctx, "a", "w1", time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.True(t, ok)
	_, err = c.Update(ctx, got, 2)
	require.NoError(t, err)
	got, _, err = c.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "w1", got.LeaseOwner)
	require.EqualValues(t, 3, got.Generation)
}

func testCredLease(t *testing.T, dsn string) {
	ctx := context.Background()
	c := openCredentials(t, dsn)
	_, err := c.Create(ctx, credRecord("a"))
	require.NoError(t, err)
	now := time.Now()

	ok, err := c.TryLease(ctx, "a", "w1", now.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, ok, "a free lease is taken")
	ok, err = c.TryLease(ctx, "a", "w2", now.Add(time.Minute))
	require.NoError(t, err)
	require.False(t, ok, "a held lease is not")
	ok, err = c.TryLease(ctx, "a", "w1", now.Add(2*time.Minute))
	require.NoError(t, err)
	require.True(t, ok, "its owner extends it")

	require.NoError(t, c.ReleaseLease(ctx, "a", "w2"), "another owner's release is a no-op")
	ok, err = c.TryLease(ctx, "a", "w2", now.Add(time.Minute))
	require.NoError(t, err)
	require.False(t, ok, "still held by w1")
	require.NoError(t, c.ReleaseLease(ctx, "a", "w1"))
	ok, err = c.TryLease(ctx, "a", "w2", now.Add(-time.Second))
	require.NoError(t, err)
	require.True(t, ok, "a released lease is taken")
	got, _, err := c.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "w2", got.LeaseOwner)

	ok, err = c.TryLease(ctx, "a", "w3", now.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, ok, "an expired lease is taken")

	_, err = c.TryLease(ctx, "nobody", "w1", now.Add(time.Minute))
	require.ErrorIs(t, err, credentials.ErrConflict)
	_, err = c.TryLease(ctx, "a", "", now.Add(time.Minute))
	require.ErrorIs(t, err, credentials.ErrInvalid)
}

func testCredList(t *testing.T, dsn string) {
	ctx := context.Background()
	c := openCredentials(t, dsn)
	// Byte order: upper case before lower case, '-' before digits.
	for _, n := range []string{"b", "B", "a-1", "a1", "a"} {
		_, err := c.Create(ctx, credRecord(n))
		require.NoError(t, err)
	}
	var names []string
	after := ""
	for {
		page, err := c.List(ctx, after, 2)
		require.NoError(t, err)
		for _, r := range page {
			require.Nil(t, r.Sealed, "List returns metadata only")
			names = append(names, r.Name)
		}
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].Name
	}
	require.Equal(t, []string{"B", "a", "a-1", "a1", "b"}, names)
	_, err := c.List(ctx, "", -1)
	require.ErrorIs(t, err, credentials.ErrInvalid)
}

func testCredStale(t *testing.T, dsn string) {
	ctx := context.Background()
	c := openCredentials(t, dsn)
	for i, key := range []string{"k1", "k2", "k1", "k3"} {
		r := credRecord(fmt.Sprintf("c%d", i))
		r.KeyID = key
		_, err := c.Create(ctx, r)
		require.NoError(t, err)
	}
	page, err := c.Stale(ctx, "k1", "", 1)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, "c1", page[0].Name)
	require.Equal(t, []byte("sealed-c1"), page[0].Sealed, "Stale returns the sealed payload")
	page, err = c.Stale(ctx, "k1", "c1", 0)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, "c3", page[0].Name)
}

func testCredDelete(t *testing.T, dsn string) {
	ctx := context.Background()
	c := openCredentials(t, dsn)
	_, err := c.Create(ctx, credRecord("a"))
	require.NoError(t, err)
	ok, err := c.Delete(ctx, "a")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = c.Delete(ctx, "a")
	require.NoError(t, err)
	require.False(t, ok)
	_, found, err := c.Get(ctx, "a")
	require.NoError(t, err)
	require.False(t, found)
	_, err = c.Create(ctx, credRecord("a"))
	require.NoError(t, err, "a deleted name is free again")
}

func testCredRefuses(t *testing.T, dsn string) {
	ctx := context.Background()
	c := openCredentials(t, dsn)
	bad := map[string]func(r *credentials.Record){
		"empty name":         func(r *credentials.Record) { r.Name = "" },
		"name with a slash":  func(r *credentials.Record) { r.Name = "a/b" },
		"unknown kind":       func(r *credentials.Record) { r.Kind = "github" },
		"token without app":  func(r *credentials.Record) { r.App = "" },
		"app naming an app":  func(r *credentials.Record) { r.Kind = credentials.KindApp },
		"no sealed secret":   func(r *credentials.Record) { r.Sealed = nil },
		"bad key id":         func(r *credentials.Record) { r.KeyID = "k 1" },
		"NUL in last error":  func(r *credentials.Record) { r.LastError = "a\x00b" },
		"invalid UTF-8 text": func(r *credentials.Record) { r.LastError = "\xff" },
	}
	for what, mutate := range bad {
		r := credRecord("a")
		mutate(&r)
		_, err := c.Create(ctx, r)
		require.ErrorIs(t, err, credentials.ErrInvalid, what)
	}
	rs, err := c.List(ctx, "", 0)
	require.NoError(t, err)
	require.Empty(t, rs)
	_, _, err = c.Get(ctx, "a\x00")
	require.ErrorIs(t, err, credentials.ErrInvalid)
}

func testCredConcurrentCAS(t *testing.T, dsn string) {
	ctx := context.Background()
	c := openCredentials(t, dsn)
	_, err := c.Create(ctx, credRecord("a"))
	require.NoError(t, err)
	// Each writer adds one to a counter kept in Sealed, reading and
	// writing compare-and-swap until its write lands: no increment is lost.
	const writers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					r, _, err := c.Get(ctx, "a")
					if err != nil {
						errs <- err
						return
					}
					var n int
					_, _ = fmt.Sscanf(string(r.Sealed), "n=%d", &n)
					r.Sealed = []byte(fmt.Sprintf("n=%d w=%d", n+1, w))
					if _, err := c.Update(ctx, r, r.Generation); err == nil {
						break
					} else if !isConflict(err) {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	r, _, err := c.Get(ctx, "a")
	require.NoError(t, err)
	var n int
	_, _ = fmt.Sscanf(string(r.Sealed), "n=%d", &n)
	require.Equal(t, writers*each, n)
	require.EqualValues(t, 1+writers*each, r.Generation)
}

func isConflict(err error) bool { return errors.Is(err, credentials.ErrConflict) }
