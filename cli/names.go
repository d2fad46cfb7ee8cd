package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
)

// NamingHelp is the rule every command follows to name accounts; the root
// help states it.
const NamingHelp = `Naming accounts: a command that acts on named platforms or destinations
takes them as arguments (ordersync platform pause sim-acme), and accepts
--platform/-p (platforms) or --destination (destinations) as the same
thing, repeatable where it takes several. Commands whose name could be
either kind (verify) or that filter a stream (changes) take the flags.`

// namesFlag lets a command that takes names as arguments take them from a
// repeatable flag too (--platform/-p or --destination): the flag's values
// come after the arguments. min and max bound how many names in all (max
// 0: no bound); the count is checked once both are merged.
func namesFlag(cmd *cobra.Command, flag, short, noun string, min, max int) {
	var flagged []string
	usage := fmt.Sprintf("a %s to act on, as the arguments name them; repeatable", noun)
	if max == 1 {
		usage = fmt.Sprintf("the %s to act on, as the argument names it", noun)
	}
	cmd.Flags().StringSliceVarP(&flagged, flag, short, nil, usage)
	cmd.Args = cobra.ArbitraryArgs
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		names := slices.Clone(args)
		for _, n := range flagged {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		switch {
		case len(names) < min && min == 1:
			return Usage(fmt.Errorf("name the %s: %s NAME, or --%s NAME", noun, c.CommandPath(), flag))
		case len(names) < min:
			return Usage(fmt.Errorf("name at least %d %ss", min, noun))
		case max > 0 && len(names) > max:
			return Usage(fmt.Errorf("%s takes one %s, got %d: %v", c.CommandPath(), noun, len(names), names))
		}
		return run(c, names)
	}
}

// nameArgument lets a command that names one account by flag (--platform)
// take it as its argument too: `dlq retry sim-acme --all` is
// `dlq retry --platform sim-acme --all`.
func nameArgument(cmd *cobra.Command, flag string, p *string) {
	cmd.Args = cobra.MaximumNArgs(1)
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 1 {
			if *p != "" && *p != args[0] {
				return Usage(fmt.Errorf("%s names %q and --%s %q: give one", c.CommandPath(), args[0], flag, *p))
			}
			*p = args[0]
		}
		return run(c, nil)
	}
}
