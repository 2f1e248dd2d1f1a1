package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// processUsage is a process's CPU seconds (user and system, from /proc/<pid>/stat) and
// its peak resident memory (VmHWM, from /proc/<pid>/status).
func processUsage(pid int) (procUsage, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return procUsage{}, fmt.Errorf("it has exited, so its CPU and memory cannot be read: see its log")
	}
	if err != nil {
		return procUsage{}, err
	}
	// The command name, in parentheses, may hold spaces: the fields follow its last ")".
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return procUsage{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return procUsage{}, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	u := procUsage{cpu: (utime + stime) / ticksPerSecond}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return procUsage{}, err
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return procUsage{}, fmt.Errorf("/proc/%d/status: VmHWM %q", pid, rest)
			}
			u.rss = kb * 1024
		}
	}
	return u, nil
}
