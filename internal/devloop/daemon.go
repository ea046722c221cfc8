package devloop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/session"
)

// StartWait bounds how long dev waits for the daemon to answer and the
// package to run; a loaded machine building and starting both is slow.
const StartWait = 2 * time.Minute

// stopWait is how long the daemon is given to stop its packages after
// SIGTERM (it gives them 10 s itself) before its process group is killed.
const stopWait = 15 * time.Second

// daemon is the serve dev started, in its own process group.
type daemon struct {
	cmd   *exec.Cmd
	state string
	log   string
	c     *client.Client
	done  chan struct{} // closed when the process has exited
	// runs are the run tokens the daemon recorded: every process its
	// packages started carries one in its marker.
	runs []string
}

// startDaemon runs self serve on config and state, its output appended to
// logPath, in a process group of its own (so a Ctrl-C at the terminal
// reaches dev, which stops it in order, and not the daemon directly).
func startDaemon(self, configFile, state, logPath string) (*daemon, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(self, "serve", "--config", configFile, "--state", state)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s serve: %w", self, err)
	}
	d := &daemon{cmd: cmd, state: state, log: logPath, c: client.New(state), done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

// exited reports whether the daemon's process has ended.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// waitRunning waits until the daemon runs its configuration and the
// package name runs, and returns the package as the daemon shows it. It
// gives up when the daemon exits, the package is refused, or at StartWait.
func (d *daemon) waitRunning(ctx context.Context, name string) (client.Extension, error) {
	ctx, cancel := context.WithTimeout(ctx, StartWait)
	defer cancel()
	var last client.Extension
	for {
		st, err := d.c.Status(ctx)
		if err == nil && st.PID == d.cmd.Process.Pid && st.Phase == client.PhaseRunning {
			d.recordRuns()
			if x, ok := d.extension(ctx, name); ok {
				last = x
				switch x.State {
				case "running":
					return x, nil
				case "refused", "stopped":
					return x, fmt.Errorf("%s is %s (%s): %s", name, x.State, x.Code, firstLine(x.LastError))
				}
			}
		}
		if d.exited() {
			return last, fmt.Errorf("the daemon exited before %s ran; its log is %s", name, d.log)
		}
		select {
		case <-ctx.Done():
			if last.Name != "" {
				return last, fmt.Errorf("%s did not run within %s: it is %s (%s) %s", name, StartWait, last.State, last.Code, firstLine(last.LastError))
			}
			return last, fmt.Errorf("the daemon did not run its configuration within %s; its log is %s", StartWait, d.log)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// extension is the package name as the daemon shows it.
func (d *daemon) extension(ctx context.Context, name string) (client.Extension, bool) {
	exts, err := d.c.Extensions(ctx)
	if err != nil {
		return client.Extension{}, false
	}
	for _, x := range exts.Extensions {
		if x.Name == name {
			return x, true
		}
	}
	return client.Extension{}, false
}

// recordRuns remembers the run tokens the daemon recorded in its state
// directory before it started any package, so what its packages leave
// running can be found after it is gone.
func (d *daemon) recordRuns() {
	data, err := os.ReadFile(filepath.Join(d.state, "processes.json"))
	if err != nil {
		return
	}
	var rec struct {
		Runs []struct {
			Token string `json:"token"`
		} `json:"runs"`
	}
	if json.Unmarshal(data, &rec) != nil {
		return
	}
	for _, r := range rec.Runs {
		if r.Token != "" && !slices.Contains(d.runs, r.Token) {
			d.runs = append(d.runs, r.Token)
		}
	}
}

// stop stops the daemon: SIGTERM to its process group, up to stopWait for
// it to stop its packages, then SIGKILL to the group; then every process
// still carrying one of its runs' markers is killed. It returns the
// processes killed after the daemon was gone.
func (d *daemon) stop() []int {
	// The group is signalled only while its leader has not been waited
	// for, so its id cannot have been reused by then.
	pgid := d.cmd.Process.Pid
	if !d.exited() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(stopWait):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-d.done
		}
	}
	var killed []int
	for _, run := range d.runs {
		pids, _ := session.Reap(run, nil)
		killed = append(killed, pids...)
	}
	return killed
}
