//go:build !linux && !darwin

package bench

// machineLoad is not known here.
func machineLoad() (load1, steal, busy, total float64) { return 0, 0, 0, 0 }
