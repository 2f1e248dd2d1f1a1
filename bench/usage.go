package bench

import "syscall"

// usage is CPU time and peak memory, from getrusage, and how busy the machine is.
type usage struct {
	cpu      float64 // seconds, self and children
	self     float64 // seconds, this process alone: the harness without its agents
	rss      int64   // peak of this process, bytes
	childRSS int64   // peak of the largest child, bytes
	// load1 is the 1-minute load average as the measurement began; steal, busy and
	// total the machine's stolen, busy and all CPU seconds (since boot; since: over the
	// measurement).
	load1, steal, busy, total float64
}

func readUsage() usage {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	u := usage{
		cpu:      sec(self.Utime) + sec(self.Stime) + sec(kids.Utime) + sec(kids.Stime),
		self:     sec(self.Utime) + sec(self.Stime),
		rss:      self.Maxrss * 1024,
		childRSS: kids.Maxrss * 1024,
	}
	u.load1, u.steal, u.busy, u.total = machineLoad()
	return u
}

// since is the CPU spent since u; peaks are as of now.
func (u usage) since(before usage) usage {
	return usage{cpu: u.cpu - before.cpu, self: u.self - before.self, rss: u.rss, childRSS: u.childRSS,
		load1: before.load1, steal: u.steal - before.steal, busy: u.busy - before.busy, total: u.total - before.total}
}
