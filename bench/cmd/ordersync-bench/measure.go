package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// memory is a process's resident set from /proc: now and its peak.
type memory struct {
	RSSMiB  float64 `json:"rss_mib"`
	PeakMiB float64 `json:"peak_rss_mib"`
}

func readMemory(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[0], 64)
		switch k {
		case "VmRSS":
			m.RSSMiB = kb / 1024
		case "VmHWM":
			m.PeakMiB = kb / 1024
		}
	}
	return m, sc.Err()
}

// group runs functions with a concurrency limit and keeps the first error
// (golang.org/x/sync/errgroup in a dozen lines, to keep go.mod as it is).
type group struct {
	wg   sync.WaitGroup
	sem  chan struct{}
	once sync.Once
	err  error
}

func newGroup(limit int) *group { return &group{sem: make(chan struct{}, limit)} }

func (g *group) Go(fn func() error) {
	g.wg.Add(1)
	g.sem <- struct{}{}
	go func() {
		defer func() { <-g.sem; g.wg.Done() }()
		if err := fn(); err != nil {
			g.once.Do(func() { g.err = err })
		}
	}()
}

func (g *group) Wait() error { g.wg.Wait(); return g.err }

// cpuSeconds is the CPU time (user + system) this process has used so far.
// On a shared or small machine it measures cost better than wall time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// loadAverage is the 1-minute load average: other work on the machine
// skews wall times, so every case records it.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// procCPU is a process's user + system CPU seconds from /proc/<pid>/stat.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // clock ticks; 100 per second on Linux
}
