// Package promtest helps tests use Debian's Prometheus binaries (promtool,
// prometheus) and read PromQL: it finds a binary or skips loudly (fails when
// ORDERSYNC_TEST_PROMETHEUS_REQUIRED is set, as in CI), and lists the vector
// selectors of an expression so a test can check each one matches series.
package promtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// RequiredEnv, when set, turns a missing Prometheus binary into a failure:
// `go test` without -v hides a skip, so CI sets it.
const RequiredEnv = "ORDERSYNC_TEST_PROMETHEUS_REQUIRED"

// Binary returns the path of a Prometheus binary (promtool, prometheus),
// skipping the test when it is not installed, failing it when RequiredEnv is set.
func Binary(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv(RequiredEnv) != "" {
		t.Fatalf("%s not found (%s is set, so this is a failure): apt-get install prometheus", name, RequiredEnv)
	}
	t.Skipf("!!! SKIPPING: %s not found (apt-get install prometheus); CI runs this with %s=1", name, RequiredEnv)
	return ""
}

// Selector is one vector selector of a PromQL expression.
type Selector struct {
	// Metric is the metric name.
	Metric string
	// Text is the selector as written, with its label matchers.
	Text string
}

// keywords are PromQL words that are not metric names even when no
// parenthesis follows them: operators, modifiers, and the aggregations
// (`sum by (x) (...)`). Functions are told by the parenthesis after them.
var keywords = map[string]bool{
	"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true,
	"ignoring": true, "group_left": true, "group_right": true, "bool": true, "offset": true,
	"inf": true, "nan": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
}

// labelLists are the words followed by a parenthesised list of label names.
var labelLists = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// Selectors lists the vector selectors of a PromQL expression written with
// metric names (`name{...}`, not `{__name__="name"}`), in order. It is a
// small lexer, enough for the rules and dashboards of this repository: it
// skips strings, label lists after by/on/..., durations in brackets and
// function names.
func Selectors(expr string) []Selector {
	var out []Selector
	isStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isPart := func(c byte) bool { return isStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(expr) && strings.IndexByte(" \t\r\n", expr[i]) >= 0 {
			i++
		}
		return i
	}
	// closing finds the end of a bracketed group starting at i, skipping strings.
	closing := func(i int, open, close byte) int {
		depth := 0
		for ; i < len(expr); i++ {
			switch c := expr[i]; {
			case c == '"' || c == '\'' || c == '`':
				i = skipString(expr, i)
			case c == open:
				depth++
			case c == close:
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(expr)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i) + 1
		case c == '[':
			i = closing(i, '[', ']')
		case c == '{':
			i = closing(i, '{', '}') // a selector without a name: not ours
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isPart(expr[i]) || expr[i] == '.') {
				i++ // numbers, 1e3, durations after offset
			}
		case isStart(c):
			start := i
			for i < len(expr) && isPart(expr[i]) {
				i++
			}
			word := expr[start:i]
			next := skipSpace(i)
			lower := strings.ToLower(word)
			switch {
			case labelLists[lower] && next < len(expr) && expr[next] == '(':
				i = closing(next, '(', ')')
			case next < len(expr) && expr[next] == '(':
				i = next // a function or an aggregation
			case keywords[lower]:
			default:
				end := i
				if next < len(expr) && expr[next] == '{' {
					end = closing(next, '{', '}')
				}
				out = append(out, Selector{Metric: word, Text: expr[start:end]})
				i = end
			}
		default:
			i++
		}
	}
	return out
}

// skipString returns the index of the quote closing the string at i.
func skipString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++
		case s[j] == q:
			return j
		}
	}
	return len(s)
}

// Rule is one rule of a Prometheus rules file.
type Rule struct {
	// Alert is the rule's alert name ("" for a recording rule).
	Alert string `yaml:"alert"`
	// Expr is its PromQL expression.
	Expr string `yaml:"expr"`
}

// Rules reads every rule of a Prometheus rules file, failing the test
// when it cannot.
func Rules(t testing.TB, path string) []Rule {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read rules: %v", err)
	}
	var file struct {
		Groups []struct {
			Rules []Rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []Rule
	for _, g := range file.Groups {
		out = append(out, g.Rules...)
	}
	return out
}
