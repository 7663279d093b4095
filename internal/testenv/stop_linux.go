package testenv

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"time"
)

// StopProcess stops process pid (SIGSTOP) and returns once the kernel
// reports it stopped, so it runs no further instruction until resume
// (SIGCONT) is called or it is killed: a test can then look at what the
// process has done and kill it at that state however loaded the machine
// is. A process not stopped within a minute is an error (the bound only
// catches a hang).
func StopProcess(pid int) (resume func(), err error) {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("testenv: stop %d: %w", pid, err)
	}
	resume = func() { syscall.Kill(pid, syscall.SIGCONT) }
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			resume()
			return nil, fmt.Errorf("testenv: stop %d: %w", pid, err)
		}
		// "PID (COMM) STATE ...": T is stopped, Z a process that ended.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && len(b) > i+2 {
			switch b[i+2] {
			case 'T', 't':
				return resume, nil
			case 'Z', 'X':
				return nil, fmt.Errorf("testenv: stop %d: the process has ended", pid)
			}
		}
		if time.Now().After(deadline) {
			resume()
			return nil, fmt.Errorf("testenv: %d not stopped a minute after SIGSTOP", pid)
		}
	}
}
