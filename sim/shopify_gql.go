package sim

import (
	"fmt"
	"strconv"
	"strings"
)

// A small GraphQL reader for the Shopify surface: enough of the language
// to take the connector's documents apart (operations with variables,
// fields with arguments and aliases, nested selections, inline fragments,
// fragment definitions and spreads), so the surface can answer exactly
// the fields a query selects and charge what Shopify charges for them.
// Directives and default values are refused: the connector sends none.

// gqlSel is one selection: a field, an inline fragment (on with its
// selection) or a fragment spread.
type gqlSel struct {
	alias, name string
	args        map[string]gqlValue
	sub         []gqlSel
	hasSub      bool
	on          string // inline fragment's type condition
	inline      bool
	spread      string
}

func (s gqlSel) key() string {
	if s.alias != "" {
		return s.alias
	}
	return s.name
}

// gqlValue is an argument: a variable reference or a literal.
type gqlValue struct {
	variable string
	literal  any // int64, float64, string, bool, nil, or an enum name as gqlEnum
}

type gqlEnum string

type gqlOperation struct {
	kind, name string
	sel        []gqlSel
}

type gqlDocument struct {
	ops   []gqlOperation
	frags map[string][]gqlSel
}

// gqlSyntaxError is a document that does not parse.
type gqlSyntaxError struct {
	at  int
	msg string
}

func (e *gqlSyntaxError) Error() string {
	return fmt.Sprintf("Parse error at byte %d: %s", e.at, e.msg)
}

type gqlParser struct {
	s   string
	pos int
}

func parseGQL(doc string) (gqlDocument, error) {
	p := &gqlParser{s: doc}
	d := gqlDocument{frags: map[string][]gqlSel{}}
	for {
		p.space()
		if p.pos >= len(p.s) {
			break
		}
		switch {
		case p.peek() == '{':
			sel, err := p.selection(0)
			if err != nil {
				return d, err
			}
			d.ops = append(d.ops, gqlOperation{kind: "query", sel: sel})
		default:
			word := p.name()
			switch word {
			case "query", "mutation":
				p.space()
				name := ""
				if p.pos < len(p.s) && isGQLNameStart(p.s[p.pos]) {
					name = p.name()
				}
				p.space()
				if p.peek() == '(' {
					if err := p.skipVarDefs(); err != nil {
						return d, err
					}
				}
				p.space()
				sel, err := p.selection(0)
				if err != nil {
					return d, err
				}
				d.ops = append(d.ops, gqlOperation{kind: word, name: name, sel: sel})
			case "fragment":
				p.space()
				name := p.name()
				p.space()
				if p.name() != "on" {
					return d, p.fail("fragment %s needs a type condition", name)
				}
				p.space()
				p.name()
				p.space()
				sel, err := p.selection(0)
				if err != nil {
					return d, err
				}
				d.frags[name] = sel
			default:
				return d, p.fail("expected query, mutation, fragment or {, got %q", word)
			}
		}
	}
	if len(d.ops) == 0 {
		return d, &gqlSyntaxError{at: 0, msg: "the document defines no operation"}
	}
	return d, nil
}

// operation is the document's operation called name ("" when it has one).
func (d gqlDocument) operation(name string) (gqlOperation, bool) {
	for _, op := range d.ops {
		if op.name == name || (name == "" && len(d.ops) == 1) {
			return op, true
		}
	}
	return gqlOperation{}, false
}

func (p *gqlParser) fail(format string, args ...any) error {
	return &gqlSyntaxError{at: p.pos, msg: fmt.Sprintf(format, args...)}
}

func (p *gqlParser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *gqlParser) space() {
	for p.pos < len(p.s) {
		switch c := p.s[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			p.pos++
		case c == '#':
			for p.pos < len(p.s) && p.s[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func isGQLNameStart(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func (p *gqlParser) name() string {
	start := p.pos
	for p.pos < len(p.s) && (isGQLNameStart(p.s[p.pos]) || (p.s[p.pos] >= '0' && p.s[p.pos] <= '9')) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// skipVarDefs skips ($a: T!, ...): the variables' values are checked
// where they are used.
func (p *gqlParser) skipVarDefs() error {
	depth := 0
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				p.pos++
				return nil
			}
		case '=', '@':
			return p.fail("default values and directives are not served by the simulator")
		}
		p.pos++
	}
	return p.fail("unterminated variable definitions")
}

const gqlMaxDepth = 32

func (p *gqlParser) selection(depth int) ([]gqlSel, error) {
	if depth > gqlMaxDepth {
		return nil, p.fail("selections nested deeper than %d", gqlMaxDepth)
	}
	if p.peek() != '{' {
		return nil, p.fail("expected {")
	}
	p.pos++
	var out []gqlSel
	for {
		p.space()
		switch c := p.peek(); {
		case c == 0:
			return nil, p.fail("unterminated selection")
		case c == '}':
			p.pos++
			if len(out) == 0 {
				return nil, p.fail("an empty selection")
			}
			return out, nil
		case strings.HasPrefix(p.s[p.pos:], "..."):
			p.pos += 3
			p.space()
			word := p.name()
			if word == "on" {
				p.space()
				typ := p.name()
				p.space()
				sub, err := p.selection(depth + 1)
				if err != nil {
					return nil, err
				}
				out = append(out, gqlSel{inline: true, on: typ, sub: sub, hasSub: true})
			} else if word != "" {
				out = append(out, gqlSel{spread: word})
			} else {
				return nil, p.fail("... needs on Type or a fragment name")
			}
		case isGQLNameStart(c):
			f := gqlSel{name: p.name()}
			p.space()
			if p.peek() == ':' {
				p.pos++
				p.space()
				f.alias, f.name = f.name, p.name()
				p.space()
			}
			if p.peek() == '(' {
				args, err := p.arguments()
				if err != nil {
					return nil, err
				}
				f.args = args
				p.space()
			}
			if p.peek() == '@' {
				return nil, p.fail("directives are not served by the simulator")
			}
			if p.peek() == '{' {
				sub, err := p.selection(depth + 1)
				if err != nil {
					return nil, err
				}
				f.sub, f.hasSub = sub, true
			}
			out = append(out, f)
		default:
			return nil, p.fail("unexpected %q", string(c))
		}
	}
}

func (p *gqlParser) arguments() (map[string]gqlValue, error) {
	p.pos++ // (
	args := map[string]gqlValue{}
	for {
		p.space()
		if p.peek() == ')' {
			p.pos++
			return args, nil
		}
		name := p.name()
		if name == "" {
			return nil, p.fail("expected an argument name")
		}
		p.space()
		if p.peek() != ':' {
			return nil, p.fail("expected : after argument %s", name)
		}
		p.pos++
		p.space()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		args[name] = v
	}
}

func (p *gqlParser) value() (gqlValue, error) {
	switch c := p.peek(); {
	case c == '$':
		p.pos++
		return gqlValue{variable: p.name()}, nil
	case c == '"':
		start := p.pos
		p.pos++
		for p.pos < len(p.s) && p.s[p.pos] != '"' {
			if p.s[p.pos] == '\\' {
				p.pos++
			}
			p.pos++
		}
		if p.pos >= len(p.s) {
			return gqlValue{}, p.fail("unterminated string")
		}
		p.pos++
		s, err := strconv.Unquote(p.s[start:p.pos])
		if err != nil {
			return gqlValue{}, p.fail("a string that does not parse")
		}
		return gqlValue{literal: s}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.pos
		p.pos++
		for p.pos < len(p.s) && strings.IndexByte("0123456789.eE+-", p.s[p.pos]) >= 0 {
			p.pos++
		}
		if n, err := strconv.ParseInt(p.s[start:p.pos], 10, 64); err == nil {
			return gqlValue{literal: n}, nil
		}
		f, err := strconv.ParseFloat(p.s[start:p.pos], 64)
		if err != nil {
			return gqlValue{}, p.fail("a number that does not parse")
		}
		return gqlValue{literal: f}, nil
	case isGQLNameStart(c):
		switch w := p.name(); w {
		case "true":
			return gqlValue{literal: true}, nil
		case "false":
			return gqlValue{literal: false}, nil
		case "null":
			return gqlValue{literal: nil}, nil
		default:
			return gqlValue{literal: gqlEnum(w)}, nil
		}
	}
	return gqlValue{}, p.fail("lists and input objects are not served by the simulator")
}

// resolve is an argument's value with variables substituted; JSON numbers
// come as float64 and literals as int64, both returned as float64.
func (v gqlValue) resolve(vars map[string]any) any {
	var x any = v.literal
	if v.variable != "" {
		x = vars[v.variable]
	}
	if n, ok := x.(int64); ok {
		return float64(n)
	}
	return x
}

// intArg is a whole-number argument (first:), and whether it was given.
func (s gqlSel) intArg(name string, vars map[string]any) (int, bool, error) {
	v, ok := s.args[name]
	if !ok {
		return 0, false, nil
	}
	x := v.resolve(vars)
	if x == nil {
		return 0, false, nil
	}
	f, isNum := x.(float64)
	if !isNum || f != float64(int(f)) {
		return 0, true, fmt.Errorf("argument %s of field %s must be an integer, got %v", name, s.name, x)
	}
	return int(f), true, nil
}

// expand replaces fragment spreads by their fragments' selections.
func (d gqlDocument) expand(sel []gqlSel, depth int) ([]gqlSel, error) {
	if depth > gqlMaxDepth {
		return nil, fmt.Errorf("fragments nested deeper than %d", gqlMaxDepth)
	}
	out := make([]gqlSel, 0, len(sel))
	for _, s := range sel {
		if s.spread != "" {
			f, ok := d.frags[s.spread]
			if !ok {
				//lint:ignore ST1005 Shopify's own error text, as a client sees it
				return nil, fmt.Errorf("Fragment %s was used, but not defined", s.spread)
			}
			x, err := d.expand(f, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, gqlSel{inline: true, sub: x, hasSub: true})
			continue
		}
		if s.hasSub {
			x, err := d.expand(s.sub, depth+1)
			if err != nil {
				return nil, err
			}
			s.sub = x
		}
		out = append(out, s)
	}
	return out, nil
}

// isConnection says whether a field's selection is a connection's (nodes,
// edges or pageInfo), and returns the node selection.
func connectionNode(sel []gqlSel) ([]gqlSel, bool) {
	conn := false
	var node []gqlSel
	for _, s := range sel {
		switch s.name {
		case "nodes":
			conn, node = true, append(node, s.sub...)
		case "edges":
			conn = true
			for _, e := range s.sub {
				if e.name == "node" {
					node = append(node, e.sub...)
				}
			}
		case "pageInfo":
			conn = true
		}
	}
	return node, conn
}

// requestedCost is Shopify's requested cost of a selection
// (https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits):
// a scalar or enum 0, an object 1, a connection 2 plus first times its
// node, a list of objects first times its element (one element when first
// is not given), and inline fragments (an interface's or union's members)
// the most of them.
func requestedCost(sel []gqlSel, vars map[string]any) (int, error) {
	cost, most := 0, 0
	for _, s := range sel {
		if s.inline {
			c, err := requestedCost(s.sub, vars)
			if err != nil {
				return 0, err
			}
			most = max(most, c)
			continue
		}
		if !s.hasSub {
			continue
		}
		first, given, err := s.intArg("first", vars)
		if err != nil {
			return 0, err
		}
		if given && (first < 0 || first > shopifyMaxFirst) {
			return 0, fmt.Errorf("argument first of field %s must be between 0 and %d, got %d", s.name, shopifyMaxFirst, first)
		}
		if node, ok := connectionNode(s.sub); ok {
			c, err := requestedCost(node, vars)
			if err != nil {
				return 0, err
			}
			if !given {
				return 0, fmt.Errorf("you must provide one of first or last to properly paginate the `%s` connection", s.name)
			}
			cost += 2 + first*(1+c)
			continue
		}
		c, err := requestedCost(s.sub, vars)
		if err != nil {
			return 0, err
		}
		if !given {
			first = 1
		}
		cost += first * (1 + c)
	}
	return cost + most, nil
}
