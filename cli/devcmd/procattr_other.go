//go:build !linux

package devcmd

import "os/exec"

// setNodeProcAttr: the process group and the parent-death signal are
// Linux's; elsewhere a node shares the terminal's Ctrl-C and outlives a
// cluster command killed outright.
func setNodeProcAttr(*exec.Cmd) {}
