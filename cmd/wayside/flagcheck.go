package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Flag checks: every numeric flag declares the values it accepts where it
// is defined (fs.atLeast, fs.within), every closed set of words its words
// (fs.oneOf), every directory list that must exist (fs.existingDirs); Parse
// checks them all and reports the first violation as a usage error naming
// the flag, the value and what is allowed. Parse also refuses (in tests,
// through env.flagAudit) a numeric flag that declared no range, so a new
// flag cannot slip through unchecked.

// flagRule checks one flag's value after parsing.
type flagRule struct {
	name  string
	check func(f *flag.Flag) error
	// onDisk rules depend on the file system, not on the value alone:
	// their defaults are not checked.
	onDisk bool
}

// numeric returns the value of a numeric flag as a float64, and whether
// the flag is numeric.
func numeric(f *flag.Flag) (float64, bool) {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return 0, false
	}
	switch v := g.Get().(type) {
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint:
		return float64(v), true
	case uint64:
		return float64(v), true
	case float64:
		return v, true
	case time.Duration:
		return float64(v), true
	}
	return 0, false
}

// showBound prints a bound in the flag's own unit (a duration as a
// duration).
func showBound(f *flag.Flag, v float64) string {
	if g, ok := f.Value.(flag.Getter); ok {
		if _, isDur := g.Get().(time.Duration); isDur {
			return time.Duration(v).String()
		}
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// atLeast declares that the numeric flag name accepts values >= lo.
func (f *flagSet) atLeast(name string, lo float64) {
	f.rule(name, func(fl *flag.Flag) error {
		v, _ := numeric(fl)
		if !(v >= lo) || math.IsInf(v, 0) {
			return fmt.Errorf("must be at least %s, not %s", showBound(fl, lo), fl.Value)
		}
		return nil
	})
}

// within declares that the numeric flag name accepts values in [lo, hi].
func (f *flagSet) within(name string, lo, hi float64) {
	f.rule(name, func(fl *flag.Flag) error {
		v, _ := numeric(fl)
		if !(v >= lo && v <= hi) {
			return fmt.Errorf("must be between %s and %s, not %s", showBound(fl, lo), showBound(fl, hi), fl.Value)
		}
		return nil
	})
}

// oneOf declares the words the string flag name accepts.
func (f *flagSet) oneOf(name string, words ...string) {
	f.rule(name, func(fl *flag.Flag) error {
		v := fl.Value.String()
		for _, w := range words {
			if v == w {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s, not %q", strings.Join(words, ", "), v)
	})
}

// existingDirs declares that every directory the flag name lists (comma
// separated, or a repeatable flag) must exist.
func (f *flagSet) existingDirs(name string) {
	f.addRule(name, true, func(fl *flag.Flag) error {
		var dirs []string
		if sl, ok := fl.Value.(*stringList); ok {
			dirs = *sl
		} else {
			dirs = splitList(fl.Value.String())
		}
		for _, d := range dirs {
			fi, err := os.Stat(d)
			switch {
			case err != nil:
				return fmt.Errorf("%s: no such directory", d)
			case !fi.IsDir():
				return fmt.Errorf("%s: not a directory", d)
			}
		}
		return nil
	})
}

func (f *flagSet) rule(name string, check func(*flag.Flag) error) { f.addRule(name, false, check) }

func (f *flagSet) addRule(name string, onDisk bool, check func(*flag.Flag) error) {
	if f.Lookup(name) == nil {
		panic("wayside: flag rule for undefined flag " + name)
	}
	f.rules = append(f.rules, flagRule{name: name, check: check, onDisk: onDisk})
}

// unranged lists the numeric flags that declared no rule.
func (f *flagSet) unranged() []string {
	ruled := map[string]bool{}
	for _, r := range f.rules {
		ruled[r.name] = true
	}
	var missing []string
	f.VisitAll(func(fl *flag.Flag) {
		if _, ok := numeric(fl); ok && !ruled[fl.Name] {
			missing = append(missing, fl.Name)
		}
	})
	sort.Strings(missing)
	return missing
}

// checkRules runs the declared checks.
func (f *flagSet) checkRules() error {
	for _, r := range f.rules {
		if err := r.check(f.Lookup(r.name)); err != nil {
			return f.usagef("%s: %s %v", f.name, dashed(r.name), err)
		}
	}
	return nil
}

// checkDefaults reports the flags whose default value breaks their own
// rule (tests call it through the audit hook).
func (f *flagSet) checkDefaults() []string {
	var bad []string
	for _, r := range f.rules {
		fl := f.Lookup(r.name)
		v := defaultValue(fl)
		if r.onDisk || v == nil {
			continue
		}
		def := *fl
		def.Value = v
		if err := r.check(&def); err != nil {
			bad = append(bad, fmt.Sprintf("%s (default %s): %v", r.name, fl.DefValue, err))
		}
	}
	return bad
}

// defaultValue returns a copy of fl's Value set to its default, or nil
// when the value cannot be copied.
func defaultValue(fl *flag.Flag) flag.Value {
	g, ok := fl.Value.(flag.Getter)
	if !ok {
		return nil
	}
	var v flag.Value
	switch g.Get().(type) {
	case int:
		v = new(intValue)
	case int64:
		v = new(int64Value)
	case uint64:
		v = new(uint64Value)
	case float64:
		v = new(float64Value)
	case time.Duration:
		v = new(durationValue)
	case string:
		v = new(stringValue)
	default:
		return nil
	}
	if err := v.Set(fl.DefValue); err != nil {
		return nil
	}
	return v
}

// Minimal flag.Getter values for checkDefaults.
type (
	intValue      int
	int64Value    int64
	uint64Value   uint64
	float64Value  float64
	durationValue time.Duration
	stringValue   string
)

func (v *intValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	*v = intValue(n)
	return err
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }
func (v *intValue) Get() any       { return int(*v) }
func (v *int64Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	*v = int64Value(n)
	return err
}
func (v *int64Value) String() string { return strconv.FormatInt(int64(*v), 10) }
func (v *int64Value) Get() any       { return int64(*v) }
func (v *uint64Value) Set(s string) error {
	n, err := strconv.ParseUint(s, 0, 64)
	*v = uint64Value(n)
	return err
}
func (v *uint64Value) String() string { return strconv.FormatUint(uint64(*v), 10) }
func (v *uint64Value) Get() any       { return uint64(*v) }
func (v *float64Value) Set(s string) error {
	n, err := strconv.ParseFloat(s, 64)
	*v = float64Value(n)
	return err
}
func (v *float64Value) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }
func (v *float64Value) Get() any       { return float64(*v) }
func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	*v = durationValue(d)
	return err
}
func (v *durationValue) String() string { return time.Duration(*v).String() }
func (v *durationValue) Get() any       { return time.Duration(*v) }
func (v *stringValue) Set(s string) error {
	*v = stringValue(s)
	return nil
}
func (v *stringValue) String() string { return string(*v) }
func (v *stringValue) Get() any       { return string(*v) }

// dashed spells a flag as users type it: -q, --parallel.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
