package devloop

import (
	"slices"
	"testing"
)

func TestGoBuildEnvTurnsCgoOffUnlessTheEnvironmentChooses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   []string
		want  []string
		noCgo bool
	}{
		{"unset", []string{"PATH=/bin"}, []string{"PATH=/bin", "CGO_ENABLED=0"}, true},
		{"chosen on", []string{"CGO_ENABLED=1", "PATH=/bin"}, []string{"CGO_ENABLED=1", "PATH=/bin"}, false},
		{"chosen off", []string{"PATH=/bin", "CGO_ENABLED=0"}, []string{"PATH=/bin", "CGO_ENABLED=0"}, false},
		{"a lookalike name", []string{"MY_CGO_ENABLED=1"}, []string{"MY_CGO_ENABLED=1", "CGO_ENABLED=0"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clip(slices.Clone(tc.env))
			got, noCgo := goBuildEnv(in)
			if !slices.Equal(got, tc.want) || noCgo != tc.noCgo {
				t.Fatalf("goBuildEnv(%q) = %q, %v; want %q, %v", tc.env, got, noCgo, tc.want, tc.noCgo)
			}
			if !slices.Equal(in, tc.env) {
				t.Fatalf("goBuildEnv changed its input: %q", in)
			}
		})
	}
}
