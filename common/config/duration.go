package config

import (
	"fmt"
	"time"
)

// Duration is a time.Duration that config files write as "5s", "2m" or "1h30m".
// gcfg cannot parse time.Duration itself (it is an int64 of nanoseconds).
type Duration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler, which gcfg and YAML decoders use.
func (d *Duration) UnmarshalText(text []byte) error {
	s := string(text)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration: use a number with a unit, such as 30s, 5m or 1h")
	}
	if v < 0 {
		return fmt.Errorf("invalid duration: must not be negative")
	}
	d.Duration = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }
