package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MinEvery is the shortest @every interval: a job fires at most once a
// second.
const MinEvery = time.Second

// searchYears bounds how far Next looks for an occurrence. Every valid
// day-of-month and month pair occurs within eight years (29 February
// included), so an expression with none in that span never fires.
const searchYears = 8

// Spec is a parsed schedule: a standard 5-field cron expression (minute,
// hour, day of month, month, day of week) or @every <duration>. Times are
// UTC.
type Spec struct {
	every                        time.Duration
	minute, hour, dom, month     uint64
	dow                          uint64
	domRestricted, dowRestricted bool
}

// field is one cron field's range and the names it accepts.
type field struct {
	name     string
	min, max int
	names    []string // names[i] is value min+i
}

var fields = [5]field{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{name: "day of week", min: 0, max: 7, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// macros are the named schedules.
var macros = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// Parse reads a schedule. Its errors say what is wrong and what to write
// instead; they quote the part that is wrong, which an operator wrote.
func Parse(expr string) (Spec, error) {
	expr = strings.TrimSpace(expr)
	if rest, ok := strings.CutPrefix(expr, "@every"); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		switch {
		case strings.TrimSpace(rest) == "":
			return Spec{}, fmt.Errorf("@every needs a duration, such as @every 30s")
		case err != nil:
			return Spec{}, fmt.Errorf("@every %q is not a duration: write one such as 30s, 5m or 1h30m", strings.TrimSpace(rest))
		case d < MinEvery:
			return Spec{}, fmt.Errorf("@every %s is shorter than %s: a job fires at most once a second", d, MinEvery)
		}
		return Spec{every: d}, nil
	}
	if m, ok := macros[strings.ToLower(expr)]; ok {
		expr = m
	} else if strings.HasPrefix(expr, "@") {
		return Spec{}, fmt.Errorf("%q is not a known schedule: use @every <duration>, @hourly, @daily, @weekly, @monthly, @yearly or 5 cron fields", expr)
	}
	parts := strings.Fields(expr)
	if len(parts) != 5 {
		return Spec{}, fmt.Errorf("a cron expression has 5 fields (minute hour day-of-month month day-of-week), %q has %d", expr, len(parts))
	}
	var sets [5]uint64
	for i, p := range parts {
		set, err := fields[i].parse(p)
		if err != nil {
			return Spec{}, err
		}
		sets[i] = set
	}
	// Day of week 7 is Sunday, as 0 is.
	if sets[4]&(1<<7) != 0 {
		sets[4] = sets[4]&^(1<<7) | 1
	}
	s := Spec{minute: sets[0], hour: sets[1], dom: sets[2], month: sets[3], dow: sets[4],
		domRestricted: parts[2] != "*" && !strings.HasPrefix(parts[2], "*/"),
		dowRestricted: parts[4] != "*" && !strings.HasPrefix(parts[4], "*/")}
	probe := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, ok := s.Next(probe); !ok {
		return Spec{}, fmt.Errorf("%q never fires: no date has that day of month in those months", expr)
	}
	return s, nil
}

// parse reads one field: a comma-separated list of *, N, N-M, each
// optionally /STEP.
func (f field) parse(s string) (uint64, error) {
	var set uint64
	for _, item := range strings.Split(s, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("%s %q: the step after / must be a whole number of at least 1", f.name, item)
			}
			step = n
		}
		lo, hi := f.min, f.max
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = f.value(a); err != nil {
				return 0, err
			}
			if hi, err = f.value(b); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("%s %q: the range runs backwards; write the smaller bound first", f.name, item)
			}
		default:
			v, err := f.value(rng)
			if err != nil {
				return 0, err
			}
			lo = v
			if !hasStep {
				hi = v
			}
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// value reads one number or name of the field.
func (f field) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < f.min || v > f.max {
		return 0, fmt.Errorf("%s %q: use a number from %d to %d", f.name, s, f.min, f.max)
	}
	return v, nil
}

// Every is the interval of an @every schedule, 0 for a cron expression.
func (s Spec) Every() time.Duration { return s.every }

// Next is the first occurrence strictly after t, in UTC; ok is false when
// there is none within eight years. An @every schedule fires at the
// multiples of its interval since the Unix epoch, so arming it again at
// any time keeps its cadence.
func (s Spec) Next(t time.Time) (time.Time, bool) {
	t = t.UTC()
	if s.every > 0 {
		n := t.UnixNano() / int64(s.every)
		if t.UnixNano() < 0 && t.UnixNano()%int64(s.every) != 0 {
			n--
		}
		return time.Unix(0, (n+1)*int64(s.every)).UTC(), true
	}
	t = t.Truncate(time.Minute).Add(time.Minute)
	limit := t.AddDate(searchYears, 0, 0)
	for t.Before(limit) {
		switch {
		case s.month&(1<<int(t.Month())) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !s.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		case s.hour&(1<<t.Hour()) == 0:
			t = t.Truncate(time.Hour).Add(time.Hour)
		case s.minute&(1<<t.Minute()) == 0:
			t = t.Add(time.Minute)
		default:
			return t, true
		}
	}
	return time.Time{}, false
}

// dayMatches applies cron's day rule: when both day fields are restricted,
// a day matching either fires; otherwise the restricted one decides.
func (s Spec) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<t.Day()) != 0
	dow := s.dow&(1<<int(t.Weekday())) != 0
	if s.domRestricted && s.dowRestricted {
		return dom || dow
	}
	return dom && dow
}
