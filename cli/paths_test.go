package cli

import (
	"context"
	"io"
	"path/filepath"
	"testing"
)

func TestStateAndConfigResolveOnceToAbsolutePaths(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	cwd, _ = filepath.Abs(".") // the temp dir may sit behind a symlink
	cases := []struct {
		name          string
		env           map[string]string
		state, config string
		want          place
	}{
		{name: "relative flags are taken from the working directory",
			state: "st", config: filepath.Join("conf", "config.json"),
			want: place{State: filepath.Join(cwd, "st"), ConfigFile: filepath.Join(cwd, "conf", "config.json"), Named: true}},
		{name: "dot segments are cleaned",
			state: "./a/../st", config: "./config.json",
			want: place{State: filepath.Join(cwd, "st"), ConfigFile: filepath.Join(cwd, "config.json"), Named: true}},
		{name: "absolute flags are kept",
			state: "/srv/oc/state", config: "/etc/oc/config.json",
			want: place{State: "/srv/oc/state", ConfigFile: "/etc/oc/config.json", Named: true}},
		{name: "a relative OPEN_CONDUIT_STATE is taken from the working directory",
			env:  map[string]string{"OPEN_CONDUIT_STATE": "envstate", "XDG_CONFIG_HOME": "/xdg/config"},
			want: place{State: filepath.Join(cwd, "envstate"), ConfigFile: "/xdg/config/open-conduit/config.json"}},
		{name: "the flag wins over the environment",
			env: map[string]string{"OPEN_CONDUIT_STATE": "/env/state"}, state: "st", config: "c.json",
			want: place{State: filepath.Join(cwd, "st"), ConfigFile: filepath.Join(cwd, "c.json"), Named: true}},
		{name: "no flags: the XDG directories, and the default file is not named",
			env:  map[string]string{"XDG_STATE_HOME": "/xdg/state", "XDG_CONFIG_HOME": "/xdg/config"},
			want: place{State: "/xdg/state/open-conduit", ConfigFile: "/xdg/config/open-conduit/config.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("OPEN_CONDUIT_STATE", "")
			t.Setenv("XDG_STATE_HOME", "/unused/state")
			t.Setenv("XDG_CONFIG_HOME", "/unused/config")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			w := where{state: c.state, config: c.config, hasState: true, hasConfig: true}
			got, err := w.resolve()
			if err != nil || got != c.want {
				t.Fatalf("resolve() = %+v, %v; want %+v", got, err, c.want)
			}
			if want := filepath.Join(filepath.Dir(c.want.ConfigFile), "extensions"); got.installed() != want {
				t.Errorf("installed packages at %s, want %s", got.installed(), want)
			}
			// Main resolves the flags before the command runs.
			args := []string{"config", "apply"}
			if c.state != "" {
				args = append(args, "--state", c.state)
			}
			if c.config != "" {
				args = append(args, "--config", c.config)
			}
			inv, err := parse(args)
			if err != nil {
				t.Fatal(err)
			}
			r, err := inv.runner(context.Background(), io.Discard, io.Discard)
			if err != nil || r.place != c.want {
				t.Fatalf("the runner's place is %+v, %v; want %+v", r.place, err, c.want)
			}
		})
	}
}

func TestStateOnlyCommandsDoNotResolveAConfigFile(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "")
	inv, err := parse([]string{"events", "list", "--state", "/srv/oc"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := inv.runner(context.Background(), io.Discard, io.Discard)
	if err != nil || r.place != (place{State: "/srv/oc"}) {
		t.Fatalf("events list: %+v, %v", r, err)
	}
	// Negative control: a command that takes --config needs a home for
	// the default one.
	inv, _ = parse([]string{"config", "check"})
	if _, err := inv.runner(context.Background(), io.Discard, io.Discard); err == nil {
		t.Fatal("config check resolved a default config file with no home directory")
	}
}
