// Package docs holds the manual; its test keeps the README and these pages
// true to the code: the README stays a front door, every relative link and
// anchor resolves, every signal, update and query has a copy-paste example,
// every documented ordersync command and flag exists, every process setting
// and every package is listed. It needs no Temporal server and runs in well
// under a second.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/cli"
	"github.com/ordersync/ordersync/cli/devcmd"
)

// maxReadmeLines is issue 30's bound (about 300) with a little slack: the
// README is read in ten minutes; everything else belongs in docs/.
const maxReadmeLines = 320

// root is the repository, one up from this package.
const root = ".."

// pages are the files checked: the README, every page here, deploy's README.
func pages(t *testing.T) []string {
	t.Helper()
	ps, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{filepath.Join(root, "README.md"), filepath.Join(root, "deploy", "README.md")}
	return append(out, ps...)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadmeIsShort(t *testing.T) {
	text := read(t, filepath.Join(root, "README.md"))
	n := strings.Count(text, "\n")
	if n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail into a docs/ page and link it from the README", n, maxReadmeLines)
	}
	// .ci/run runs the README's test command; keep that command there.
	if !strings.Contains(text, "\nmake test\n") {
		t.Errorf("README.md no longer shows the test command `make test` on a line of its own (.ci/run runs it)")
	}
}

// line is one line of a markdown file, with where it is and whether it lies
// inside a fenced code block (and which language the fence names).
type line struct {
	file  string
	no    int
	text  string
	fence bool
	lang  string
}

func lines(t *testing.T, path string) []line {
	t.Helper()
	var out []line
	in, lang := false, ""
	for i, l := range strings.Split(read(t, path), "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			if !in {
				in, lang = true, strings.TrimPrefix(trimmed, "```")
			} else {
				in, lang = false, ""
			}
			continue
		}
		out = append(out, line{file: path, no: i + 1, text: l, fence: in, lang: lang})
	}
	return out
}

var (
	headingRE  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// anchors are GitHub's heading anchors of a markdown file: lower case,
// punctuation dropped, spaces to hyphens, a repeated one numbered -1, -2.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range lines(t, path) {
		if l.fence {
			continue
		}
		m := headingRE.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestRelativeLinksResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	for _, page := range pages(t) {
		for _, l := range lines(t, page) {
			if l.fence {
				continue
			}
			for _, m := range linkRE.FindAllStringSubmatch(inlineCode.ReplaceAllString(l.text, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				file := page
				if path != "" {
					file = filepath.Join(filepath.Dir(page), path)
					if _, err := os.Stat(file); err != nil {
						t.Errorf("%s:%d: link %q: %s does not exist", page, l.no, target, file)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(file, ".md") {
					continue
				}
				if cache[file] == nil {
					cache[file] = anchors(t, file)
				}
				if !cache[file][anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", page, l.no, target, file, anchor)
				}
			}
		}
	}
}

// message is a signal, update or query name the api package declares, and
// the workflow ID prefix of the workflow that takes it.
type message struct {
	constant, name, workflow string
	query                    bool
}

// workflowOf maps each api file that declares message names to the
// workflow ID prefix its messages go to. A new file with messages fails the
// test until it is added here (and its messages documented).
var workflowOf = map[string]string{
	"cursor.go":     "cursor/",
	"deadletter.go": "deadletter/",
	"delivery.go":   "delivery/",
	"reconcile.go":  "reconcile/",
}

// notSentByHand are messages only ordersync itself sends; they must still
// have a row in the docs' table of their workflow, but need no example.
var notSentByHand = map[string]string{
	"SignalDeadLetterAdd": "a failing slice records itself; an operator never sends it",
}

func messages(t *testing.T) []message {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(root, "api", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []message
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					isQuery := strings.HasPrefix(id.Name, "Query")
					if !isQuery && !strings.HasPrefix(id.Name, "Signal") && !strings.HasPrefix(id.Name, "Update") {
						continue
					}
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					name, _ := strconv.Unquote(lit.Value)
					wf, ok := workflowOf[filepath.Base(f)]
					if !ok {
						t.Errorf("%s declares %s = %q, but docs_test.go does not know which workflow takes it: add the file to workflowOf", f, id.Name, name)
						continue
					}
					out = append(out, message{constant: id.Name, name: name, workflow: wf, query: isQuery})
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("found no Signal/Update/Query constants in api/: the test no longer reads them")
	}
	return out
}

var temporalExample = regexp.MustCompile(`temporal workflow (signal|query|update execute)\s+--workflow-id\s+([a-z]+/)\S*\s+--(name|type)\s+([A-Za-z_]+)`)

func TestEveryMessageHasATemporalExample(t *testing.T) {
	type key struct{ workflow, name string }
	examples := map[key]map[string]bool{} // -> kinds seen (signal, query, update execute)
	var tables strings.Builder
	for _, page := range pages(t) {
		text := strings.ReplaceAll(read(t, page), "\\\n", " ")
		for _, m := range temporalExample.FindAllStringSubmatch(text, -1) {
			k := key{m[2], m[4]}
			if examples[k] == nil {
				examples[k] = map[string]bool{}
			}
			examples[k][m[1]] = true
		}
		tables.WriteString(text)
	}
	for _, m := range messages(t) {
		row := "| `" + strings.TrimSuffix(m.workflow, "/") + "/<"
		rowRE := regexp.MustCompile(regexp.QuoteMeta(row) + `[a-z]+>` + "` \\| `" + regexp.QuoteMeta(m.name) + "` \\|")
		if !rowRE.MatchString(tables.String()) {
			t.Errorf("api.%s (%q on %s...) has no row in the docs' table of that workflow's signals, updates and queries", m.constant, m.name, m.workflow)
		}
		if _, ok := notSentByHand[m.constant]; ok {
			continue
		}
		kinds := examples[key{m.workflow, m.name}]
		switch {
		case m.query && !kinds["query"]:
			t.Errorf("api.%s: no `temporal workflow query --workflow-id %s... --type %s` example in README.md or docs/", m.constant, m.workflow, m.name)
		case !m.query && !kinds["signal"] && !kinds["update execute"]:
			t.Errorf("api.%s: no `temporal workflow signal|update execute --workflow-id %s... --name %s` example in README.md or docs/", m.constant, m.workflow, m.name)
		}
	}
}

// commandLines finds the ordersync command lines of a page: every
// `./bin/ordersync ...`, and in sh blocks each line that runs `ordersync`
// (after variable assignments, `$ `, `$(` or `-- `). A line continued with
// a backslash is joined first.
func commandLines(t *testing.T, page string) (out []struct {
	where string
	args  []string
}) {
	t.Helper()
	ls := lines(t, page)
	for i := 0; i < len(ls); i++ {
		l := ls[i]
		text := l.text
		for l.fence && strings.HasSuffix(text, "\\") && i+1 < len(ls) {
			i++
			text = strings.TrimSuffix(text, "\\") + " " + ls[i].text
		}
		where := l.file + ":" + strconv.Itoa(l.no)
		starts := map[int]bool{}
		for _, m := range regexp.MustCompile(`\./bin/ordersync\b`).FindAllStringIndex(text, -1) {
			if endsCommand(text, m[1]) {
				starts[m[1]] = true
			}
		}
		if l.fence && (l.lang == "sh" || l.lang == "bash" || l.lang == "") {
			trimmed := strings.TrimLeft(text, " ")
			off := len(text) - len(trimmed)
			if l.lang == "" {
				if rest, ok := strings.CutPrefix(trimmed, "$ "); ok {
					if strings.HasPrefix(rest, "ordersync ") {
						starts[off+2+len("ordersync")] = true
					}
				}
			} else {
				for _, m := range regexp.MustCompile(`(?:^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*|\$\(|\s--\s)ordersync\b`).FindAllStringIndex(trimmed, -1) {
					if endsCommand(trimmed, m[1]) {
						starts[off+m[1]] = true
					}
				}
			}
		}
		var idx []int
		for s := range starts {
			idx = append(idx, s)
		}
		sort.Ints(idx)
		for _, s := range idx {
			args, ok := shellWords(text[s:])
			if !ok {
				continue
			}
			out = append(out, struct {
				where string
				args  []string
			}{where, args})
		}
	}
	return out
}

// endsCommand reports whether the command name ending at i is ordersync
// itself, not ordersync-bench or a path below it.
func endsCommand(s string, i int) bool {
	return i == len(s) || strings.ContainsRune(" \t`\")", rune(s[i]))
}

// shellWords splits a command's arguments as a shell would, up to the first
// unquoted |, ), ;, &, a comment, or a backtick (the end of inline code). It
// reports false for a line with a placeholder (<command>, NAME..., a|b).
func shellWords(s string) ([]string, bool) {
	var args []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	flush := func() {
		if inWord {
			args = append(args, cur.String())
		}
		cur.Reset()
		inWord = false
	}
loop:
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '|' || r == ')' || r == ';' || r == '&' || r == '`' || r == '\n':
			break loop
		case r == '#' && !inWord:
			break loop
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	for _, a := range args {
		if strings.ContainsAny(a, "<>[]$") || strings.Contains(a, "...") {
			return nil, false
		}
	}
	return args, true
}

func newRoot() *cobra.Command {
	app := &cli.App{}
	r := cli.NewRootCommand(app)
	r.AddCommand(devcmd.New(app), devcmd.NewCluster(app))
	return r
}

func TestDocumentedCommandsExist(t *testing.T) {
	n := 0
	for _, page := range pages(t) {
		for _, c := range commandLines(t, page) {
			n++
			root := newRoot()
			cmd, rest, err := root.Find(c.args)
			if err != nil {
				t.Errorf("%s: ordersync %s: %v", c.where, strings.Join(c.args, " "), err)
				continue
			}
			if cmd == root && len(c.args) > 0 && !strings.HasPrefix(c.args[0], "-") {
				t.Errorf("%s: ordersync %s: %q is no ordersync command", c.where, strings.Join(c.args, " "), c.args[0])
				continue
			}
			cmd.InitDefaultHelpFlag()
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: ordersync %s: %v", c.where, strings.Join(c.args, " "), err)
				continue
			}
			args := cmd.Flags().Args()
			if cmd.HasAvailableSubCommands() && !cmd.Runnable() && len(args) > 0 {
				t.Errorf("%s: ordersync %s: %q is no subcommand of %q", c.where, strings.Join(c.args, " "), args[0], cmd.CommandPath())
				continue
			}
			if err := cmd.ValidateArgs(args); err != nil {
				t.Errorf("%s: ordersync %s: %v", c.where, strings.Join(c.args, " "), err)
			}
		}
	}
	t.Logf("checked %d ordersync command lines", n)
	if n < 20 {
		t.Fatalf("found only %d ordersync command lines in README.md and docs/: the extraction broke", n)
	}
}

// TestEveryProcessSettingIsDocumented reads config/process.go's envconfig
// tags: each ORDERSYNC_ variable must have a row in the environment table.
func TestEveryProcessSettingIsDocumented(t *testing.T) {
	src := read(t, filepath.Join(root, "config", "process.go"))
	table := read(t, "configuration.md")
	tags := regexp.MustCompile("envconfig:\"([A-Z0-9_]+)\"").FindAllStringSubmatch(src, -1)
	if len(tags) < 10 {
		t.Fatalf("found %d envconfig tags in config/process.go: the test no longer reads them", len(tags))
	}
	for _, m := range tags {
		v := "`ORDERSYNC_" + m[1] + "`"
		if !regexp.MustCompile(`(?m)^\| [^|]*` + regexp.QuoteMeta(v)).MatchString(table) {
			t.Errorf("%s (config/process.go) has no row in docs/configuration.md's environment table", v)
		}
	}
}

// TestLayoutListsEveryPackage walks the repository's Go packages: each
// must be named in the first column of docs/development.md's Layout table.
func TestLayoutListsEveryPackage(t *testing.T) {
	listed := map[string]bool{}
	for _, l := range lines(t, "development.md") {
		if l.fence || !strings.HasPrefix(l.text, "| `") {
			continue
		}
		first := strings.SplitN(l.text, "|", 3)[1]
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(first, -1) {
			listed[m[1]] = true
		}
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(path))
		pkg = filepath.ToSlash(pkg)
		if pkg != "." && !listed[pkg] {
			listed[pkg] = true // report once
			t.Errorf("package %s is not in docs/development.md's Layout table", pkg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
