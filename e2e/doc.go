// Package e2e runs ordersync for real, in one process: the embedded Temporal
// server, the simulator over HTTP, a SQLite store and real workers. It is
// the only test package that links the Temporal server, so the slow build
// happens once.
//
// Tests run side by side (parallel_test.go). A new test starts with
//
//	parallel(t, light) // or heavy, heavyPostgres, timed, timedPostgres
//
// light: one embedded server, a simulator, a SQLite store, in-process
// workers (startSystem). heavy: worker or server OS processes, tens of
// thousands of orders. heavyPostgres: heavy, with Temporal on PostgreSQL
// (postgresStack, startPostgresCluster), of which one or two run at once
// (as PostgreSQL's max_connections allows). timed: the test bounds a rate,
// a latency or a deadline, so it runs next to one light test at most. A
// share with long set (a test of minutes) starts before the others of its
// weight. A test whose busy part ends early gives the rest back with
// lighten(t, light). A test that needs the process to itself (t.Chdir, a variable it
// must change back) does not call parallel: serial tests all run first,
// one at a time.
//
// A parallel test must not:
//   - call t.Setenv, os.Setenv or t.Chdir: use setenv (a variable a parallel
//     test sets stays set for the run; give yours a name no other test sets
//     to another value) and pass settings to child processes in their env;
//     runCLI is safe, it swaps the CLI's variables in under a lock;
//   - use a fixed port: listen on 127.0.0.1:0, or let the server pick
//     (FrontendPort: -1), or retry when a port you picked is taken;
//   - share a database, directory or file: use t.TempDir() and
//     freshPostgresStore / startPostgresCluster (a database of its own);
//   - change package-level state (other than through setenv).
package e2e
