// Package textclip bounds and escapes untrusted text: what a platform, a
// destination or a message sender wrote (order IDs, error bodies, field
// names, pause reasons) before it reaches an error, workflow history, a log
// line or a terminal.
//
// # Sizes
//
// One rule for every place, measured as the text's size once JSON-encoded
// (how history and logs store it: a control character such as U+0001 takes
// six bytes as "\u0001", an invalid UTF-8 byte six as "\ufffd"):
//
//   - ValueMax (512 bytes): one value quoted inside an error (an order ID,
//     a total, a timestamp, a field name).
//   - MessageMax (2048 bytes): a whole error or status text kept or shown
//     (an activity error, a dead-letter entry's error, a Delivery's
//     last_error, a pause reason).
//
// A clipped text ends in a marker that says how long the original was
// ("…[clipped, 716800 bytes]"), so a reader knows it is not whole. Invalid
// UTF-8 becomes U+FFFD: protobuf strings (Temporal failure messages) must be
// valid UTF-8, and a message that cannot be marshalled would fail the task
// that carries it.
//
// # Terminal
//
// Terminal escapes what a terminal would act on: C0 and C1 control
// characters (ESC starts CSI and OSC sequences that move the cursor, retitle
// the window or write links), DEL, Unicode bidirectional overrides and
// invalid UTF-8. The escapes are Go's (\x1b, \u202e), so an operator can
// still read what the platform sent. Every CLI table and text line that
// prints platform- or message-derived text goes through it; JSON output
// escapes control characters by itself.
package textclip
