package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// suggestDistance is how many edits a mistyped name may be from the one
// suggested (cobra's default for commands).
const suggestDistance = 2

// addSuggestions makes every mistyped command or flag one line that names
// it and the nearest real one. Cobra's own message spans several lines
// (printed as blank "ordersync:" lines), and a group command such as
// `platform` took an unknown subcommand for a request for help and exited 0.
func addSuggestions(root *cobra.Command) {
	root.SetFlagErrorFunc(flagError)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = suggestDistance
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.Args = unknownSubcommand
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// unknownSubcommand refuses any argument of a group command: it can only
// be the name of a subcommand that does not exist.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", clipText(args[0], 60), cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return Usage(fmt.Errorf("%s (%s --help lists the commands)", msg, cmd.CommandPath()))
}

// flagError rewrites pflag's "unknown flag: --wach" with a suggestion from
// the command's flags (its own and the inherited ones).
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return Usage(fmt.Errorf("%s (%s --help lists the flags)", msg, cmd.CommandPath()))
	}
	out := fmt.Sprintf("unknown flag --%s for %q", clipText(name, 60), cmd.CommandPath())
	if s := suggestFlags(cmd.Flags(), name); len(s) > 0 {
		out += "; did you mean --" + strings.Join(s, " or --") + "?"
	}
	return Usage(fmt.Errorf("%s (%s --help lists the flags)", out, cmd.CommandPath()))
}

// suggestFlags lists the flags within suggestDistance edits of name, or that
// name is a prefix of, nearest first.
func suggestFlags(fs *pflag.FlagSet, name string) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		d := editDistance(strings.ToLower(name), f.Name)
		if len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			d = 0 // a flag cut short is the likeliest
		}
		if d <= suggestDistance {
			cs = append(cs, cand{f.Name, d})
		}
	})
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	var out []string
	for i, c := range cs {
		if i == 3 {
			break
		}
		out = append(out, c.name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ExitCodesHelp ends every help page: what Execute returns.
const ExitCodesHelp = `Exit status:
  0  done
  1  the operation failed, or did part of its work (a server or store that
     cannot be reached, a platform that could not be read, verify found
     missing orders, no worker answered in time)
  2  usage: unknown command or flag, bad arguments, an invalid platforms
     file or environment; nothing was changed
  3  verify --platform was incomplete: interrupted, --timeout, or the
     platform could not be read further; it judged part of the range
     (printed) and found no loss there`

// addExitCodes puts ExitCodesHelp under every command's help.
func addExitCodes(root *cobra.Command) {
	const tmpl = `{{with (or .Long .Short)}}{{. | trimTrailingWhitespaces}}

{{end}}{{if or .Runnable .HasSubCommands}}{{.UsageString}}{{end}}
` + ExitCodesHelp + "\n"
	root.SetHelpTemplate(tmpl)
}
