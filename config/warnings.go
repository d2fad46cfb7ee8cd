package config

import "fmt"

// Warnings are settings that load and run today but need attention before a
// known date, such as an API version the platform is removing. They never
// stop a file from loading (a platforms file that works must keep working);
// `ordersync config validate` is the place to print them, e.g. as
// "warning: " + Problem.String().

// Warnings lists the warnings of one merged, valid platform.
func (p Platform) Warnings() []Problem {
	var out []Problem
	if p.Kind == "amazon" {
		if o, err := p.AmazonOptions(); err == nil && o.APIVersion == AmazonAPIV0 {
			out = append(out, Problem{Platform: p.Name, Field: "options.api_version", Reason: fmt.Sprintf(
				"Amazon removes Orders API v0 (getOrders) on %s; set api_version %s (or remove it: it is the default). "+
					"Order ids stay the same, so the switch loses and duplicates nothing (docs/connectors.md, amazon)",
				AmazonV0Removal, AmazonAPI20260101)})
		}
	}
	return out
}

// Warnings lists the warnings of every platform of the file, by platform name.
func (f *File) Warnings() []Problem {
	var out []Problem
	for _, p := range f.Platforms {
		out = append(out, p.Warnings()...)
	}
	return out
}
