package connectors_test

import "flag"

// -update rewrites the golden files under testdata/canonical. It is
// registered here, in an init func, only when no other file of the test
// binary declared it: init funcs run after every package-level variable,
// so a `var update = flag.Bool("update", ...)` elsewhere wins and both
// read the same flag.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata/canonical")
	}
}
