#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The project's own tests. Needs root. Ends with "N passed, N failed".
#
#   scripts/check.sh           (make check) what a contributor runs after
#                              an edit, one to three minutes with warm caches:
#                              make clean (let no QEMU run use build/
#                              meanwhile), the build (gcc and clang,
#                              -Werror; gcc for arm64 and ppc64le, static),
#                              checkpatch --strict, the series plan's
#                              verdicts, the fio job files of
#                              make bench (fio --parse-only), the suite on
#                              the running kernel against the column its
#                              series names in verdicts/expected.tsv (see
#                              scripts/check-verdicts.sh), no loop device,
#                              mount or changed read_ahead_kb of a free
#                              loop device left after that run, no loop
#                              device or mount after a test killed at
#                              0.3, 1 and 2 s, every test
#                              skipping as a normal user, and bad input (an
#                              unknown option), and the private apt state
#                              on a mirror in mid-sync (an index that
#                              cannot be fetched)
#   scripts/check.sh --full    (make check-full, what .ci/run runs) adds:
#                              the in-tree install and run
#                              (scripts/intree-test.sh) and the patch
#                              series (scripts/make-series.sh); the
#                              validation kernel's patches (they apply to
#                              linux-source-7.3) and configs (x86,
#                              arm64-64k and x86-debug have every needed
#                              option); the
#                              suite in QEMU on Debian's 6.12, 6.18 and 7.3
#                              kernels, its arm64 7.3 with 16 KiB pages and
#                              ppc64el 7.2 with 64 KiB pages, each against
#                              its debian-* column, two at a time, and on
#                              7.3 in a 512 MiB guest (against
#                              debian-7.3); the kill matrix in QEMU
#                              (validation/matrix.sh, x86 and arm64 with
#                              64 KiB pages; a test whose binary, kernel
#                              and guest are those of a kept run takes
#                              its TAP: vm/run-kernels.sh --reuse);
#                              scripts/fresh-check.sh
#
# In --full, RA_CHECK_INTREE=0 leaves out the in-tree run and the series,
# RA_CHECK_DEBIAN=0 the Debian kernels and the 512 MiB guest,
# RA_CHECK_MATRIX=0 the kill matrix and RA_CHECK_FRESH=0 fresh-check.
set -u

full=0
case ${1:-} in
--full) full=1 ;;
"") ;;
*) sed -n '6,/^# In --full/{/^# In --full/d; s/^# \{0,1\}//p; }' "$0" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
work=$(mktemp -d /var/tmp/ra-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

pass() { echo "PASS: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }

# Loop devices backed by a test's image (lib/ra_fs.c: "image" on a
# private tmpfs over /tmp, unlinked once attached), their mounts, and
# free loop devices whose read_ahead_kb is not the default 128 (a free
# device keeps the value it was last set to): what the suite can leave
# behind. Other jobs' attached loop devices do not count.
leftovers() {
	losetup -l -n -O NAME,BACK-FILE |
		awk 'NR == FNR { if ($2 ~ /^\/tmp\/[a-z0-9]+-[0-9]+\.img/) { dev[$1]; n++ } next }
		     $1 in dev { m++ }
		     END { printf "%d loops, %d loop mounts", n, m }' - /proc/mounts
	used=$(losetup -l -n -O NAME | sed 's|/dev/||')
	off=
	for q in /sys/block/loop*/queue/read_ahead_kb; do
		[ -e "$q" ] || continue
		d=${q#/sys/block/}
		d=${d%%/*}
		echo "$used" | grep -qx "$d" && continue
		kb=$(cat "$q")
		[ "$kb" = 128 ] || off="$off $d=$kb"
	done
	echo ", free loops off read_ahead_kb 128:${off:- none}"
}

# Wait up to 10 s for the leftovers to drop back to $1: a killed test's
# mount namespace is released asynchronously. With $2, loops and mounts
# only.
no_leftovers() {
	for _ in $(seq 50); do
		now=$(leftovers)
		[ -z "${2:-}" ] || now=${now%%, free*}
		[ "$now" = "$1" ] && return 0
		sleep 0.2
	done
	return 1
}

column=$(uname -r | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')

# Whether every test of TAP file $1 skips (scripts/tap-figures.awk), each
# for a reason that starts with $2; prints the first reason.
all_skip() {
	awk -f scripts/tap-figures.awk "$1" | awk -F '|' -v why="$2" '
		NR == 1 { print $5 }
		$2 != "skip" || index($5, why) != 1 { bad = 1 }
		END { exit bad || !NR }'
}

# A warning in build log $1 (one of the private apt state's about an
# index the mirror could not serve is not the build's).
build_warnings() {
	grep -v '^debian-apt\.sh: warning: ' "$1" | grep -qi warning
}

if make -s clean && make -s all > "$work/gcc.log" 2>&1 &&
   ! build_warnings "$work/gcc.log"; then
	pass "build with gcc -Wall -Wextra -Werror"
else
	fail "build with gcc"; tail -20 "$work/gcc.log"
fi

if command -v clang > /dev/null &&
   make -s OUTPUT="$work/clang" CC=clang all > "$work/clang.log" 2>&1; then
	pass "build with clang -Wall -Wextra -Werror"
else
	fail "build with clang"; tail -20 "$work/clang.log"
fi

# Cross builds, as vm/run-vm.sh boots them: static, for another
# architecture's guest.
for arch in arm64 powerpc; do
	if make -s ARCH=$arch clean && make -s ARCH=$arch all > "$work/$arch.log" 2>&1 &&
	   ! build_warnings "$work/$arch.log"; then
		pass "build for $arch (cross, static, -Werror)"
	else
		fail "build for $arch"; tail -20 "$work/$arch.log"
	fi
done

if make -s checkpatch > "$work/checkpatch.log" 2>&1; then
	pass "checkpatch.pl --strict"
else
	fail "checkpatch.pl --strict"; grep -E 'ERROR|WARNING|CHECK' "$work/checkpatch.log"
fi

# The series plan (scripts/series_plan.py): every test has a series, and
# each series' verdicts are what it is planned by.
if scripts/series_plan.py verdicts > "$work/plan.log" 2>&1 &&
   ! scripts/series_plan.py plan | grep '^problem ' >> "$work/plan.log"; then
	pass "series plan: $(scripts/series_plan.py plan | grep -c '^series ') series, verdicts as planned"
else
	fail "series plan"; cat "$work/plan.log"
fi

# The fio job files of make bench parse (the bench itself is no test).
if make -s bench-parse > "$work/bench.log" 2>&1; then
	pass "bench job files parse (fio --parse-only)"
else
	fail "bench job files parse"; tail -5 "$work/bench.log"
fi

# The private apt state on a mirror in the middle of a sync: an index
# that cannot be fetched, in front of the suite that lists
# linux-source-7.3, costs a warning and still yields the package (its
# .deb linked from the cache: nothing downloaded twice); where that index
# is the only one a request reads, the request fails in one line naming
# it and the mirror's message.
mkdir -p "$work/apt/debs"
ln /var/cache/readahead-selftests/apt/debs/linux-source-7.3_* "$work/apt/debs/" 2> /dev/null
if src=$(RA_APT_SUITES="ra-unreachable trixie-backports" vm/debian-apt.sh \
	 --cache "$work/apt" source 7.3 2> "$work/apt.err") && [ -f "$src" ] &&
   grep -q "warning: the ra-unreachable index" "$work/apt.err"; then
	pass "private apt state: an unreachable suite is a warning, linux-source-7.3 still fetched"
else
	fail "private apt state with an unreachable suite"; tail -3 "$work/apt.err"
fi
rm -f "$work"/apt/linux-source-*.tar.xz
RA_APT_SUITES=ra-unreachable vm/debian-apt.sh --cache "$work/apt" --suite ra-unreachable \
	source 7.3 > /dev/null 2> "$work/apt.err"
rc=$?
if [ $rc = 3 ] && [ "$(grep -c -v -e ': downloading ' -e ': warning: ' "$work/apt.err")" = 1 ] &&
   grep -q "not fetched: ra-unreachable/.*Release" "$work/apt.err"; then
	pass "private apt state: a needed index that cannot be fetched fails in one line"
else
	fail "private apt state with the needed index missing (exit $rc)"; cat "$work/apt.err"
fi
# A failed connection (a warning to apt) leaves no index taken for
# fetched: the next request fetches it.
echo 'Acquire::http::Proxy "http://127.0.0.1:9";' > "$work/apt.conf"
if ! APT_CONFIG=$work/apt.conf vm/debian-apt.sh --cache "$work/apt-net" --suite trixie-backports \
	version linux-source-7.3 > /dev/null 2>&1 &&
   vm/debian-apt.sh --cache "$work/apt-net" --suite trixie-backports version linux-source-7.3 \
	> /dev/null 2> "$work/apt.err"; then
	pass "private apt state: an index not fetched for a failed connection is fetched next time"
else
	fail "private apt state after a failed connection"; tail -3 "$work/apt.err"
fi
rm -rf "$work/apt" "$work/apt-net"

before=$(leftovers)
start=$(date +%s)
make -s run_tests > "$work/suite.tap" 2>&1
secs=$(( $(date +%s) - start ))
if scripts/check-verdicts.sh "$column" "$work/suite.tap"; then
	pass "suite verdicts on $(uname -r) match column $column (${secs} s)"
else
	fail "suite verdicts on $(uname -r) differ from column $column"
fi
if no_leftovers "$before"; then
	pass "no loop device or mount left after a run with failing tests"
else
	fail "left behind after a run: $(leftovers), before: $before"
fi

# Runs killed midway, at a few moments: every process of the test (the
# harness forks twice and the test runs in its own process group) dies;
# the mount namespace goes, the loop device detaches.
for delay in 0.3 1 2; do
	# In a subshell whose stderr goes nowhere: its "Killed" line is noise.
	# The test in a session of its own, killed as a session: a run of
	# the same binary elsewhere is left alone.
	(setsid "$top/build/readahead_sticky_miss" > /dev/null 2>&1; true) 2> /dev/null &
	pid=$!
	sleep "$delay"
	sid=$(pgrep -P "$pid" | head -n 1)
	[ -n "$sid" ] && pkill -KILL -s "$sid"
	wait "$pid" 2> /dev/null
	# A free loop device may keep the read_ahead_kb a killed test set
	# (nothing put it back): each test sets its own.
	if no_leftovers "${before%%, free*}" mounts_only; then
		pass "no loop device or mount left after SIGKILL at ${delay} s"
	else
		fail "left behind after SIGKILL at ${delay} s: $(leftovers), before: $before"
	fi
done

# Not root: every test skips with a reason, none fails (mm's
# prctl_thp_disable needs no privilege).
install -d -m 0755 "$work/bin"
install -m 0755 build/readahead_* "$work/bin/"
chmod 0755 "$work"
for t in "$work"/bin/readahead_*; do
	setpriv --reuid=65534 --regid=65534 --clear-groups "$t" \
		> "$work/nonroot.tap" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && all_skip "$work/nonroot.tap" "needs CAP_SYS_ADMIN" > /dev/null; then
		pass "$(basename "$t") as a normal user: all skip"
	else
		fail "$(basename "$t") as a normal user (exit $rc)"
	fi
done

# Bad input: an unknown option.
if ! build/readahead_descending --bogus > "$work/usage.txt" 2>&1 &&
   grep -q '^Usage:' "$work/usage.txt"; then
	pass "unknown option prints the harness's usage"
else
	fail "unknown option"
fi

# In a 7.3 tree, as its CI runs the tests: fresh linux-source-7.3,
# install-in-tree, kselftest install of mm, run_kselftest.sh -t
# mm:ksft_readahead.sh in QEMU on Debian's 7.3 kernel, verdicts against
# its column. Then the patch series: checkpatch --strict, git am on the
# pristine tree, W=1 build. RA_CHECK_INTREE=0 leaves both out.
if [ "$full" = 1 ] && [ "${RA_CHECK_INTREE:-1}" = 1 ]; then
	start=$(date +%s)
	scripts/intree-test.sh > "$work/intree.log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then
		pass "$(tail -n 1 "$work/intree.log" | sed 's/: pass$//') ($(( $(date +%s) - start )) s)"
	else
		fail "in-tree 7.3 (exit $rc)"; tail -15 "$work/intree.log"
	fi
	start=$(date +%s)
	scripts/make-series.sh --out "$work/series" > "$work/series.log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then
		pass "$(tail -n 1 "$work/series.log" | sed "s|$work/||; s/: pass\$//") ($(( $(date +%s) - start )) s)"
	else
		fail "patch series (exit $rc)"; tail -15 "$work/series.log"
	fi
fi

# The validation kernels: every configuration's patches apply to
# linux-source-7.3 and the configuration has every option the suite needs.
if [ "$full" = 1 ]; then
	if validation/build-kernel.sh --check-patches > "$work/patches.log" 2>&1; then
		pass "validation patches apply to linux-source-7.3: $(tail -n 1 "$work/patches.log" | sed 's/^[^:]*: //')"
	else
		fail "validation patches"; tail -5 "$work/patches.log"
	fi
	for arch in x86 arm64-64k x86-debug x86-kcsan; do
		if validation/build-kernel.sh --arch $arch --check-config > "$work/config.log" 2>&1; then
			pass "validation kernel config ($arch) has every needed option"
		else
			fail "validation kernel config ($arch)"; tail -5 "$work/config.log"
		fi
	done
fi

# Real kernels: the suite in QEMU on Debian's newest 6.12, 6.18 and 7.3
# cloud kernels, and on one 16 KiB-page and one 64 KiB-page kernel
# (fetched once into the cache), run by vm/run-kernels.sh, each against
# its debian-<series> column. RA_CHECK_DEBIAN=0 leaves it out.
if [ "$full" = 1 ] && [ "${RA_CHECK_DEBIAN:-1}" = 1 ]; then
	debian=(debian-6.12 debian-6.18 debian-7.3 debian-7.3-arm64-16k debian-7.2-ppc64el-64k)
	rc=0
	vm/run-kernels.sh --taps "$work/debian" --jobs 2 "${debian[@]}" 2> "$work/debian.log" || rc=$?
	[ $rc = 0 ] || [ $rc = 3 ] || fail "Debian kernels (exit $rc): $(tail -n 1 "$work/debian.log")"
	for col in "${debian[@]}"; do
		tap=$work/debian/$col.tap
		[ -f "$work/debian/$col.secs" ] || continue
		read -r fetch suite < "$work/debian/$col.secs"
		if [ ! -f "$tap" ] && [ "$fetch" = - ]; then
			fail "Debian ${col#debian-} kernel: $(cat "$work/debian/$col.err")"
		elif [ ! -f "$tap" ]; then
			fail "suite on Debian ${col#debian-} in QEMU: $(cat "$work/debian/$col.err")"
		elif scripts/check-verdicts.sh "$col" "$tap" > "$work/$col.check"; then
			pass "suite on Debian $(sed -n '1s/^# guest kernel: //p' "$tap") in QEMU matches column $col ($((fetch + suite)) s)"
		else
			fail "suite on Debian $(sed -n '1s/^# guest kernel: //p' "$tap") in QEMU differs from column $col"
			cat "$work/$col.check"
		fi
	done
fi

# A small machine: the suite in a 512 MiB guest on Debian's 7.3 gives the
# verdicts of the debian-7.3 column (each test skips where MemAvailable is
# below what it needs). RA_CHECK_DEBIAN=0 leaves it out.
if [ "$full" = 1 ] && [ "${RA_CHECK_DEBIAN:-1}" = 1 ]; then
	start=$(date +%s)
	if ! vm/debian-kernel.sh 7.3 > "$work/kernel-small" 2> "$work/kernel-small.err"; then
		fail "Debian 7.3 kernel: $(tail -n 1 "$work/kernel-small.err")"
	else
		kernel=$(sed -n 's/^KERNEL=//p' "$work/kernel-small")
		modules=$(sed -n 's/^MODULES=//p' "$work/kernel-small")
		vm/run-vm.sh --kernel "$kernel" --modules "$modules" --build build \
			--mem 512M > "$work/small.tap" 2> "$work/small.err"
		rc=$?
		if [ $rc -le 1 ] &&
		   scripts/check-verdicts.sh debian-7.3 "$work/small.tap" > "$work/small.check"; then
			pass "suite on Debian ${modules##*/} in a 512 MiB guest matches column debian-7.3 ($(( $(date +%s) - start )) s)"
		elif [ $rc -le 1 ]; then
			fail "suite on Debian ${modules##*/} in a 512 MiB guest differs from column debian-7.3"
			cat "$work/small.check"
		else
			fail "suite on Debian 7.3 in a 512 MiB guest: $(tail -n 1 "$work/small.err")"
		fi
	fi
fi

# The kill matrix: builds (or reuses) linux-source-7.3 pristine and with
# each configuration's patches, and runs the suite on each in QEMU.
# RA_CHECK_MATRIX=0 leaves it out.
if [ "$full" = 1 ] && [ "${RA_CHECK_MATRIX:-1}" = 1 ]; then
	start=$(date +%s)
	if validation/matrix.sh --validation \
		> "$work/matrix.log" 2>&1; then
		pass "kill matrix: $(tail -n 1 "$work/matrix.log" | sed 's/^matrix: //; s/)$//'), $(( $(date +%s) - start )) s)"
	else
		fail "kill matrix"; grep -E 'DIFFERS|no TAP|unknown|error|build' "$work/matrix.log" | head -20
		tail -3 "$work/matrix.log"
	fi
fi

# A minimal Debian root with nothing but make: make deps, make run_tests
# and the kselftest install of mm. RA_CHECK_FRESH=0 leaves it out.
if [ "$full" = 1 ] && [ "${RA_CHECK_FRESH:-1}" = 1 ]; then
	scripts/fresh-check.sh > "$work/fresh.log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then
		pass "$(tail -n 1 "$work/fresh.log")"
	else
		fail "$(grep -m1 '^FAIL: ' "$work/fresh.log" | sed 's/^FAIL: //' | grep . ||
			echo "fresh root (exit $rc): $(tail -n 1 "$work/fresh.log")")"
	fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
