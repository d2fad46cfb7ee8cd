//go:build !linux

package devcmd

import "os/exec"

// setParentDeathSignal: only Linux has a parent-death signal; elsewhere a
// node outlives a cluster command killed outright.
func setParentDeathSignal(*exec.Cmd) {}
