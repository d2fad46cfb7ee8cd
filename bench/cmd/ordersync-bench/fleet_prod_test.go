package main

import (
	"os"
	"os/exec"
	"testing"
)

// The PostgreSQL server's CPU is summed over the postmaster's children:
// the parent read from /proc must be the real one, also for a command name
// with spaces and parentheses.
func TestProcParentAndTree(t *testing.T) {
	ppid, _, ok := procParent(os.Getpid())
	if !ok || ppid != os.Getppid() {
		t.Fatalf("procParent(self) = %d, %v; want %d", ppid, ok, os.Getppid())
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	tree := processTree(os.Getpid())
	if _, ok := tree[cmd.Process.Pid]; !ok {
		t.Fatalf("processTree(self) = %v misses the child %d", tree, cmd.Process.Pid)
	}
	if _, ok := tree[os.Getpid()]; !ok {
		t.Fatalf("processTree(self) misses the root")
	}
}

// A fleet that falls behind shows in the second half of the window.
func TestLagHalves(t *testing.T) {
	series := []lagPoint{{AtSeconds: 0, P99: 600}, {AtSeconds: 10, P99: 620}, {AtSeconds: 20, P99: 640},
		{AtSeconds: 30, P99: 900}, {AtSeconds: 40, P99: 950}, {AtSeconds: 50, P99: 1000}}
	got := lagHalves(series, 60)
	if got != [2]float64{620, 950} {
		t.Fatalf("lagHalves = %v, want [620 950]", got)
	}
	if got := lagHalves(nil, 60); got != [2]float64{} {
		t.Fatalf("lagHalves(nil) = %v", got)
	}
}

func TestMachineBusySecondsGrows(t *testing.T) {
	a := machineBusySeconds()
	for i := 0; i < 50_000_000; i++ { // a little CPU
		_ = i * i
	}
	if b := machineBusySeconds(); a <= 0 || b < a {
		t.Fatalf("machineBusySeconds went %v -> %v", a, b)
	}
}
