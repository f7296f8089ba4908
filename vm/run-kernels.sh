#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the suite on a list of kernels and keep each one's TAP: the driver
# of validation/matrix.sh (the kill matrix) and vm/history.sh (Debian's
# kernels), which differ only in their lists.
#
#   vm/run-kernels.sh --taps DIR [--full] [--jobs N] [--timeout SECONDS]
#                     [--build DIR] [--reuse DIR] COLUMN...
#
# A COLUMN names a kernel as a column of verdicts/expected.tsv does:
#   the running kernel's series (6.18)  this machine (make run_tests)
#   debian-<series>                     Debian's newest kernel of the
#                                       series (vm/debian-kernel.sh
#                                       <series>: debian-7.3,
#                                       debian-7.2-arm64-16k), in QEMU
#   v7.3, v7.3+<change>                 linux-source-7.3 as
#                                       validation/build-kernel.sh builds
#                                       it for that line of
#                                       validation/configurations, in QEMU
#   v7.3-arm64-64k[+<change>]           the same for arm64 with 64 KiB
#                                       pages (build-kernel.sh --arch
#                                       arm64-64k)
# Every column is checked, and the validation kernels built in one go,
# before the first runs.
#
#   --taps DIR    where each column's files go (below)
#   --full        READAHEAD_FULL_RUN=1: no walk stops at its bound
#   --jobs N      columns run at the same time (default 1)
#   --timeout S   seconds a guest may run (default 3600)
#   --build DIR   the built suite (default build/); a kernel of another
#                 architecture runs DIR-arm64 or DIR-powerpc
#   --reuse DIR   a validation kernel's column (v7.3...) runs only the
#                 tests whose inputs differ from those of an earlier run
#                 kept in DIR, and takes the other tests' TAP from DIR;
#                 each test that runs to its end is kept there (the last
#                 run of each test per column). The inputs of a test: its
#                 binary, the kernel image, the runner's files of the
#                 build (run-suite.sh, settings, kselftest/), vm/run-vm.sh
#                 and vm/guest-root.sh, the versions of QEMU and of the
#                 tools the guest takes from this machine, another
#                 architecture's guest root, --full and --timeout. The
#                 build does not depend on where the checkout is (the
#                 Makefile maps its paths away). Debian's kernels and this
#                 machine always run.
#
# In DIR, per column: <column>.tap when the suite ran to its end, and a
# column whose <column>.tap is there already is not run again (a list can
# be run a few columns at a time); else <column>.tap.failed, what the run
# printed, and <column>.err, why it did not end (one line); and always
# <column>.secs, the seconds spent fetching the kernel and running the
# suite ("-" where not reached), and <column>.log, the run's stderr;
# <column>.reused, with --reuse, "<reused> <tests>": how many of the
# column's tests took their TAP from DIR. A line per column on stderr.
#
# Exit status: 0 when every column ran to its end (whatever its
# verdicts); 2 on usage errors; 3 when a kernel could not be built,
# fetched or booted (the other columns run all the same).
set -euo pipefail

prog=${0##*/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
taps=
build=$top/build
full=()
full_run=
jobs=1
timeout=3600
reuse=

usage() {
	sed -n '8,9s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

# Each option with a value sets the variable of its name.
while [ $# -gt 0 ]; do
	case $1 in
	--full) full=(--env READAHEAD_FULL_RUN=1); full_run=1; shift; continue ;;
	--taps | --jobs | --timeout | --build | --reuse) [ $# -ge 2 ] || usage ;;
	-*) usage ;;
	*) break ;;
	esac
	declare "${1#--}=$2"
	shift 2
done
if [ -z "$taps" ] || [ $# -eq 0 ]; then usage; fi
[[ $jobs =~ ^[1-9][0-9]*$ ]] || usage
mkdir -p "$taps"
columns=("$@")

host=$(uname -r | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
mapfile -t configs < <("$top/validation/build-kernel.sh" --list)

# The build of the architecture a column runs (vm/run-vm.sh --build).
build_of() {
	case $1 in
	*-arm64*) echo "$build-arm64" ;;
	*-ppc64el*) echo "$build-powerpc" ;;
	*) echo "$build" ;;
	esac
}

# Every column to run known, and its build there, before anything runs.
for col in "${columns[@]}"; do
	[ ! -f "$taps/$col.tap" ] || continue
	case " $host ${configs[*]} ${configs[*]/#v7.3/v7.3-arm64-64k} " in
	*" $col "*) ;;
	*)
		[[ $col =~ ^debian-[0-9]+\.[0-9]+(-[a-z0-9]+(-[0-9]+k)?)?$ ]] || {
			echo "$prog: unknown column $col (not this machine's $host, debian-<series>, or in validation/configurations)" >&2
			exit 2
		}
		;;
	esac
	[ -d "$(build_of "$col")" ] ||
		{ echo "$prog: no build directory $(build_of "$col") (make all, with ARCH=arm64 or powerpc for another architecture)" >&2; exit 2; }
done

# The validation kernels of the columns not kept, built (or reused) in
# one go per architecture.
declare -A image=()
wanted=()
wanted_arm64=()
for col in "${columns[@]}"; do
	[ ! -f "$taps/$col.tap" ] || continue
	case " ${configs[*]} " in *" $col "*) wanted+=("$col") ;; esac
	case " ${configs[*]/#v7.3/v7.3-arm64-64k} " in
	*" $col "*) wanted_arm64+=("${col/#v7.3-arm64-64k/v7.3}") ;;
	esac
done
images=$(mktemp "${TMPDIR:-/tmp}/run-kernels.XXXXXX")
trap 'rm -f "$images"' EXIT
built=0
if [ ${#wanted[@]} -gt 0 ]; then
	"$top/validation/build-kernel.sh" "${wanted[@]}" > "$images" || built=$?
	while IFS=$'\t' read -r col path; do
		image[$col]=$path
	done < "$images"
fi
if [ ${#wanted_arm64[@]} -gt 0 ]; then
	"$top/validation/build-kernel.sh" --arch arm64-64k "${wanted_arm64[@]}" > "$images" || built=$?
	while IFS=$'\t' read -r col path; do
		image[${col/#v7.3/v7.3-arm64-64k}]=$path
	done < "$images"
fi

# The inputs of a run that do not depend on the column or the test
# (--reuse).
inputs_common() {
	dpkg-query -W busybox busybox-static e2fsprogs xfsprogs btrfs-progs \
		f2fs-tools mount dash coreutils bash qemu-system-x86 qemu-system-arm \
		qemu-system-ppc 2> /dev/null || true
	sha256sum < "$here/run-vm.sh"
	sha256sum < "$here/guest-root.sh"
	echo "full=$full_run timeout=$timeout"
}

# The inputs of a validation kernel's column that are not a test: the
# common ones, its image, its build's runner files (not the patch series
# make-series.sh leaves there) and, for another architecture, its guest
# root's file list.
column_inputs() {
	local col=$1 root

	echo "$common"
	sha256sum < "${image[$col]}"
	(cd "$(build_of "$col")" && find . -type f ! -name '*.o' ! -name '*.c' \
		! -path './readahead_*' ! -path './prctl_thp_disable' \
		! -path './series/*' -print0 |
		sort -z | xargs -0 sha256sum)
	case $col in
	*-arm64*)
		root=$("$here/guest-root.sh" arm64) &&
			(cd "$root" && find . -printf '%P %s %l\n' | sort)
		;;
	esac
}

# The tests of a build: its readahead_* executables, and mm's tests with
# this project's cases (run-suite.sh).
tests_of() {
	(cd "$1" && find . -maxdepth 1 -type f -perm -u+x \
		\( -name 'readahead_*' -o -name prctl_thp_disable \) \
		-printf '%f\n' | LC_ALL=C sort)
}

# Split the TAP $1 of a run into DIR $2: head (the lines before the first
# test) and <test>.tap, each test's lines from its runner's first line to
# its "ok"/"not ok" line.
split_tap() {
	awk -v dir="$2" '
		/^# overriding timeout/ || /^# selftests: / {
			if (!intest) { intest = 1; buf = "" } }
		!intest { print > (dir "/head"); next }
		{ buf = buf $0 "\n" }
		/^(not )?ok [0-9]+ selftests: / {
			name = $0; sub(/.*selftests: [^ ]*: /, "", name)
			sub(/ .*/, "", name)
			printf "%s", buf > (dir "/" name ".tap"); close(dir "/" name ".tap")
			intest = 0 }' "$1"
	[ -f "$2/head" ] || : > "$2/head"
}

# A column's TAP from the kept TAP of each of its tests (files $3...),
# numbered in order, after the head $2; into $1.
join_tap() {
	local out=$1 head=$2

	shift 2
	{
		awk -v n=$# '/^1\.\.[0-9]+$/ { print "1.." n; next } { print }' "$head"
		awk 'FNR == 1 { i++ }
		     /^(not )?ok [0-9]+ selftests: / { sub(/ok [0-9]+ /, "ok " i " ") }
		     { print }' "$@"
	} > "$out"
}

# Per validation kernel's column, with --reuse: $taps/<col>.keys, a line
# "<test> <key>" per test; the column is kept whole when every test's
# TAP is in DIR, else $taps/<col>.only lists the tests to run.
if [ -n "$reuse" ]; then
	common=$(inputs_common)
	for col in "${columns[@]}"; do
		[ ! -f "$taps/$col.tap" ] && [ -n "${image[$col]+x}" ] || continue
		rm -f "$taps/$col.reused" "$taps/$col.keys" "$taps/$col.only"
		mkdir -p "$reuse/$col"
		base=$(column_inputs "$col" | sha256sum | cut -c1-32)
		bdir=$(build_of "$col")
		only=()
		kept=()
		while read -r t; do
			key=$( (echo "$base"; sha256sum < "$bdir/$t") | sha256sum | cut -c1-32)
			echo "$t $key" >> "$taps/$col.keys"
			if [ -f "$reuse/$col/$t.$key.tap" ]; then
				kept+=("$reuse/$col/$t.$key.tap")
			else
				only+=("$t")
			fi
		done < <(tests_of "$bdir")
		echo "$((${#kept[@]})) $(wc -l < "$taps/$col.keys")" > "$taps/$col.reused"
		if [ ${#only[@]} = 0 ] && [ -f "$reuse/$col/head" ]; then
			join_tap "$taps/$col.tap" "$reuse/$col/head" "${kept[@]}"
			echo "- 0" > "$taps/$col.secs"
		else
			echo "${only[*]}" > "$taps/$col.only"
		fi
	done
fi

# With --reuse, after a run of column $1 that ended: keep each test's TAP
# in DIR, and make the column's TAP of every test's, kept or run.
keep_and_join() {
	local col=$1 t key parts=() split

	split=$(mktemp -d "${TMPDIR:-/tmp}/run-kernels.XXXXXX")
	split_tap "$taps/$col.tap" "$split"
	cp "$split/head" "$reuse/$col/head"
	while read -r t key; do
		if [ -f "$split/$t.tap" ]; then
			rm -f "$reuse/$col/$t".*.tap
			cp "$split/$t.tap" "$reuse/$col/$t.$key.tap"
		fi
		parts+=("$reuse/$col/$t.$key.tap")
	done < "$taps/$col.keys"
	rm -rf "$split"
	for t in "${parts[@]}"; do
		[ -f "$t" ] || return 0
	done
	join_tap "$taps/$col.tap" "$reuse/$col/head" "${parts[@]}"
}

# One column: fetch (Debian's), run, keep; its stderr in $taps/<col>.log.
run_column() {
	local col=$1 t0 fetch=- suite=- rc=0 patches kernel err
	local -a kargs=()

	rm -f "$taps/$col.tap.failed" "$taps/$col.err"
	[ -f "$taps/$col.only" ] || rm -f "$taps/$col.reused"
	: > "$taps/$col.log"
	t0=$EPOCHSECONDS
	if [[ $col == v7.3* ]] && [ -z "${image[$col]+x}" ]; then
		rc=3
		err="not built: validation/build-kernel.sh exited with status $built"
	elif [ -n "${image[$col]+x}" ]; then
		patches=$(paste -sd ' ' "$(dirname "${image[$col]}")/patches")
		echo "== $col: linux-source-7.3 ${patches:-(pristine)}" >&2
		kargs=(--kernel "${image[$col]}")
	elif [[ $col == debian-* ]]; then
		if kernel=$("$here/debian-kernel.sh" "${col#debian-}" 2> "$taps/$col.log"); then
			fetch=$((EPOCHSECONDS - t0))
			kargs=(--kernel "$(sed -n 's/^KERNEL=//p' <<< "$kernel")"
			       --modules "$(sed -n 's/^MODULES=//p' <<< "$kernel")")
			echo "== $col: ${kargs[3]##*/}, fetched in $fetch s" >&2
		else
			rc=3
			err=$(tail -n 1 "$taps/$col.log")
		fi
	else
		echo "== $col: this machine" >&2
	fi
	t0=$EPOCHSECONDS
	if [ "$rc" != 0 ]; then
		: > "$taps/$col.tap.part"
	elif [ ${#kargs[@]} -gt 0 ]; then
		[ ! -f "$taps/$col.only" ] ||
			kargs+=(--env "RA_ONLY=$(cat "$taps/$col.only")")
		"$here/run-vm.sh" "${kargs[@]}" --build "$(build_of "$col")" \
			--timeout "$timeout" ${full[@]+"${full[@]}"} \
			> "$taps/$col.tap.part" 2>> "$taps/$col.log" || rc=$?
		suite=$((EPOCHSECONDS - t0))
		if [ "$rc" -ge 2 ]; then
			err=$(grep -v 'suite exited with status' "$taps/$col.log" | tail -n 1 || true)
			[ -n "$err" ] || err="run-vm.sh exited with status $rc"
		fi
	else
		# make exits 2 when a test fails: the TAP tells.
		READAHEAD_FULL_RUN=$full_run make -s -C "$top" OUTPUT="$build" run_tests \
			> "$taps/$col.tap.part" 2>> "$taps/$col.log" || true
		suite=$((EPOCHSECONDS - t0))
	fi
	echo "$fetch $suite" > "$taps/$col.secs"
	if [ "$rc" -le 1 ]; then
		mv "$taps/$col.tap.part" "$taps/$col.tap"
		if [ -n "$reuse" ] && [ -f "$taps/$col.only" ]; then
			keep_and_join "$col"
			rm -f "$taps/$col.only"
		fi
	else
		mv "$taps/$col.tap.part" "$taps/$col.tap.failed"
		echo "$err" > "$taps/$col.err"
		echo "$prog: $col: $err" >&2
	fi
}

ran=()
for col in "${columns[@]}"; do
	if [ -f "$taps/$col.tap" ] && [ -f "$taps/$col.reused" ]; then
		echo "== $col: inputs of every test unchanged, TAP from $reuse" >&2
		continue
	elif [ -f "$taps/$col.tap" ]; then
		echo "== $col: kept in $taps" >&2
		continue
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n || true
	done
	ran+=("$col")
	run_column "$col" &
done
wait
for col in ${ran[@]+"${ran[@]}"}; do
	[ ! -f "$taps/$col.err" ] || exit 3
done
