package fairness

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
)

// MaxKeyLen is Temporal's limit on a fairness key, in bytes.
const MaxKeyLen = 64

// hashLen is how many hex digits of the name's SHA-256 end a clipped key:
// 64 bits, so distinct long names collide only by astronomical chance.
const hashLen = 16

// Key is the fairness key of the account or destination called name: the
// name itself when it fits in MaxKeyLen bytes, else its first bytes (whole
// UTF-8 characters), "~" and a hash of the whole name, MaxKeyLen bytes in
// all.
func Key(name string) string {
	if len(name) <= MaxKeyLen {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	keep := MaxKeyLen - 1 - hashLen
	for keep > 0 && !utf8.RuneStart(name[keep]) {
		keep--
	}
	return name[:keep] + "~" + hex.EncodeToString(sum[:])[:hashLen]
}

// Priority is what every task of the account or destination called name
// carries: its fairness key at the default weight. Used for workflow
// starts, child workflows and activities alike.
func Priority(name string) temporal.Priority {
	return temporal.Priority{FairnessKey: Key(name)}
}
