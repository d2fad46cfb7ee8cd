package config

import (
	"fmt"
	"github.com/ordersync/ordersync/internal/tuning"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Problem is one invalid setting: which platform, which field, and why.
type Problem struct {
	Platform string // "" for file-level problems, "default" for the default block
	// Destination names the destination a problem is about ("" otherwise).
	Destination string
	Field       string
	Reason      string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Platform != "" {
		fmt.Fprintf(&b, "platform %q: ", p.Platform)
	}
	if p.Destination != "" {
		fmt.Fprintf(&b, "destination %q: ", p.Destination)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, "field %q: ", p.Field)
	}
	b.WriteString(p.Reason)
	return b.String()
}

// ValidationError lists every problem found in a platforms file.
type ValidationError struct {
	Source   string // file path, when known
	Problems []Problem
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
		if e.Source != "" {
			lines[i] = e.Source + ": " + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

func (e *ValidationError) add(platform, field, format string, args ...any) {
	e.Problems = append(e.Problems, Problem{Platform: platform, Field: field, Reason: fmt.Sprintf(format, args...)})
}

// fields is the set of fields that have a problem already.
func (e *ValidationError) fields() map[string]bool {
	set := make(map[string]bool, len(e.Problems))
	for _, p := range e.Problems {
		set[p.Field] = true
	}
	return set
}

func (e *ValidationError) merge(other *ValidationError) {
	if other != nil {
		e.Problems = append(e.Problems, other.Problems...)
	}
}

var (
	platformName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	storedName   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

// Validate checks one merged platform and returns nil or every problem
// found: first the lengths of its strings (limits.go), then the form of
// each setting (checkStructure), then the ranges of the numbers
// (checkRanges), then what only its kind knows (kinds.go). A field with a
// problem is not checked again by a later step, so one mistake is one line.
func (p Platform) Validate() *ValidationError {
	ve := &ValidationError{}
	p.checkLengths(ve)
	p.checkStructure(ve, ve.fields())
	p.tuning().CheckRanges(p.reporter(ve, ve.fields()))
	p.tuning().CheckDeadLetterRetry(p.reporter(ve, ve.fields()))
	if len(ve.Problems) == 0 {
		// Kind checks (kinds.go) build on valid generic settings; run after
		// them so one mistake does not pile up follow-on problems. The
		// plain-text rule is not part of ValidateStructure (replayed).
		if kve := p.validateKind(); kve != nil {
			return kve
		}
		return p.checkPlaintext()
	}
	return ve
}

// checkStructure checks the form of every setting: required fields, URLs,
// names, signs and how settings relate to each other. It reports nothing
// for the fields in skip (already reported).
func (p Platform) checkStructure(ve *ValidationError, skip map[string]bool) {
	bad := func(field, format string, args ...any) {
		if !skip[field] {
			ve.add(p.Name, field, format, args...)
		}
	}

	checkNameKind(p.Name, p.Kind, bad)
	if p.Endpoint == "" {
		bad("endpoint", "is required")
	} else if u, err := url.Parse(p.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("endpoint", "%q is not an http(s) URL", p.Endpoint)
	}
	set := 0
	for _, v := range []string{p.Credentials.Env, p.Credentials.File, p.Credentials.Stored} {
		if v != "" {
			set++
		}
	}
	switch {
	case set > 1:
		bad("credentials", "set one of env, file or stored, not several")
	case set == 0:
		bad("credentials", "is required: {env: VAR_NAME}, {file: /path/to/secret} or {stored: credential-name}; secrets never go in this file")
	case p.Credentials.Stored != "" && !storedName.MatchString(p.Credentials.Stored):
		bad("credentials.stored", "%q is not a stored credential name (letters, digits, '.', '_', '-', at most 128)", p.Credentials.Stored)
	case p.Credentials.Env != "" && !envName.MatchString(p.Credentials.Env):
		bad("credentials.env", "%q is not an environment variable name (put the secret in the environment, not here)", p.Credentials.Env)
	}
	p.tuning().CheckStructure(bad)
}

// reporter adds problems of p to ve, except for the fields in skip
// (already reported).
func (p Platform) reporter(ve *ValidationError, skip map[string]bool) tuning.Bad {
	return func(field, format string, args ...any) {
		if !skip[field] {
			ve.add(p.Name, field, format, args...)
		}
	}
}

// checkNameKind checks a platform's name and kind, in its settings as in
// the file.
func checkNameKind(name, kind string, bad tuning.Bad) {
	if !platformName.MatchString(name) {
		bad("", "name must be 1-63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit")
	}
	kinds := Kinds()
	if kind == "" {
		bad("kind", "is required (one of %s)", strings.Join(kinds, ", "))
	} else if msg, unlinked := unregisteredKind(kind); unlinked {
		bad("kind", "%s", msg)
	} else if !slices.Contains(kinds, kind) {
		bad("kind", "unknown kind %q (one of %s)", kind, strings.Join(kinds, ", "))
	}
}
