#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the readahead validation kernels: Debian's linux-source-7.3 as a
# minimal built-in-only kernel (tinyconfig + kernel.config), once
# pristine and once per configuration of validation/configurations with
# that configuration's patches applied. x86_64 by default; arm64 with
# 64 KiB pages (cross-compiled, kernel-arm64-64k.config merged last) with
# --arch arm64-64k; x86_64 with the kernel's debug checkers (lockdep,
# DEBUG_VM, KASAN: kernel-debug.config merged last) with --arch x86-debug,
# and with KCSAN (kernel-kcsan.config) with --arch x86-kcsan.
#
# Usage: build-kernel.sh [--arch ARCH] [COLUMN...]
#                                         build (or reuse) each named
#                                         configuration, all by default;
#                                         prints "COLUMN<tab>IMAGE" lines
#        build-kernel.sh [--arch ARCH] --list
#                                         the configuration names
#        build-kernel.sh [--arch ARCH] --check-patches
#                                         every configuration's patches
#                                         apply to pristine 7.3, no fuzz
#        build-kernel.sh [--arch ARCH] --check-config
#                                         every option of the fragments is
#                                         in the configured .config
#        build-kernel.sh --help
#
# ARCH is x86 (the default: ARCH=x86_64, bzImage), arm64-64k
# (ARCH=arm64, CONFIG_ARM64_64K_PAGES, Image, for qemu-system-aarch64
# -M virt), x86-debug (x86's bzImage with kernel-debug.config, for
# validation/debug-check.sh) or x86-kcsan (the same with
# kernel-kcsan.config). Each ARCH has its own cache directory.
#
# One source tree, one object tree per ARCH. A configuration is built by
# applying its patches to the tree, an incremental make, saving the image
# under a key made of the config fragments and the patches' diffs, and
# reversing the patches. A configuration whose key already has an image
# is not built.
#
# Environment:
#   RA_VALIDATION_CACHE  cache directory (default
#                        /var/cache/readahead-selftests/validation-7.3;
#                        another ARCH appends -<ARCH>)
#   RA_KERNEL_JOBS       make -j value (default 3), run under nice -n 10
#   CROSS_COMPILE        arm64-64k toolchain prefix (default aarch64-linux-gnu-)
#
# Cache layout:
#   src/       linux-source-7.3, pristine while no build runs
#   obj/       the O= build directory (.config, objects)
#   applied/   copies of the patches applied to src/ right now, so that
#              an interrupted build can be reversed by the next run
#   images/<key>/bzImage (x86) or Image (arm64-64k), images/<key>/patches
#   build.log  the last make's output
#
# Exit status: 0; 1 when a patch does not apply or a build fails; 2 on
# usage errors; 3 when the source cannot be fetched or extracted (one
# line on stderr naming the step).

set -euo pipefail

prog=${0##*/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
patchdir=$here/patches
configs=$here/configurations
fragment=$here/kernel.config
series=7.3
cache=${RA_VALIDATION_CACHE:-/var/cache/readahead-selftests/validation-$series}
jobs=${RA_KERNEL_JOBS:-3}

arch=x86
if [ "${1:-}" = --arch ] && [ $# -ge 2 ]; then
	arch=$2
	shift 2
fi
case $arch in
x86)
	make_arch=(ARCH=x86_64)
	fragments=("$fragment")
	image=bzImage
	image_src=arch/x86/boot/bzImage
	;;
arm64-64k)
	cross=${CROSS_COMPILE:-aarch64-linux-gnu-}
	make_arch=(ARCH=arm64 CROSS_COMPILE="$cross")
	fragments=("$fragment" "$here/kernel-arm64-64k.config")
	image=Image
	image_src=arch/arm64/boot/Image
	cache=$cache-$arch
	;;
x86-debug | x86-kcsan)
	make_arch=(ARCH=x86_64)
	fragments=("$fragment" "$here/kernel-${arch#x86-}.config")
	image=bzImage
	image_src=arch/x86/boot/bzImage
	cache=$cache-$arch
	;;
*)
	echo "$prog: unknown --arch '$arch' (x86, arm64-64k, x86-debug, x86-kcsan)" >&2
	exit 2
	;;
esac
src=$cache/src
obj=$cache/obj

log() { echo "$prog: $*" >&2; }
die() { log "$*"; exit 1; }
infra() { log "$*"; exit 3; }

usage() {
	sed -n '4,/^$/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

# "name<tab>patch patch ..." for every configuration line.
read_configs() {
	[ -f "$configs" ] || die "no $configs"
	sed -e 's/#.*//' "$configs" | awk -F: -v f="$configs" '
		NF == 0 || $0 ~ /^[[:space:]]*$/ { next }
		NF != 2 || $1 !~ /^[A-Za-z0-9._+-]+$/ {
			printf "bad line in %s: %s\n", f, $0 > "/dev/stderr"; exit 1 }
		{ gsub(/^[[:space:]]+|[[:space:]]+$/, "", $2); gsub(/[[:space:]]+/, " ", $2)
		  print $1 "\t" $2 }'
}

# Patches of one configuration, as paths; fails on unknown names.
config_patches() {
	local line p

	line=$(read_configs | awk -F '\t' -v c="$1" '$1 == c { print $2; found = 1 }
		END { exit !found }') || die "no configuration '$1' in $configs"
	for p in $line; do
		[ -f "$patchdir/$p" ] || die "configuration $1 lists missing patch $p"
		echo "$patchdir/$p"
	done
}

# Fails unless every named configuration exists and every patch that any
# configuration lists is there (run in the main shell: config_patches
# runs in subshells, where die() cannot stop the script).
check_names() {
	local known col p

	known=$(read_configs) || exit 1
	for col; do
		cut -f1 <<< "$known" | grep -qxF -- "$col" ||
			die "no configuration '$col' in $configs"
	done
	# shellcheck disable=SC2013 # patch names are words of a line
	for p in $(cut -f2 <<< "$known"); do
		[ -f "$patchdir/$p" ] || die "$configs lists missing patch $p"
	done
}

# Image key: the config fragments and the patches' diffs (not their
# changelogs), in order.
image_key() {
	local p

	{
		echo "linux-source-$series"
		cat "${fragments[@]}"
		for p; do
			echo "== ${p##*/}"
			awk '/^(diff |--- [^ ]|Index: )/ { d = 1 } d' "$p"
		done
	} | sha256sum | cut -c1-16
}

# Files (relative to the tree top) that -p1 patches touch.
patch_files() {
	awk '/^--- / { old = $2; next }
	     /^\+\+\+ / { f = ($2 == "/dev/null") ? old : $2
			 sub(/^[^\/]*\//, "", f); print f }' "$@" | sort -u
}

extract_tree() {
	local tarball tmp

	[ -f "$src/.extracted" ] && return 0
	tarball=$("$top/vm/debian-apt.sh" source "$series") ||
		infra "cannot fetch linux-source-$series (vm/debian-apt.sh source $series)"
	log "extracting $tarball"
	rm -rf "$src" "$cache"/src.tmp.* "$cache/applied" "$obj"
	tmp=$(mktemp -d "$cache/src.tmp.XXXXXX")
	tar -C "$tmp" --strip-components=1 -xf "$tarball" ||
		{ rm -rf "$tmp"; infra "cannot extract $tarball"; }
	touch "$tmp/.extracted"
	mv "$tmp" "$src"
}

# Reverse what an earlier (interrupted) run left applied; a tree that
# cannot be put back is extracted again.
restore_tree() {
	local p

	[ -f "$cache/applied/series" ] || return 0
	while read -r p; do
		if ! patch -d "$src" -p1 -R -F0 --batch -s --no-backup-if-mismatch \
			-r - < "$cache/applied/$p" >&2; then
			log "cannot reverse $p: extracting the tree again"
			rm -f "$src/.extracted"
			extract_tree
			return 0
		fi
	done < <(tac "$cache/applied/series")
	rm -rf "$cache/applied"
}

apply_patches() {
	local p n=0

	rm -rf "$cache/applied"
	mkdir -p "$cache/applied"
	for p; do
		cp "$p" "$cache/applied/"
		if ! patch -d "$src" -p1 -F0 --batch -s --no-backup-if-mismatch \
			-r - < "$p" >&2; then
			head -n "$n" "$cache/applied/series" > "$cache/applied/series.new" || true
			mv "$cache/applied/series.new" "$cache/applied/series"
			restore_tree
			die "${p##*/} does not apply to linux-source-$series"
		fi
		echo "${p##*/}" >> "$cache/applied/series"
		n=$((n + 1))
	done
}

configure() {
	local want

	want=$( (cat "${fragments[@]}"; md5sum < "$src/Makefile") | md5sum)
	if [ -f "$obj/.config" ] && [ "$(cat "$obj/.fragment-sum" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	log "configuring: tinyconfig + ${fragments[*]##*/}"
	mkdir -p "$obj"
	make -s -C "$src" O="$obj" "${make_arch[@]}" tinyconfig >&2 ||
		infra "make tinyconfig failed in $src"
	(cd "$obj" && "$src/scripts/kconfig/merge_config.sh" -m .config "${fragments[@]}" \
		> merge_config.log 2>&1) || infra "merge_config.sh failed (see $obj/merge_config.log)"
	make -s -C "$src" O="$obj" "${make_arch[@]}" olddefconfig >&2 ||
		infra "make olddefconfig failed in $obj"
	echo "$want" > "$obj/.fragment-sum"
}

# Every "CONFIG_X=v" and "# CONFIG_X is not set" of the fragments must be
# in .config verbatim, the last fragment's line for a symbol winning; a
# later fragment's "is not set" also holds for a symbol absent from
# .config (one the arch lacks).
check_config() {
	local f line sym i=0
	local -A want from
	local -a order missing=()

	for f in "${fragments[@]}"; do
		while IFS= read -r line; do
			case $line in
			CONFIG_*=*) sym=${line%%=*} ;;
			"# CONFIG_"*" is not set")
				sym=${line#\# }
				sym=${sym%% *}
				;;
			*) continue ;;
			esac
			[ -n "${want[$sym]+set}" ] || order+=("$sym")
			want[$sym]=$line
			from[$sym]=$i
		done < "$f"
		i=$((i + 1))
	done
	for sym in "${order[@]}"; do
		line=${want[$sym]}
		grep -qxF -- "$line" "$obj/.config" && continue
		[ "${from[$sym]}" -gt 0 ] && [[ $line == "# "* ]] &&
			! grep -q "^$sym=" "$obj/.config" && continue
		missing+=("$line")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "options of ${fragments[*]##*/} missing from $obj/.config:"
		printf '  %s\n' "${missing[@]}" >&2
		return 1
	fi
	log "all ${#order[@]} options of ${fragments[*]##*/} are in .config"
}

# Build one configuration unless its image exists; prints its line.
build_one() {
	local col=$1 key img start rc=0
	local -a patches

	mapfile -t patches < <(config_patches "$col")
	key=$(image_key ${patches[@]+"${patches[@]}"})
	img=$cache/images/$key
	if [ ! -f "$img/$image" ]; then
		extract_tree
		restore_tree
		configure
		apply_patches ${patches[@]+"${patches[@]}"}
		log "$col: make -j$jobs $image (${#patches[@]} patches)"
		start=$(date +%s)
		nice -n 10 make -C "$src" O="$obj" "${make_arch[@]}" -j"$jobs" "$image" \
			> "$cache/build.log" 2>&1 || rc=$?
		if [ "$rc" = 0 ]; then
			mkdir -p "$cache/images"
			rm -rf "$img.tmp"
			mkdir "$img.tmp"
			cp "$obj/$image_src" "$img.tmp/"
			printf '%s\n' ${patches[@]+"${patches[@]##*/}"} > "$img.tmp/patches"
			mv "$img.tmp" "$img"
		fi
		restore_tree
		if [ "$rc" != 0 ]; then
			grep -E 'error|Error' "$cache/build.log" | head -n 5 >&2 || true
			die "$col: kernel build failed (log: $cache/build.log)"
		fi
		log "$col: built in $(($(date +%s) - start)) s"
	fi
	printf '%s\t%s\n' "$col" "$img/$image"
}

# Each configuration's patches, in order, onto copies of the files they
# touch in the pristine tree.
check_patches() {
	local col tmp f n=0
	local -a patches

	extract_tree
	restore_tree
	for col in $(read_configs | cut -f1); do
		mapfile -t patches < <(config_patches "$col")
		[ ${#patches[@]} -gt 0 ] || continue
		tmp=$(mktemp -d)
		for f in $(patch_files "${patches[@]}"); do
			[ -e "$src/$f" ] || continue
			mkdir -p "$tmp/$(dirname "$f")"
			cp "$src/$f" "$tmp/$f"
		done
		for f in "${patches[@]}"; do
			if ! patch -d "$tmp" -p1 -F0 --batch -s --no-backup-if-mismatch \
				-r - < "$f" >&2; then
				rm -rf "$tmp"
				die "$col: ${f##*/} does not apply cleanly"
			fi
		done
		rm -rf "$tmp"
		n=$((n + 1))
	done
	log "the patches of all $n patched configurations apply to linux-source-$series"
}

case ${1:-} in
-h | --help) usage ;;
--list)
	read_configs | cut -f1
	exit 0
	;;
esac

# Images are renamed into place whole: when every one asked for exists,
# print them without waiting for a build that holds the lock.
if [[ ${1:-} != -* ]]; then
	cols=("$@")
	[ $# -gt 0 ] || mapfile -t cols < <(read_configs | cut -f1)
	check_names ${cols[@]+"${cols[@]}"}
	lines=()
	for col in "${cols[@]}"; do
		mapfile -t patches < <(config_patches "$col")
		img=$cache/images/$(image_key ${patches[@]+"${patches[@]}"})/$image
		[ -f "$img" ] || break
		lines+=("$col"$'\t'"$img")
	done
	if [ ${#lines[@]} = ${#cols[@]} ]; then
		printf '%s\n' "${lines[@]}"
		exit 0
	fi
fi

mkdir -p "$cache" || infra "cannot create $cache"
exec 9> "$cache/.lock"
flock 9

case ${1:-} in
--check-patches)
	check_names
	check_patches
	;;
--check-config)
	extract_tree
	restore_tree
	configure
	check_config
	;;
-*)
	usage
	;;
*)
	for col in "${cols[@]}"; do
		build_one "$col"
	done
	;;
esac
