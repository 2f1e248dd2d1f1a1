package config

import (
	"fmt"
	"time"
)

// Duration is a manifest duration: integer seconds (Concerto style) or a Go duration
// string such as "90s" or "1m30s".
type Duration time.Duration

// UnmarshalTOML implements toml.Unmarshaler.
func (d *Duration) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return fmt.Errorf("%d is negative; use a number of seconds ≥ 0", x)
		}
		*d = Duration(time.Duration(x) * time.Second)
	case float64:
		if x < 0 {
			return fmt.Errorf("%v is negative; use a number of seconds ≥ 0", x)
		}
		*d = Duration(time.Duration(x * float64(time.Second)))
	case string:
		p, err := time.ParseDuration(x)
		if err != nil {
			return fmt.Errorf("%q is not a duration; use seconds or \"90s\"", x)
		}
		if p < 0 {
			return fmt.Errorf("%q is negative; use a duration ≥ 0", x)
		}
		*d = Duration(p)
	default:
		return fmt.Errorf("%v is not a duration; use seconds or \"90s\"", v)
	}
	return nil
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Or returns d, or def when d is zero.
func (d Duration) Or(def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return time.Duration(d)
}
