package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"time"
)

// Tokens of the Amazon surface (amazon.go): LWA access tokens and
// searchOrders pagination tokens. Both are stateless, so a simulator that
// restarts with the same seed still honours the tokens it issued.

// amazonAccessTTL is how long an access token lives, as LWA's do
// ("expires_in": 3600): what the token response states, and by default how
// long the surface accepts it (Config.AmazonAccessTTL).
const amazonAccessTTL = time.Hour

// amazonAccessPrefix starts every access token, as LWA's "Atza|".
const amazonAccessPrefix = "Atza|"

// accessToken issues an access token for sh that expires at expiry (µs on
// the simulator's clock): the expiry and a MAC keyed with the shop's token,
// so only the holder of the refresh token (the shop token) gets one.
func (sh *shop) accessToken(expiry int64) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(expiry))
	b = append(b, sh.accessMAC(expiry)...)
	return amazonAccessPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func (sh *shop) accessMAC(expiry int64) []byte {
	m := hmac.New(sha256.New, sh.token)
	m.Write([]byte("lwa\x00" + sh.name + "\x00"))
	m.Write(binary.BigEndian.AppendUint64(nil, uint64(expiry)))
	return m.Sum(nil)[:16]
}

// accessExpiry reads a stateless access token of sh: its expiry (µs) and
// whether the shop's key signed it.
func (sh *shop) accessExpiry(token string) (int64, bool) {
	rest, ok := strings.CutPrefix(token, amazonAccessPrefix)
	if !ok {
		return 0, false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b) != 8+16 {
		return 0, false
	}
	expiry := int64(binary.BigEndian.Uint64(b))
	return expiry, subtle.ConstantTimeCompare(b[8:], sh.accessMAC(expiry)) == 1
}

// lwaError is Login with Amazon's error body.
type lwaError struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// amazonCursor is what a searchOrders pagination token carries: the search
// it belongs to (shop and resolved window, so a later page must repeat
// them), the last (updated_at, id) returned, and when it was issued, so it
// expires like Amazon's.
type amazonCursor struct {
	cursor
	issued int64 // µs on the simulator's clock
}

const amazonTokenVersion = 0xA1

// amazonTokenLen is version, shop, from, to, updated_at, seq, issued and a checksum.
const amazonTokenLen = 1 + 8 + 8 + 8 + 8 + 4 + 8 + 4

// amazonInvalid is a request searchOrders refuses with 400 InvalidInput;
// its text is the message, in Amazon's style (a sentence).
type amazonInvalid string

func (e amazonInvalid) Error() string { return string(e) }

// Config.AmazonTokenError values: the texts sellers and Amazon's models
// report for a pagination token searchOrders (or getOrders) will not take.
const (
	AmazonTokenExpired       = "expired"         // "The paginationToken has expired."
	AmazonTokenNotValid      = "token_not_valid" // "The paginationToken you have submitted is not valid…"
	AmazonTokenInputNotValid = "input_not_valid" // "The input you have submitted is not valid…" (names no parameter)
	AmazonTokenInvalidInput  = "invalid_input"   // the models' example: "Invalid Input", details "Invalid Input"
	AmazonTokenNoMessage     = "no_message"      // {"code":"InvalidInput","message":null}, as getOrders answers
)

// AmazonTokenErrors lists the Config.AmazonTokenError values.
var AmazonTokenErrors = []string{AmazonTokenExpired, AmazonTokenNotValid, AmazonTokenInputNotValid, AmazonTokenInvalidInput, AmazonTokenNoMessage}

// amazonTokenErrorBodies are the 400 bodies of the AmazonTokenErrors.
var amazonTokenErrorBodies = map[string]string{
	AmazonTokenExpired:       `{"errors":[{"code":"InvalidInput","message":"The paginationToken has expired.","details":"Repeat the search without paginationToken."}]}`,
	AmazonTokenNotValid:      `{"errors":[{"code":"InvalidInput","message":"The paginationToken you have submitted is not valid. Please submit a valid paginationToken.","details":""}]}`,
	AmazonTokenInputNotValid: `{"errors":[{"code":"InvalidInput","message":"The input you have submitted is not valid. Please verify the input and try again.","details":""}]}`,
	AmazonTokenInvalidInput:  `{"errors":[{"code":"InvalidInput","message":"Invalid Input","details":"Invalid Input"}]}`,
	AmazonTokenNoMessage:     `{"errors":[{"message":null,"code":"InvalidInput"}]}`,
}

const (
	errAmazonTokenGarbled amazonInvalid = "Invalid paginationToken."
	errAmazonTokenSearch  amazonInvalid = "The paginationToken belongs to another search: repeat lastUpdatedAfter and lastUpdatedBefore of the first request."
	errAmazonTokenExpired amazonInvalid = "The paginationToken has expired."
)

// encode renders the token in standard base64, padding and all, as
// Amazon's tokens look ("2YgYW55IGNhcm5hbCBwbGVhc3VyZS4="): a client must
// URL-encode it.
func (c amazonCursor) encode() string {
	b := make([]byte, 0, amazonTokenLen)
	b = append(b, amazonTokenVersion)
	b = binary.BigEndian.AppendUint64(b, c.shop)
	b = binary.BigEndian.AppendUint64(b, uint64(c.from))
	b = binary.BigEndian.AppendUint64(b, uint64(c.to))
	b = binary.BigEndian.AppendUint64(b, uint64(c.after.upd))
	b = binary.BigEndian.AppendUint32(b, c.after.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(c.issued))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return base64.StdEncoding.EncodeToString(b)
}

// decodeAmazonCursor parses a token of shop, checks its age at now (µs)
// against ttl, and returns it; the caller checks the window.
func decodeAmazonCursor(tok string, shop uint64, now int64, ttl time.Duration) (amazonCursor, error) {
	b, err := base64.StdEncoding.DecodeString(tok)
	if err != nil || len(b) != amazonTokenLen || b[0] != amazonTokenVersion ||
		crc32.ChecksumIEEE(b[:amazonTokenLen-4]) != binary.BigEndian.Uint32(b[amazonTokenLen-4:]) {
		return amazonCursor{}, errAmazonTokenGarbled
	}
	c := amazonCursor{cursor: cursor{
		shop: binary.BigEndian.Uint64(b[1:]),
		from: int64(binary.BigEndian.Uint64(b[9:])),
		to:   int64(binary.BigEndian.Uint64(b[17:])),
		after: entry{
			upd: int64(binary.BigEndian.Uint64(b[25:])),
			seq: binary.BigEndian.Uint32(b[33:]),
		},
	}, issued: int64(binary.BigEndian.Uint64(b[37:]))}
	switch {
	case c.shop != shop:
		return amazonCursor{}, errAmazonTokenGarbled
	case now-c.issued >= ttl.Microseconds():
		return amazonCursor{}, errAmazonTokenExpired
	}
	return c, nil
}
