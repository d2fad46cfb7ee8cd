package onboarding

import (
	"fmt"
	"io"
	"net/url"
	"regexp"
)

func readBounded(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("the answer is larger than %d KiB", limit>>10)
	}
	return b, nil
}

// redactURL keeps scheme, host and path: a query could carry a secret.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

var oauthErrorCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// clipCode keeps an OAuth error code (invalid_grant, ...) and drops
// anything else a hostile endpoint might put there.
func clipCode(s string) string {
	if oauthErrorCode.MatchString(s) {
		return s
	}
	return "(not an OAuth error code)"
}
