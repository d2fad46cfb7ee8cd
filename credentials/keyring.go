package credentials

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// The operator holds the keys that seal stored credentials in one of these
// (never both); the store never holds a key.
const (
	KeysEnv     = "ORDERSYNC_CREDENTIAL_KEYS"
	KeysFileEnv = "ORDERSYNC_CREDENTIAL_KEYS_FILE"
)

// ErrNoKeys is returned by LoadKeyring when neither KeysEnv nor KeysFileEnv
// is set: stored credentials cannot be read or written without a key.
var ErrNoKeys = errors.New("no credential keys: set " + KeysEnv + " or " + KeysFileEnv + " (make one with `ordersync credentials new-key`)")

// ErrUnknownKey is wrapped when a stored credential was sealed with a key
// the keyring does not hold (removed from the keys before rotate-key ran).
var ErrUnknownKey = errors.New("sealed with a key the keyring does not hold")

// ErrOpen is wrapped when a sealed payload does not open: a wrong key under
// the same id, a row copied under another name, or altered bytes.
var ErrOpen = errors.New("the sealed secret does not open")

// keyID is what a key's id may be: it is stored in plaintext beside each row.
var keyID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// sealVersion starts the additional data, so a later format cannot be
// confused with this one.
const sealVersion = "ordersync-credential-v1"

// Keyring holds the AES-256-GCM keys stored credentials are sealed with.
// The first key seals; every key opens (so rows sealed before a rotation
// still open until RotateKey re-seals them).
type Keyring struct {
	ids   []string
	aeads map[string]cipher.AEAD
}

// LoadKeyring reads the keys from KeysEnv or the file KeysFileEnv names,
// with getenv (os.Getenv when nil).
func LoadKeyring(getenv func(string) string) (*Keyring, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	inline, file := getenv(KeysEnv), getenv(KeysFileEnv)
	switch {
	case inline != "" && file != "":
		return nil, fmt.Errorf("credential keys: set %s or %s, not both", KeysEnv, KeysFileEnv)
	case inline != "":
		return ParseKeyring(inline, KeysEnv)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			// The path is the operator's own setting; the error names it.
			return nil, fmt.Errorf("credential keys: read %s (%s): %w", KeysFileEnv, file, err)
		}
		return ParseKeyring(string(b), KeysFileEnv+" ("+file+")")
	}
	return nil, ErrNoKeys
}

// ParseKeyring reads entries "id:base64-of-32-bytes" separated by commas or
// newlines (blank entries and lines starting with # are skipped). origin
// names where the text came from in errors, which never quote a key.
func ParseKeyring(text, origin string) (*Keyring, error) {
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	fields := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' })
	n := 0
	for _, f := range fields {
		f = strings.TrimSpace(f)
		if f == "" || strings.HasPrefix(f, "#") {
			continue
		}
		n++
		id, b64, ok := strings.Cut(f, ":")
		id = strings.TrimSpace(id)
		if !ok || !keyID.MatchString(id) {
			return nil, fmt.Errorf("credential keys in %s: entry %d is not id:base64-key (id: letters, digits, '.', '_', '-', at most 64)", origin, n)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil {
			raw, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(b64))
		}
		if err != nil {
			return nil, fmt.Errorf("credential keys in %s: entry %d (id %s): the key is not base64", origin, n, id)
		}
		if len(raw) != 32 {
			return nil, fmt.Errorf("credential keys in %s: entry %d (id %s): the key is %d bytes, want 32 (AES-256)", origin, n, id, len(raw))
		}
		if _, dup := k.aeads[id]; dup {
			return nil, fmt.Errorf("credential keys in %s: entry %d: id %s is used twice", origin, n, id)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("credential keys in %s: entry %d (id %s): %w", origin, n, id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("credential keys in %s: entry %d (id %s): %w", origin, n, id, err)
		}
		k.ids = append(k.ids, id)
		k.aeads[id] = aead
	}
	if len(k.ids) == 0 {
		return nil, fmt.Errorf("credential keys in %s: no key entries (want id:base64-key, the first one seals)", origin)
	}
	return k, nil
}

// NewKeyEntry makes a fresh key entry "id:base64" for the keys setting: a
// random 32-byte key under an id naming the day and a random suffix.
func NewKeyEntry(now time.Time) (string, error) {
	key := make([]byte, 32)
	suffix := make([]byte, 3)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("new credential key: %w", err)
	}
	if _, err := rand.Read(suffix); err != nil {
		return "", fmt.Errorf("new credential key: %w", err)
	}
	id := "k" + now.UTC().Format("20060102") + "-" + hex.EncodeToString(suffix)
	return id + ":" + base64.StdEncoding.EncodeToString(key), nil
}

// CurrentID is the id of the key that seals.
func (k *Keyring) CurrentID() string { return k.ids[0] }

// IDs lists the key ids, the current one first.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }

// Has reports whether the keyring holds the key id.
func (k *Keyring) Has(id string) bool { _, ok := k.aeads[id]; return ok }

// additionalData binds a sealed payload to the credential's name and the
// key id: a row copied under another name, or relabelled with another key
// id, does not open.
func additionalData(name, id string) []byte {
	return []byte(sealVersion + "\x00" + name + "\x00" + id)
}

// Seal encrypts plaintext for the credential name with the current key.
// It returns the key id and nonce||ciphertext.
func (k *Keyring) Seal(name string, plaintext []byte) (string, []byte, error) {
	id := k.ids[0]
	aead := k.aeads[id]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, fmt.Errorf("seal credential %q: %w", clipStored(name, 128), err)
	}
	return id, aead.Seal(nonce, nonce, plaintext, additionalData(name, id)), nil
}

// Open decrypts what Seal returned for the credential name under key id.
func (k *Keyring) Open(name, id string, sealed []byte) ([]byte, error) {
	aead, ok := k.aeads[id]
	if !ok {
		return nil, fmt.Errorf("credential %q: key id %q: %w (keys held: %s)", clipStored(name, 128), clipStored(id, 64), ErrUnknownKey, strings.Join(k.ids, ", "))
	}
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("credential %q: sealed secret is %d bytes, too short: %w", clipStored(name, 128), len(sealed), ErrOpen)
	}
	ns := aead.NonceSize()
	plain, err := aead.Open(nil, sealed[:ns], sealed[ns:], additionalData(name, id))
	if err != nil {
		return nil, fmt.Errorf("credential %q with key %s: %w (wrong key under that id, or the row was copied from another name)", clipStored(name, 128), id, ErrOpen)
	}
	return plain, nil
}
