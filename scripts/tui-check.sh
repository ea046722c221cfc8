#!/usr/bin/env bash
# tui-check: the dashboard in a real terminal. It builds open-conduit, runs
# 'open-conduit tui --embedded' on a fresh state directory under tmux at
# each size in SIZES (NO_COLOR=1), waits until the dashboard is live with
# every package of the embedded demo running, then tabs through the panes
# until the first comes round again: each pane's screen text
# (capture-pane -p) goes to $OUT/WxH/<pane>.txt, with a Work's detail
# (enter, then esc) and the full key list (?) beside them, and each is
# checked: the pane's name bracketed in the header line with "live", every
# line within the width, the screen's height, and what the pane must hold
# (the demo's packages running, a Work, an Event). Then q: the command must
# exit 0 having stopped its daemon, the tmux session must be gone, and no
# process of the binary may be left.
#
# Without tmux it says so and exits 0. Environment: OUT (default
# bin/tui-check), SIZES (default "80x24 160x48"), DEADLINE in seconds for
# each wait (default 60).
set -euo pipefail

if ! command -v tmux >/dev/null 2>&1; then
	echo "tui-check: skipped: tmux is not installed (it needs tmux to run the dashboard in a terminal)"
	exit 0
fi

root=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$root/bin/tui-check}
SIZES=${SIZES:-80x24 160x48}
DEADLINE=${DEADLINE:-60}
# Character counts (${#line}) are of characters, not bytes, under a UTF-8
# locale: the help bar and the detail use ⋮, •, ↓ and ….
utf8=$(locale -a 2>/dev/null | grep -i -m 1 -E '^(C|en_US)\.utf-?8$' || true)
export LC_ALL=${utf8:-C.UTF-8}

work=$(mktemp -d "${TMPDIR:-/tmp}/tui-check.XXXXXX")
bin=$work/open-conduit
# A tmux server of its own: the operator's sessions are never touched.
tmuxsock=tui-check-$$
session=tui
failures=0

t() { tmux -L "$tmuxsock" "$@"; }

# leftovers lists the processes running this build of the binary (its
# path is this run's own), one "pid args" a line.
leftovers() { ps -eo pid=,args= | awk -v bin="$bin" 'index($0, bin) && !/awk/'; }

cleanup() {
	t kill-server 2>/dev/null || true
	local pid
	for pid in $(leftovers | awk '{print $1}'); do kill -9 "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

fail() {
	echo "tui-check: FAIL: $*" >&2
	failures=$((failures + 1))
}

# screen prints what the session shows now, wrapped lines joined (-J) so
# a line drawn wider than the terminal shows as one long line.
screen() { t capture-pane -p -J -t "$session"; }

# waitfor waits until the screen satisfies the test function $2, saying
# $1 and the last screen when DEADLINE passes.
waitfor() {
	local what=$1 test=$2 end=$((SECONDS + DEADLINE)) s
	while :; do
		s=$(screen 2>/dev/null || true)
		if "$test" "$s"; then return 0; fi
		if ((SECONDS >= end)); then
			fail "waited ${DEADLINE}s for $what; the screen:"
			printf '%s\n' "$s" >&2
			return 1
		fi
		sleep 0.2
	done
}

header() { printf '%s\n' "$1" | head -n 1; }
# active is the bracketed pane name in the header line.
active() { header "$1" | sed -n 's/.*\[\([^]]*\)\].*/\1/p'; }

packages=()
is_live() { [[ $(header "$1") == *live* && $(header "$1") != *disconnected* ]]; }
shows_packages_running() {
	is_live "$1" || return 1
	local p
	for p in "${packages[@]}"; do
		printf '%s\n' "$1" | grep -Eq "^$p +.* running " || return 1
	done
}

# check judges one capture: the header, the size, and what pane $2 must
# show. $3 is the capture's file.
check() {
	local s=$1 pane=$2 file=$3 w=$4 h=$5 n=0 line
	[[ $(header "$s") == *"[$pane]"* ]] || fail "$file: the header does not bracket $pane: $(header "$s")"
	is_live "$s" || fail "$file: the header does not say live: $(header "$s")"
	while IFS= read -r line; do
		n=$((n + 1))
		((${#line} <= w)) || fail "$file: line $n is ${#line} characters wide, over $w: $line"
	done <<<"$s"
	((n == h)) || fail "$file: $n lines, not the terminal's $h (a wrapped or missing line)"
	case $(basename "$file" .txt) in
	extensions)
		local p
		for p in "${packages[@]}"; do
			printf '%s\n' "$s" | grep -Eq "^$p +.* running " || fail "$file: package $p is not listed running"
		done
		;;
	work)
		has_work "$s" || fail "$file: no Work listed"
		;;
	work-detail)
		in_detail "$s" || fail "$file: no Work's detail (its attempts, esc back)"
		;;
	events)
		printf '%s\n' "$s" | grep -Eq '^[0-9]+ +demo ' || fail "$file: no Event of the demo scope listed"
		;;
	esac
}

save() {
	mkdir -p "$(dirname "$2")"
	# Without the trailing blanks -J keeps.
	printf '%s\n' "$1" | sed 's/ *$//' >"$2"
}

has_work() { printf '%s\n' "$1" | grep -Eq '^(queued|running|waiting|completed|failed|cancelled) '; }
has_event() { printf '%s\n' "$1" | grep -Eq '^[0-9]+ +demo '; }
in_detail() { [[ $1 == *Attempts* && $1 == *"esc back"* ]]; }
not_in_detail() { ! in_detail "$1"; }
in_package_detail() { [[ $1 == *"Package "*"esc back"* && $1 == *Surfaces* ]]; }
not_in_package_detail() { ! in_package_detail "$1"; }
filtered() { [[ $1 == *"filter: demo"* ]] && has_work "$1"; }
not_filtered() { [[ $1 != *"filter: "* && $1 != *"(enter keeps, esc drops)"* ]]; }
has_log_line() { printf '%s\n' "$1" | grep -q 'started'; }
has_wire_line() { printf '%s\n' "$1" | grep -Eq '(→|←)ext +(request|answer|notification)'; }
in_wire_entry() { [[ $1 == *"bytes"*"esc back"* && $1 == *'"jsonrpc"'* ]]; }
not_in_wire_entry() { ! in_wire_entry "$1"; }

# look presses keys $2..., waits until test $1 holds, and saves and checks
# the screen as capture $file_ of pane $pane_ (set by the caller).
look() {
	local test=$1
	shift
	t send-keys -t "$session" "$@"
	waitfor "$test after ${*}" "$test" || return 1
	local s
	s=$(screen)
	save "$s" "$file_"
	check "$s" "$pane_" "$file_" "$w" "$h"
}
# footer counts the non-empty lines at the screen's foot: the help bar
# is one line, the full key list more.
footer() { printf '%s\n' "$1" | awk 'NF { n++; next } { n = 0 } END { print n + 0 }'; }
shows_all_keys() { (($(footer "$1") > 1)); }
shows_short_help() { (($(footer "$1") == 1)); }

# visit runs the dashboard at one size and checks every pane.
visit() {
	local size=$1 w=${1%x*} h=${1#*x} dir=$OUT/$1 state=$work/state-$1
	local s first pane prev file rc file_ pane_
	echo "tui-check: $size"
	rm -rf "$dir"
	mkdir -p "$dir"
	t new-session -d -s "$session" -x "$w" -y "$h" \
		"env NO_COLOR=1 HOME=$work/home XDG_CONFIG_HOME=$work/home/config OPEN_CONDUIT_STATE= \
		$bin tui --embedded --state $state 2>$work/stderr-$size; echo \$? >$work/rc-$size"
	# The demo's packages, from the daemon the dashboard started.
	local end=$((SECONDS + DEADLINE))
	until packages=($("$bin" extension list --state "$state" 2>/dev/null | awk 'NR > 1 && NF { print $1 }')) &&
		((${#packages[@]} > 0)); do
		if ((SECONDS >= end)); then
			fail "$size: the embedded daemon never answered 'extension list' on $state"
			cat "$work/stderr-$size" >&2 2>/dev/null || true
			return 1
		fi
		sleep 0.2
	done
	waitfor "the demo's packages (${packages[*]}) running, live" shows_packages_running || return 1
	s=$(screen)
	first=$(active "$s")
	pane=$first
	while :; do
		file=$dir/$(printf '%s' "$pane" | tr 'A-Z ' 'a-z-').txt
		pane_=$pane
		case $pane in
		Extensions)
			s=$(screen)
			save "$s" "$file"
			check "$s" "$pane" "$file" "$w" "$h"
			file_=$dir/extensions-detail.txt
			look in_package_detail Enter || return 1
			t send-keys -t "$session" Escape
			waitfor "the package list again" not_in_package_detail || return 1
			;;
		Logs)
			waitfor "a line of the package's log" has_log_line || return 1
			s=$(screen)
			save "$s" "$file"
			check "$s" "$pane" "$file" "$w" "$h"
			;;
		Wire)
			waitfor "a JSON-RPC line in the Wire pane" has_wire_line || return 1
			s=$(screen)
			save "$s" "$file"
			check "$s" "$pane" "$file" "$w" "$h"
			file_=$dir/wire-entry.txt
			look in_wire_entry Enter || return 1
			t send-keys -t "$session" Escape
			waitfor "the wire list again" not_in_wire_entry || return 1
			;;
		Work)
			waitfor "a Work in the Work pane" has_work || return 1
			s=$(screen)
			save "$s" "$file"
			check "$s" "$pane" "$file" "$w" "$h"
			t send-keys -t "$session" Enter
			waitfor "a Work's detail" in_detail || return 1
			s=$(screen)
			save "$s" "$dir/work-detail.txt"
			check "$s" "$pane" "$dir/work-detail.txt" "$w" "$h"
			t send-keys -t "$session" Escape
			waitfor "the Work list again" not_in_detail || return 1
			file_=$dir/work-filter.txt
			look filtered / d e m o Enter || return 1
			t send-keys -t "$session" / Escape
			waitfor "the filter cleared" not_filtered || return 1
			;;
		Events)
			waitfor "an Event in the Events pane" has_event || return 1
			s=$(screen)
			save "$s" "$file"
			check "$s" "$pane" "$file" "$w" "$h"
			;;
		*)
			s=$(screen)
			save "$s" "$file"
			check "$s" "$pane" "$file" "$w" "$h"
			;;
		esac
		prev=$pane
		t send-keys -t "$session" Tab
		moved() { local a; a=$(active "$1"); [[ -n $a && $a != "$prev" ]]; }
		waitfor "the pane after $prev" moved || return 1
		pane=$(active "$(screen)")
		[[ $pane != "$first" ]] || break
	done
	# The full key list, on the first pane.
	t send-keys -t "$session" '?'
	waitfor "the full key list" shows_all_keys || return 1
	s=$(screen)
	save "$s" "$dir/keys.txt"
	check "$s" "$pane" "$dir/keys.txt" "$w" "$h"
	t send-keys -t "$session" '?'
	waitfor "the help bar again" shows_short_help || return 1

	t send-keys -t "$session" q
	end=$((SECONDS + DEADLINE))
	while t has-session -t "$session" 2>/dev/null; do
		if ((SECONDS >= end)); then
			fail "$size: the session is still there ${DEADLINE}s after q"
			return 1
		fi
		sleep 0.2
	done
	rc=$(cat "$work/rc-$size" 2>/dev/null || echo none)
	[[ $rc == 0 ]] || fail "$size: tui --embedded exited $rc: $(cat "$work/stderr-$size")"
	grep -q "the daemon stopped" "$work/stderr-$size" || fail "$size: it did not say the daemon stopped: $(cat "$work/stderr-$size")"
	[[ ! -e $state/open-conduit.sock ]] || fail "$size: the socket is left in $state"
	if [[ -n $(leftovers) ]]; then
		fail "$size: processes left after q:"
		leftovers >&2
	fi
	echo "tui-check: $size: ok: $(cd "$dir" && echo *.txt)"
}

echo "tui-check: building open-conduit"
(cd "$root" && CGO_ENABLED=0 go build -o "$bin" .)
for size in $SIZES; do
	visit "$size" || true
	t kill-server 2>/dev/null || true
done
if ((failures > 0)); then
	echo "tui-check: $failures check(s) failed; captures in $OUT" >&2
	exit 1
fi
echo "tui-check: ok; captures in $OUT"
