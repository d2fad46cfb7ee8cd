package config

import (
	"fmt"
	"time"
)

// Warnings are settings that load and run today but deserve a second look,
// such as an API version the platform is removing. They never stop a file
// from loading (a platforms file that works must keep working); the CLI
// prints them ("warning: " + Problem.String()) next to a successful load.
// They may read the clock (a start in the past), so workflow code never
// calls them. Each kind's come from its spec (KindSpec.Warnings).

// Warnings lists the warnings of one merged, valid platform.
func (p Platform) Warnings() []Problem { return p.WarningsAt(time.Now()) }

// WarningsAt lists the warnings of one merged, valid platform as of now.
func (p Platform) WarningsAt(now time.Time) []Problem {
	var out []Problem
	s, ok := kindSpecOf(p.Kind)
	if !ok || s.Warnings == nil {
		return nil
	}
	opts, ve := p.kindOptions(s)
	if ve != nil {
		return nil // the load reports it
	}
	s.Warnings(p, opts, now, func(field, format string, args ...any) {
		out = append(out, Problem{Platform: p.Name, Field: field, Reason: fmt.Sprintf(format, args...)})
	})
	return out
}

// Warnings lists the warnings of every platform of the file, in name order.
func (f *File) Warnings() []Problem {
	var out []Problem
	for _, p := range f.Platforms {
		out = append(out, p.Warnings()...)
	}
	return out
}
