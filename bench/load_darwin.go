package bench

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// machineLoad is the 1-minute load average (sysctl vm.loadavg: struct loadavg, three
// fixed-point loads and their scale). The machine's CPU seconds are not read here:
// busyMachine judges by the load alone.
func machineLoad() (load1, steal, busy, total float64) {
	b, err := unix.SysctlRaw("vm.loadavg")
	if err != nil || len(b) < 24 {
		return 0, 0, 0, 0
	}
	scale := binary.LittleEndian.Uint64(b[16:24])
	if scale == 0 {
		return 0, 0, 0, 0
	}
	return float64(binary.LittleEndian.Uint32(b[0:4])) / float64(scale), 0, 0, 0
}
