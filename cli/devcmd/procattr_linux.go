package devcmd

import (
	"os/exec"
	"syscall"
)

// setNodeProcAttr puts a server node in a process group of its own, so a
// terminal's Ctrl-C (sent to the whole foreground group) reaches only the
// cluster command, which stops the nodes after the workers drained; and
// has the kernel send the node SIGTERM when the cluster command dies, even
// by SIGKILL, so no node outlives it.
func setNodeProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
