package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Tick is simulated time in picoseconds.
type Tick uint64

// Common durations.
const (
	PS Tick = 1
	NS Tick = 1000
	US Tick = 1000 * NS
	MS Tick = 1000 * US
	S  Tick = 1000 * MS
)

// Never is a time no simulation reaches.
const Never Tick = math.MaxUint64

// PeriodOfMHz returns the clock period of a frequency given in MHz. It fails
// when the period is not a whole number of picoseconds, since a rounded period
// would drift against other clocks (NearestPeriodOfMHz rounds it).
func PeriodOfMHz(mhz uint64) (Tick, error) {
	if mhz == 0 {
		return 0, fmt.Errorf("clock frequency must be positive")
	}
	if 1_000_000%mhz != 0 {
		return 0, fmt.Errorf("clock of %d MHz has a period of %.3f ps, not a whole number of picoseconds", mhz, 1e6/float64(mhz))
	}
	return Tick(1_000_000 / mhz), nil
}

// NearestPeriodOfMHz returns the whole number of picoseconds nearest to
// the period of a frequency given in MHz (halves round up): 300 MHz runs
// at 3333 ps, 300.03 MHz, and drifts by that against an exact clock. It
// fails for 0 and above 1000000 MHz (a period under a picosecond).
func NearestPeriodOfMHz(mhz uint64) (Tick, error) {
	if mhz == 0 || mhz > 1_000_000 {
		return 0, fmt.Errorf("clock of %d MHz: want 1 to 1000000 MHz (a period of at least 1 ps)", mhz)
	}
	return Tick((2_000_000 + mhz) / (2 * mhz)), nil
}

// String prints a time with the largest unit that keeps it exact.
func (t Tick) String() string {
	switch {
	case t == Never:
		return "never"
	case t == 0:
		return "0ps"
	case t%S == 0:
		return strconv.FormatUint(uint64(t/S), 10) + "s"
	case t%MS == 0:
		return strconv.FormatUint(uint64(t/MS), 10) + "ms"
	case t%US == 0:
		return strconv.FormatUint(uint64(t/US), 10) + "us"
	case t%NS == 0:
		return strconv.FormatUint(uint64(t/NS), 10) + "ns"
	}
	return strconv.FormatUint(uint64(t), 10) + "ps"
}

// Human prints a time for people, as a decimal in the largest unit not above
// it ("365.8ns", "1.25us").
func (t Tick) Human() string {
	units := []struct {
		name string
		v    Tick
	}{{"s", S}, {"ms", MS}, {"us", US}, {"ns", NS}}
	for _, u := range units {
		if t >= u.v {
			return strconv.FormatFloat(float64(t)/float64(u.v), 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatUint(uint64(t), 10) + "ps"
}

// ParseTick reads a duration such as "250ns", "3us", "1500ps" or "12" (ps).
func ParseTick(s string) (Tick, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty time")
	}
	units := []struct {
		suffix string
		mul    Tick
	}{{"ps", PS}, {"ns", NS}, {"us", US}, {"µs", US}, {"ms", MS}, {"s", S}}
	mul := PS
	num := s
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			mul, num = u.mul, strings.TrimSpace(strings.TrimSuffix(s, u.suffix))
			break
		}
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("time %q: want a whole number with unit ps, ns, us, ms or s", s)
	}
	if v > uint64(Never-1)/uint64(mul) {
		return 0, fmt.Errorf("time %q overflows 64-bit picoseconds", s)
	}
	return Tick(v) * mul, nil
}
