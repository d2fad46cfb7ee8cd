package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckCredentialsNamesEachReferenceNeverTheSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), mode))
		return path
	}
	const secret = "s3cret-value"
	t.Setenv("ORDERSYNC_TEST_GOOD", secret)
	t.Setenv("ORDERSYNC_TEST_BLANK", "  \n")
	good := write("good", secret+"\n", 0o600)
	empty := write("empty", "\n", 0o600)
	huge := write("huge", strings.Repeat("x", maxSecretSize+1), 0o600)

	tests := []struct {
		ref  CredentialRef
		want string // "" when it resolves
	}{
		{CredentialRef{Env: "ORDERSYNC_TEST_GOOD"}, ""},
		{CredentialRef{File: good}, ""},
		{CredentialRef{Env: "ORDERSYNC_TEST_UNSET"}, "credential environment variable ORDERSYNC_TEST_UNSET is not set"},
		{CredentialRef{Env: "ORDERSYNC_TEST_BLANK"}, "credential environment variable ORDERSYNC_TEST_BLANK is empty"},
		{CredentialRef{File: filepath.Join(dir, "missing")}, "credential file " + filepath.Join(dir, "missing") + " cannot be read: no such file or directory"},
		{CredentialRef{File: dir}, "credential file " + dir + " cannot be read: is a directory"},
		{CredentialRef{File: empty}, "credential file " + empty + " is empty"},
		{CredentialRef{File: huge}, "credential file " + huge + " is larger than 64 KiB; it should hold only the secret"},
	}
	var platforms []Platform
	var want []string
	for i, tt := range tests {
		name := "p" + string(rune('a'+i))
		platforms = append(platforms, Platform{Name: name, Credentials: tt.ref})
		if tt.want != "" {
			want = append(want, "platforms.yaml: platform \""+name+"\": field \"credentials\": "+tt.want)
		}
	}
	err := CheckCredentials("platforms.yaml", platforms)
	require.Error(t, err)
	require.Equal(t, strings.Join(want, "\n"), err.Error(), "one line per platform whose reference does not resolve")
	require.NotContains(t, err.Error(), secret)
	require.NoError(t, CheckCredentials("platforms.yaml", platforms[:2]))
}

func TestUnreadableCredentialFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	path := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o000))
	_, err := CredentialRef{File: path}.Resolve()
	require.EqualError(t, err, "credential file "+path+" cannot be read: permission denied")
}
