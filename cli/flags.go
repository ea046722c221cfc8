package cli

import (
	"strconv"

	"github.com/spf13/pflag"
)

// switchValue is a boolean flag that pflag's usage lists plainly (--json),
// not as --json[=true|false]; --json=false still works.
type switchValue struct{ p *bool }

func (s switchValue) String() string {
	if s.p == nil {
		return "false"
	}
	return strconv.FormatBool(*s.p)
}

func (s switchValue) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*s.p = b
	return nil
}

func (s switchValue) Type() string { return "bool" }

// boolFlag defines a switch on fs.
func boolFlag(fs *pflag.FlagSet, p *bool, name, short, usage string) {
	f := fs.VarPF(switchValue{p}, name, short, usage)
	f.NoOptDefVal = "true"
}
