// Package invariants checks a recorded history against docs/reliability.md's
// invariants; the fault tests end with it.
package invariants
