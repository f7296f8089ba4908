#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the readahead validation kernels: Debian's linux-source-7.3 as a
# minimal built-in-only x86_64 kernel (tinyconfig + kernel.config), once
# pristine and once per configuration of validation/configurations with
# that configuration's patches applied.
#
# Usage: build-kernel.sh [COLUMN...]      build (or reuse) each named
#                                         configuration, all by default;
#                                         prints "COLUMN<tab>bzImage" lines
#        build-kernel.sh --list           the configuration names
#        build-kernel.sh --check-patches  every configuration's patches
#                                         apply to pristine 7.3, no fuzz
#        build-kernel.sh --check-config   every kernel.config option is in
#                                         the configured .config
#        build-kernel.sh --help
#
# One source tree, one object tree. A configuration is built by applying
# its patches to the tree, an incremental make, saving the bzImage under a
# key made of kernel.config and the patches' diffs, and reversing the
# patches. A configuration whose key already has an image is not built.
#
# Environment:
#   RA_VALIDATION_CACHE  cache directory
#                        (default /var/cache/readahead-selftests/validation-7.3)
#   RA_KERNEL_JOBS       make -j value (default 3), run under nice -n 10
#
# Cache layout:
#   src/       linux-source-7.3, pristine while no build runs
#   obj/       the O= build directory (.config, objects)
#   applied/   copies of the patches applied to src/ right now, so that
#              an interrupted build can be reversed by the next run
#   images/<key>/bzImage, images/<key>/patches
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

# Image key: the config fragment and the patches' diffs (not their
# changelogs), in order.
image_key() {
	local p

	{
		echo "linux-source-$series"
		cat "$fragment"
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

	want=$( (cat "$fragment"; md5sum < "$src/Makefile") | md5sum)
	if [ -f "$obj/.config" ] && [ "$(cat "$obj/.fragment-sum" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	log "configuring: tinyconfig + ${fragment##*/}"
	mkdir -p "$obj"
	make -s -C "$src" O="$obj" ARCH=x86_64 tinyconfig >&2 ||
		infra "make tinyconfig failed in $src"
	(cd "$obj" && "$src/scripts/kconfig/merge_config.sh" -m .config "$fragment" \
		> merge_config.log 2>&1) || infra "merge_config.sh failed (see $obj/merge_config.log)"
	make -s -C "$src" O="$obj" ARCH=x86_64 olddefconfig >&2 ||
		infra "make olddefconfig failed in $obj"
	echo "$want" > "$obj/.fragment-sum"
}

# Every "CONFIG_X=v" and "# CONFIG_X is not set" of the fragment must be
# in .config verbatim.
check_config() {
	local line missing=()

	while IFS= read -r line; do
		case $line in
		CONFIG_*=* | "# CONFIG_"*" is not set") ;;
		*) continue ;;
		esac
		grep -qxF -- "$line" "$obj/.config" || missing+=("$line")
	done < "$fragment"
	if [ ${#missing[@]} -gt 0 ]; then
		log "options of ${fragment##*/} missing from $obj/.config:"
		printf '  %s\n' "${missing[@]}" >&2
		return 1
	fi
	log "all $(grep -c '^CONFIG_\|^# CONFIG_' "$fragment") options of ${fragment##*/} are in .config"
}

# Build one configuration unless its image exists; prints its line.
build_one() {
	local col=$1 key img start rc=0
	local -a patches

	mapfile -t patches < <(config_patches "$col")
	key=$(image_key ${patches[@]+"${patches[@]}"})
	img=$cache/images/$key
	if [ ! -f "$img/bzImage" ]; then
		extract_tree
		restore_tree
		configure
		apply_patches ${patches[@]+"${patches[@]}"}
		log "$col: make -j$jobs bzImage (${#patches[@]} patches)"
		start=$(date +%s)
		nice -n 10 make -C "$src" O="$obj" ARCH=x86_64 -j"$jobs" bzImage \
			> "$cache/build.log" 2>&1 || rc=$?
		if [ "$rc" = 0 ]; then
			mkdir -p "$cache/images"
			rm -rf "$img.tmp"
			mkdir "$img.tmp"
			cp "$obj/arch/x86/boot/bzImage" "$img.tmp/"
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
	printf '%s\t%s\n' "$col" "$img/bzImage"
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
		img=$cache/images/$(image_key ${patches[@]+"${patches[@]}"})/bzImage
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
