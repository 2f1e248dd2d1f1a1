package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// parseCPUTime reads ps's cputime, [[dd-]hh:]mm:ss.ss, in seconds.
func parseCPUTime(s string) (float64, error) {
	days := 0.0
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err != nil {
			return 0, fmt.Errorf("cputime %q", s)
		}
		days, s = n, rest
	}
	var sec float64
	for part := range strings.SplitSeq(s, ":") {
		n, err := strconv.ParseFloat(part, 64)
		if err != nil {
			return 0, fmt.Errorf("cputime %q", s)
		}
		sec = sec*60 + n
	}
	return days*86400 + sec, nil
}
