package bench

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// ticksPerSecond is the unit of /proc/stat (USER_HZ, 100 on every Linux ABI).
const ticksPerSecond = 100

// machineLoad is the 1-minute load average, and the machine's CPU seconds since boot:
// stolen by the hypervisor, busy (stolen included), and all, from /proc.
func machineLoad() (load1, steal, busy, total float64) {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return load1, 0, 0, 0
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	// cpu user nice system idle iowait irq softirq steal guest guest_nice
	f := strings.Fields(string(line))
	for i, v := range f[1:min(len(f), 9)] {
		n, _ := strconv.ParseFloat(v, 64)
		n /= ticksPerSecond
		total += n
		switch i {
		case 3, 4: // idle, iowait
		case 7:
			steal = n
			busy += n
		default:
			busy += n
		}
	}
	return load1, steal, busy, total
}
