#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the suite many times, under load and in QEMU, and report how often
# each test's verdict changed (the flake rate), wall times and what was
# left behind after each run.
#
#   scripts/stress.sh [--host N] [--vm M] [--kernels "6.18 7.3"]
#                     [--mem SIZE] [--no-parallel] [--no-hog] [--no-smp]
#                     [--report FILE]
#
#   --host N       N runs in a row on the running kernel (default 100)
#   --vm M         M runs per kernel in QEMU (default 20; 0: none, but
#                  the 4-vCPU run still boots unless --no-smp)
#   --kernels LIST Debian series for vm/debian-kernel.sh (default "6.18 7.3")
#   --mem SIZE     guest memory of the QEMU runs (default 512M: the
#                  smallest machines the suite is meant for)
#   --no-parallel  leave out the run of two suites at once on the host
#   --no-hog       leave out the run beside a CPU hog on every core
#   --no-smp       leave out the run in a 4-vCPU guest (last kernel)
#   --report FILE  also write the report there (markdown)
#
# The suite is built once into a directory of its own, so that edits made
# to the tree meanwhile change nothing. Each run's verdicts are compared
# with the other runs of the same kind (host, each kernel) and with the
# column of verdicts/expected.tsv for its kernel. Leftovers are loop
# devices backed by the suite's image, and mounts of them, that were not
# there before the run (other jobs' loop devices do not count); in the
# guest of a QEMU run, where nothing else runs, every loop device and loop
# mount counts. SIGINT, SIGTERM and SIGHUP end every process the script
# started before its build directory goes.
#
# Exit status: 0 when no verdict changed, none is off the table and
# nothing was left behind; 1 otherwise; 2 on usage errors or nothing to
# run; 3 without root, and when a kernel cannot be fetched or does not
# boot (after the report of the runs so far); 129, 130, 143 on SIGHUP,
# SIGINT, SIGTERM.

set -euo pipefail

prog=${0##*/}
top=$(cd "$(dirname "$0")/.." && pwd)
host_runs=100
vm_runs=20
kernels="6.18 7.3"
mem=512M
parallel=1
hog=1
smp=1
report=

usage() {
	sed -n '4,21s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

# Infrastructure failure: the report of the runs so far, one line, exit 3.
die() {
	[ -z "${work:-}" ] || [ ! -s "$work/runs" ] || report
	echo "$prog: $*" >&2
	exit 3
}

args="$*"
while [ $# -gt 0 ]; do
	case $1 in
	--host) [ $# -ge 2 ] || usage; host_runs=$2; shift 2 ;;
	--vm) [ $# -ge 2 ] || usage; vm_runs=$2; shift 2 ;;
	--kernels) [ $# -ge 2 ] || usage; kernels=$2; shift 2 ;;
	--mem) [ $# -ge 2 ] || usage; mem=$2; shift 2 ;;
	--no-parallel) parallel=0; shift ;;
	--no-hog) hog=0; shift ;;
	--no-smp) smp=0; shift ;;
	--report) [ $# -ge 2 ] || usage; report=$2; shift 2 ;;
	-h|--help) usage ;;
	*) echo "$prog: unknown option '$1'" >&2; usage ;;
	esac
done
[[ $host_runs =~ ^[0-9]+$ && $vm_runs =~ ^[0-9]+$ ]] || usage
if [ "$host_runs" = 0 ] && [ "$parallel" = 0 ] && [ "$hog" = 0 ] &&
   { [ -z "${kernels//[[:space:]]/}" ] || { [ "$vm_runs" = 0 ] && [ "$smp" = 0 ]; }; }; then
	echo "$prog: nothing to run" >&2
	exit 2
fi
# An unwritable report path shows now, not after the runs.
if [ -n "$report" ]; then
	existed=0
	[ ! -e "$report" ] || existed=1
	{ : >> "$report"; } 2> /dev/null ||
		{ echo "$prog: cannot write the report to $report" >&2; exit 2; }
	[ "$existed" = 1 ] || rm -f "$report"
fi
[ "$(id -u)" = 0 ] || die "needs root"

work=$(mktemp -d /var/tmp/ra-stress.XXXXXX)
hog_pids=()
cleanup() {
	local p

	for p in ${hog_pids[@]+"${hog_pids[@]}"}; do
		kill "$p" 2> /dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# Start time of process $1 (field 22 of /proc/PID/stat), so that a reused
# PID is left alone; nothing when it is gone or a zombie.
start_of() {
	local stat
	local -a f

	stat=$(cat "/proc/$1/stat" 2> /dev/null) || return 0
	read -r -a f <<< "${stat##*) }"
	[ "${f[0]}" = Z ] || echo "${f[19]}"
}

# "PID START" of every process this script started that still runs. Call
# it in this shell, not in a subshell or pipeline, which would list itself.
descendants() {
	local p s

	ps -e -o pid= -o ppid= > "$work/ps"
	awk -v top=$$ '{ up[$1] = $2 }
		END { for (p in up) for (q = up[p]; q in up; q = up[q]) if (q == top) { print p; break } }' \
		"$work/ps" > "$work/tree"
	while read -r p; do
		s=$(start_of "$p")
		[ -z "$s" ] || echo "$p $s"
	done < "$work/tree"
}

# Send signal $1 to the processes in $work/procs that still run; fails
# when none does.
signal() {
	local p s found=1

	while read -r p s; do
		if [ "$(start_of "$p")" = "$s" ]; then
			kill -"$1" "$p" 2> /dev/null || true
			found=0
		fi
	done < "$work/procs"
	return "$found"
}

# On SIGINT, SIGTERM, SIGHUP: stop the tree of processes this script
# started (suite runs with their tests, QEMU, the hog) until no new one
# shows up, so that none escapes by forking meanwhile; send it SIGTERM,
# SIGKILL what still runs after 10 s, then exit (the EXIT trap removes
# $work).
stop() {
	trap '' INT TERM HUP
	: > "$work/procs"
	for _ in $(seq 20); do
		descendants > "$work/procs.now"
		grep -vxF -f "$work/procs" "$work/procs.now" > "$work/procs.new" || break
		cat "$work/procs.new" >> "$work/procs"
		signal STOP || true
	done
	signal TERM || true
	signal CONT || true
	for _ in $(seq 50); do
		signal 0 || break
		sleep 0.2
	done
	signal KILL || true
	exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM
trap 'stop 129' HUP

# Run a command in the background and wait for it, so that a signal runs
# the trap at once, not when the command is done.
child() {
	"$@" &
	wait "$!"
}

child make -s -C "$top" OUTPUT="$work/build" all > "$work/build.log" 2>&1 ||
	{ tail -5 "$work/build.log" >&2; die "build failed"; }
# The guest runner: the suite, then the leftovers it sees.
cp "$work/build/run-suite.sh" "$work/build/suite.sh"
cat > "$work/guest-runner.sh" << 'EOF'
#!/bin/sh
cd "$(dirname "$0")" || exit 1
./suite.sh
rc=$?
echo "# leftovers: $(losetup -a | wc -l) loops, $(grep -c '^/dev/loop' /proc/mounts) loop mounts"
exit $rc
EOF

# Loop devices with their backing files; loop-backed mounts.
loops() {
	losetup -l -n -O NAME,BACK-FILE | awk '{ $1 = $1; print }' | sort
}
loop_mounts() {
	awk '$1 ~ /^\/dev\/loop/' /proc/mounts | sort
}

# What the suite left behind since the snapshot in $work/before.*: loop
# devices backed by its image (lib/ra_fs.c: "image" on a private tmpfs
# over /tmp, unlinked once attached), and mounts of them.
leftovers() {
	local image='^/dev/loop[0-9]+ /tmp/image( [(]deleted[)])?$'

	loops > "$work/loops"
	echo "$(comm -13 "$work/before.loops" "$work/loops" | grep -c -E "$image" || true) loops," \
	     "$(loop_mounts | comm -13 "$work/before.mounts" - |
		awk -v image="$image" 'NR == FNR { if ($0 ~ image) dev[$1]; next } $1 in dev' "$work/loops" - |
		wc -l) loop mounts"
}

# "test<TAB>verdict" lines of a TAP file (scripts/tap-figures.awk).
verdicts() {
	awk -f "$top/scripts/tap-figures.awk" "$1" | awk -F '|' '{ print $1 "\t" $2 }'
}

# One line per run in $work/runs: kind, run, column, seconds, leftovers,
# tests off the table; verdicts in $work/v.<kind>.<run>.
record() {
	local kind=$1 n=$2 column=$3 secs=$4 left=$5 tap=$6 off

	verdicts "$tap" > "$work/v.$kind.$n"
	off=$("$top/scripts/check-verdicts.sh" "$column" "$tap" 2> /dev/null |
	      grep -c '^  \|^no column' || true)
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$n" "$column" "$secs" "$left" "$off" >> "$work/runs"
	echo "$kind run $n: $(grep -c . "$work/v.$kind.$n") tests, ${secs} s, left: $left, off the table: $off" >&2
}

# The report: per kind of run, runs, wall times, leftovers, runs off the
# table; then every test whose verdict was not the same in all runs of a
# kind (host, parallel and hog runs count as one kind: the host kernel).
summarize() {
	echo "\`scripts/stress.sh${args:+ $args}\` on $(uname -r) ($(nproc) CPUs), $(date -u '+%F %H:%M') UTC"
	echo
	echo "| runs | kind | wall time min / median / max (s) | left behind (worst) | runs off the table |"
	echo "|---|---|---|---|---|"
	awk -F '\t' '{ print $1 }' "$work/runs" | uniq | while read -r kind; do
		awk -F '\t' -v k="$kind" '$1 == k' "$work/runs" > "$work/sel"
		sort -n -t "$(printf '\t')" -k4,4 "$work/sel" | awk -F '\t' -v k="$kind" '
			{ t[NR] = $4; if ($6 > 0) off++
			  split($5, l, " "); n = $5 ~ /^[0-9]+ loops, [0-9]+ loop mounts$/ ? l[1] + l[3] : 1e9
			  if (n > worst) { worst = n; wl = $5 } }
			END { printf "| %d | %s | %d / %d / %d | %s | %d |\n", NR, k, t[1],
			      t[int((NR + 1) / 2)], t[NR], worst ? wl : "0 loops, 0 loop mounts", off }'
	done
	echo
	for v in "$work"/v.*; do
		[ -e "$v" ] || continue
		kind=${v#"$work"/v.}
		kind=${kind%.*}
		case $kind in parallel|hog) kind=host ;; smp4-*) kind=vm-${kind#smp4-} ;; esac
		sed "s/^/$kind\t/" "$v"
	done | sort | uniq -c | awk '{ print $2 "\t" $3 "\t" $4 "\t" $1 }' > "$work/counts"
	awk -F '\t' '{ n[$1 "\t" $2]++; s[$1 "\t" $2] = s[$1 "\t" $2] " " $3 " x" $4 }
		END { for (k in n) if (n[k] > 1) print k "\t" s[k] }' "$work/counts" |
		sort > "$work/flaky"
	if [ -s "$work/flaky" ]; then
		echo "Verdicts that changed (kind, test, verdicts and how often):"
		echo
		sed 's/\t/: /; s/\t/:/; s/^/- /' "$work/flaky"
	else
		echo "No verdict changed: every test gave the same verdict in every run of its kind."
	fi
}

report() {
	summarize | tee "$work/report.md"
	[ -z "$report" ] || cp "$work/report.md" "$report"
}

column=$(uname -r | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
loops > "$work/before.loops"
loop_mounts > "$work/before.mounts"
: > "$work/runs"

host_run() {
	local kind=$1 n=$2 start

	start=$(date +%s)
	child "$work/build/run-suite.sh" > "$work/$kind.$n.tap" 2>&1 || true
	echo $(( $(date +%s) - start )) > "$work/$kind.$n.secs"
}

# Wait up to 10 s for a killed test's namespace to go.
settled() {
	for _ in $(seq 50); do
		[ "$(leftovers)" = "0 loops, 0 loop mounts" ] && break
		sleep 0.2
	done
	leftovers
}

for n in $(seq "$host_runs"); do
	host_run host "$n"
	record host "$n" "$column" "$(cat "$work/host.$n.secs")" "$(settled)" "$work/host.$n.tap"
done

if [ "$parallel" = 1 ]; then
	host_run parallel 1 &
	a=$!
	host_run parallel 2 &
	b=$!
	wait "$a" "$b"
	left=$(settled)
	for n in 1 2; do
		record parallel "$n" "$column" "$(cat "$work/parallel.$n.secs")" "$left" "$work/parallel.$n.tap"
	done
fi

if [ "$hog" = 1 ]; then
	for _ in $(seq "$(nproc)"); do
		(while :; do :; done) &
		hog_pids+=($!)
	done
	host_run hog 1
	kill "${hog_pids[@]}" 2> /dev/null || true
	wait "${hog_pids[@]}" 2> /dev/null || true
	hog_pids=()
	record hog 1 "$column" "$(cat "$work/hog.1.secs")" "$(settled)" "$work/hog.1.tap"
fi

vm_run() {
	local kind=$1 n=$2 s=$3 cpus=$4 start rc left tap=$work/$1.$2.tap

	start=$(date +%s)
	rc=0
	child "$top/vm/run-vm.sh" --kernel "$kernel" --modules "$modules" --mem "$mem" \
		--smp "$cpus" --build "$work/build" --runner "$work/guest-runner.sh" \
		> "$tap" 2> "$work/$kind.$n.err" || rc=$?
	[ "$rc" -le 1 ] || die "QEMU run $n on Debian $s: $(tail -n 1 "$work/$kind.$n.err")"
	left=$(sed -n 's/^# leftovers: //p' "$tap")
	record "$kind" "$n" "debian-$s" $(( $(date +%s) - start )) "${left:-not counted}" "$tap"
}

last=
for s in $kernels; do
	[ "$vm_runs" -gt 0 ] || [ "$smp" = 1 ] || break
	child "$top/vm/debian-kernel.sh" "$s" > "$work/kernel" 2> "$work/kernel.err" ||
		die "Debian $s kernel: $(tail -n 1 "$work/kernel.err")"
	kernel=$(sed -n 's/^KERNEL=//p' "$work/kernel")
	modules=$(sed -n 's/^MODULES=//p' "$work/kernel")
	for n in $(seq "$vm_runs"); do
		vm_run "vm-$s" "$n" "$s" 1
	done
	last=$s
done
if [ "$smp" = 1 ] && [ -n "$last" ]; then
	vm_run "smp4-$last" 1 "$last" 4
fi

report
[ ! -s "$work/flaky" ] && ! awk -F '\t' '$6 > 0 || $5 != "0 loops, 0 loop mounts" { bad = 1 } END { exit !bad }' "$work/runs"
