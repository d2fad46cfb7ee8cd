package connectors

import (
	"fmt"
	"strconv"
)

// ShopifyMaxFragment is the longest options.order_fragment accepted.
const ShopifyMaxFragment = 2000

// shopifyMaxFragmentDepth bounds the nesting of options.order_fragment.
const shopifyMaxFragmentDepth = 5

// CheckShopifyFragment checks options.order_fragment, the fields a
// platform adds to the GraphQL connector's Order selection, and returns
// its cost in objects (each field with a selection of its own). It is
// spliced into the query as it is, so it may be a selection set only:
// field names, nested selections and inline fragments (... on Type { }),
// separated by spaces or commas. Anything that could change the query
// beyond adding fields is refused: arguments, variables, directives,
// aliases, strings, comments, named fragment spreads, operations, and the
// connection fields edges, nodes and pageInfo (a connection would need an
// argument, and its nodes would come apart in bulk results).
func CheckShopifyFragment(s string) (objects int, err error) {
	if s == "" {
		return 0, nil
	}
	if len(s) > ShopifyMaxFragment {
		return 0, fmt.Errorf("is %d bytes, more than %d", len(s), ShopifyMaxFragment)
	}
	at := func(i int, format string, args ...any) error {
		return fmt.Errorf("byte %d: %s", i, fmt.Sprintf(format, args...))
	}
	depth, fieldsAt := 0, []int{0} // fields selected in each open set
	prevField := false             // the last token was a field name
	spread := 0                    // 1 after "...", 2 after "... on"
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			i++
			continue
		case isNameStart(c):
			j := i
			for j < len(s) && (isNameStart(s[j]) || (s[j] >= '0' && s[j] <= '9')) {
				j++
			}
			name := s[i:j]
			switch spread {
			case 1:
				if name != "on" {
					return 0, at(i, "named fragment spread ...%s: only inline fragments (... on Type { }) are allowed", name)
				}
				spread = 2
			case 2:
				spread = 3 // the type condition; its selection follows
			default:
				switch name {
				case "edges", "nodes", "pageInfo":
					return 0, at(i, "%s: connections cannot be added (their nodes need first: and come apart in bulk results)", name)
				case "__parentId":
					return 0, at(i, "%s is a bulk result's, not a field", name)
				case "query", "mutation", "subscription", "fragment":
					if depth == 0 && fieldsAt[0] == 0 {
						return 0, at(i, "%s: an operation or fragment definition; give the selection set only", name)
					}
				}
				fieldsAt[len(fieldsAt)-1]++
				prevField = true
			}
			i = j
			continue
		case c == '.' && i+2 < len(s) && s[i+1] == '.' && s[i+2] == '.':
			if spread != 0 {
				return 0, at(i, "... twice")
			}
			spread, prevField = 1, false
			i += 3
			continue
		case c == '{':
			switch {
			case spread == 3:
				spread = 0
				fieldsAt[len(fieldsAt)-1]++ // the enclosing set selects something
			case prevField:
				objects++
			default:
				return 0, at(i, "{ without a field or type condition before it")
			}
			depth++
			if depth > shopifyMaxFragmentDepth {
				return 0, at(i, "nested deeper than %d", shopifyMaxFragmentDepth)
			}
			fieldsAt = append(fieldsAt, 0)
			prevField = false
			i++
			continue
		case c == '}':
			if depth == 0 {
				return 0, at(i, "} without its {")
			}
			if fieldsAt[len(fieldsAt)-1] == 0 {
				return 0, at(i, "an empty selection { }")
			}
			fieldsAt = fieldsAt[:len(fieldsAt)-1]
			depth--
			prevField = false
			i++
			continue
		default:
			what := map[byte]string{'(': "arguments", ')': "arguments", '$': "variables", '@': "directives", ':': "aliases",
				'"': "strings", '#': "comments", '!': "type modifiers", '=': "default values", '[': "lists", ']': "lists"}[c]
			if what == "" {
				what = "characters other than names, { } and ..."
			}
			return 0, at(i, "%s are not allowed (%s)", what, strconv.QuoteToASCII(string(c)))
		}
	}
	switch {
	case spread != 0:
		return 0, fmt.Errorf("ends inside an inline fragment")
	case depth != 0:
		return 0, fmt.Errorf("ends with %d selection(s) still open", depth)
	case fieldsAt[0] == 0:
		return 0, fmt.Errorf("selects no field")
	}
	return objects, nil
}

func isNameStart(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
