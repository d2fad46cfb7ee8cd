package credentials

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func testKey(t *testing.T) string {
	t.Helper()
	e, err := NewKeyEntry(time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	return e
}

func TestNewKeyEntry(t *testing.T) {
	e := testKey(t)
	id, b64, ok := strings.Cut(e, ":")
	require.True(t, ok)
	require.True(t, strings.HasPrefix(id, "k20261126-"), id)
	raw, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	require.Len(t, raw, 32)
	require.NotEqual(t, e, testKey(t), "every entry is new")
	k, err := ParseKeyring(e, "test")
	require.NoError(t, err)
	require.Equal(t, id, k.CurrentID())
}

func TestParseKeyringRefuses(t *testing.T) {
	good := testKey(t)
	secret := strings.SplitN(good, ":", 2)[1]
	short := "k1:" + base64.StdEncoding.EncodeToString(make([]byte, 16))
	for _, tc := range []struct {
		text, want string
	}{
		{"", "no key entries"},
		{" , \n# comment\n", "no key entries"},
		{good + ",nocolon" + secret, "entry 2 is not id:base64-key"},
		{"bad id:" + secret, "entry 1 is not id:base64-key"},
		{"k1:not*base64", "entry 1 (id k1): the key is not base64"},
		{short, "entry 1 (id k1): the key is 16 bytes, want 32"},
		{"k1:" + secret + "\nk1:" + secret, "entry 2: id k1 is used twice"},
	} {
		_, err := ParseKeyring(tc.text, "ORDERSYNC_CREDENTIAL_KEYS")
		require.Error(t, err, tc.text)
		require.Contains(t, err.Error(), tc.want)
		require.Contains(t, err.Error(), "ORDERSYNC_CREDENTIAL_KEYS")
		require.NotContains(t, err.Error(), secret, "an error quotes a key")
	}
}

func TestLoadKeyring(t *testing.T) {
	a, b := testKey(t), testKey(t)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	_, err := LoadKeyring(env(nil))
	require.ErrorIs(t, err, ErrNoKeys)
	_, err = LoadKeyring(env(map[string]string{KeysEnv: a, KeysFileEnv: "/x"}))
	require.ErrorContains(t, err, "not both")

	k, err := LoadKeyring(env(map[string]string{KeysEnv: a + "," + b}))
	require.NoError(t, err)
	ida, _, _ := strings.Cut(a, ":")
	idb, _, _ := strings.Cut(b, ":")
	require.Equal(t, []string{ida, idb}, k.IDs(), "the first key seals")

	path := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(path, []byte("# new key first\n"+b+"\n"+a+"\n"), 0o600))
	k, err = LoadKeyring(env(map[string]string{KeysFileEnv: path}))
	require.NoError(t, err)
	require.Equal(t, idb, k.CurrentID())
	require.True(t, k.Has(ida))

	_, err = LoadKeyring(env(map[string]string{KeysFileEnv: filepath.Join(t.TempDir(), "missing")}))
	require.ErrorContains(t, err, KeysFileEnv)
}

func TestSealBindsNameAndKey(t *testing.T) {
	a, b := testKey(t), testKey(t)
	k, err := ParseKeyring(a+","+b, "test")
	require.NoError(t, err)
	id, sealed, err := k.Seal("shop-a", []byte("the secret"))
	require.NoError(t, err)
	require.Equal(t, k.CurrentID(), id)
	require.NotContains(t, string(sealed), "the secret")

	plain, err := k.Open("shop-a", id, sealed)
	require.NoError(t, err)
	require.Equal(t, "the secret", string(plain))

	_, err = k.Open("shop-b", id, sealed)
	require.ErrorIs(t, err, ErrOpen, "under another name")
	idb, _, _ := strings.Cut(b, ":")
	_, err = k.Open("shop-a", idb, sealed)
	require.ErrorIs(t, err, ErrOpen, "relabelled with another key id")
	altered := append([]byte(nil), sealed...)
	altered[len(altered)-1] ^= 1
	_, err = k.Open("shop-a", id, altered)
	require.ErrorIs(t, err, ErrOpen, "altered")
	_, err = k.Open("shop-a", "gone", sealed)
	require.ErrorIs(t, err, ErrUnknownKey)

	// The second key opens what it sealed; the first seals.
	kb, err := ParseKeyring(b+","+a, "test")
	require.NoError(t, err)
	idB, sealedB, err := kb.Seal("shop-a", []byte("x"))
	require.NoError(t, err)
	plain, err = k.Open("shop-a", idB, sealedB)
	require.NoError(t, err)
	require.Equal(t, "x", string(plain))

	// Two seals of one text differ (random nonce).
	_, again, err := k.Seal("shop-a", []byte("the secret"))
	require.NoError(t, err)
	require.NotEqual(t, sealed, again)
}

func TestPayloadHidesItself(t *testing.T) {
	p := Payload{AccessToken: "at-secret", RefreshToken: "rt-secret", ClientSecret: "cs-secret"}
	holder := struct{ P Payload }{p}
	for _, s := range []string{
		p.String(), p.GoString(),
		fmt.Sprintf("%v", p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p), fmt.Sprintf("%v", holder), fmt.Sprintf("%+v", &holder),
		fmt.Sprintf("%v", Token{AccessToken: "at-secret"}), fmt.Sprintf("%#v", Token{RefreshToken: "rt-secret"}),
	} {
		require.NotContains(t, s, "secret")
	}
}
