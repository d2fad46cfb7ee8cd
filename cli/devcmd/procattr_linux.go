package devcmd

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel send cmd SIGTERM when this process
// dies, even by SIGKILL, so no server node outlives its cluster command.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
