#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the readahead validation kernel: Debian's linux-source-6.12
# (6.12.117) with the patch series in validation/patches applied, as a
# minimal built-in-only x86_64 kernel.
#
# Usage: build-kernel.sh [--check-config | --check-patches | --help]
#
#   (no option)      extract (once), apply the series, configure, build;
#                    prints the path of bzImage on stdout
#   --check-config   configure only, then verify that every option of
#                    kernel.config made it into .config; fails listing
#                    the missing ones
#   --check-patches  verify that the series applies without fuzz to a
#                    fresh extract of the source (nothing is kept)
#
# Environment:
#   RA_KERNEL_CACHE    cache dir (default /var/cache/readahead-selftests/kernel)
#   RA_KERNEL_TARBALL  source tarball (default /usr/src/linux-source-6.12.tar.xz)
#   RA_KERNEL_JOBS     make -j value (default: number of CPUs + 1)
#
# Layout of the cache dir:
#   pristine/  the untouched extract, never modified after extraction
#   src/       the patched source tree, hard-linked to pristine/ except
#              for patched files; only files whose content changes are
#              replaced, so make rebuilds only what a patch edit touched
#   obj/       the O= build directory (.config, objects, bzImage)
#   touched    files the currently applied series changes

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patchdir=$here/patches
fragment=$here/kernel.config
cache=${RA_KERNEL_CACHE:-/var/cache/readahead-selftests/kernel}
tarball=${RA_KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
topdir=linux-source-6.12
jobs=${RA_KERNEL_JOBS:-$(($(nproc) + 1))}

log() { echo "build-kernel: $*" >&2; }
die() { log "error: $*"; exit 1; }

series_patches() {
	local p

	[ -f "$patchdir/series" ] || return 0
	# quilt syntax: one patch per line, '#' comments, optional -pN
	sed -e 's/#.*//' -e 's/[[:space:]]\+-p[0-9]*//' "$patchdir/series" |
	while read -r p; do
		[ -n "$p" ] || continue
		[ -f "$patchdir/$p" ] || die "series lists missing patch $p"
		echo "$patchdir/$p"
	done
}

check_series() {
	local p

	[ -f "$patchdir/series" ] || return 0
	for p in $(sed -e 's/#.*//' -e 's/[[:space:]]\+-p[0-9]*//' "$patchdir/series"); do
		[ -f "$patchdir/$p" ] || die "series lists missing patch $p"
	done
}

# Paths (relative to the tree top) that a -p1 patch modifies or creates
patch_files() {
	awk '
	/^--- / { old = $2; next }
	/^\+\+\+ / {
		f = $2
		if (f == "/dev/null")
			f = old
		sub(/^[^\/]*\//, "", f)
		print f
	}' "$@" | sort -u
}

extract_pristine() {
	[ -f "$cache/pristine/.extract-done" ] && return 0
	[ -f "$tarball" ] || die "no source tarball at $tarball"
	log "extracting $tarball into $cache/pristine"
	rm -rf "$cache/pristine"
	mkdir -p "$cache/pristine"
	tar -C "$cache/pristine" --strip-components=1 -xf "$tarball"
	touch "$cache/pristine/.extract-done"
}

# Apply the series to copies of only the files it touches; "$1" is the
# staging dir, which receives the patched files.
apply_series_to() {
	local stage=$1 from=$2 f p
	shift 2

	for f in "$@"; do
		if [ -e "$from/$f" ]; then
			mkdir -p "$stage/$(dirname "$f")"
			cp -p "$from/$f" "$stage/$f"
		fi
	done
	while read -r p; do
		[ -n "$p" ] || continue
		if ! (cd "$stage" && patch -p1 -F0 --batch --forward -s \
				--no-backup-if-mismatch -r - <"$p" >&2); then
			die "$(basename "$p") does not apply cleanly"
		fi
	done < <(series_patches)
}

sync_src() {
	local stage files=() old=() f changed=0

	extract_pristine
	if [ ! -f "$cache/src/.copy-done" ]; then
		log "creating build source tree $cache/src"
		rm -rf "$cache/src" "$cache/touched"
		# Hard links: cheap, and safe because files of src/ are only
		# ever replaced (rm + cp below), never written in place, and
		# an O= build does not write into its source tree.
		cp -al "$cache/pristine" "$cache/src"
		rm -f "$cache/src/.extract-done"
		touch "$cache/src/.copy-done"
	fi

	mapfile -t files < <(series_patches | xargs -r cat | patch_files /dev/stdin)
	[ -f "$cache/touched" ] && mapfile -t old <"$cache/touched"

	stage=$(mktemp -d "$cache/stage.XXXXXX")
	trap 'rm -rf "$stage"' EXIT
	apply_series_to "$stage" "$cache/pristine" "${files[@]}"

	# Every file the old or the new series touches: bring src in line
	# with pristine+series, rewriting a file only if its content differs.
	for f in $(printf '%s\n' "${files[@]}" "${old[@]}" | sort -u); do
		if [ -e "$stage/$f" ]; then
			if ! cmp -s "$stage/$f" "$cache/src/$f"; then
				mkdir -p "$cache/src/$(dirname "$f")"
				rm -f "$cache/src/$f"
				cp "$stage/$f" "$cache/src/$f"
				log "updated $f"
				changed=1
			fi
		elif [ -e "$cache/pristine/$f" ]; then
			if ! cmp -s "$cache/pristine/$f" "$cache/src/$f"; then
				rm -f "$cache/src/$f"
				cp "$cache/pristine/$f" "$cache/src/$f"
				log "restored $f"
				changed=1
			fi
		elif [ -e "$cache/src/$f" ]; then
			rm -f "$cache/src/$f"
			log "removed $f"
			changed=1
		fi
	done
	printf '%s\n' "${files[@]}" >"$cache/touched"
	rm -rf "$stage"
	trap - EXIT
	[ $changed = 1 ] || log "source tree already matches the series"
}

configure() {
	local obj=$cache/obj want

	mkdir -p "$obj"
	want=$( (cat "$fragment"; md5sum "$cache/src/Makefile") | md5sum)
	if [ -f "$obj/.config" ] && [ -f "$obj/.fragment-sum" ] &&
	   [ "$(cat "$obj/.fragment-sum")" = "$want" ]; then
		return 0
	fi
	log "configuring: tinyconfig + $(basename "$fragment")"
	make -s -C "$cache/src" O="$obj" ARCH=x86_64 tinyconfig >&2
	if ! (cd "$obj" && "$cache/src/scripts/kconfig/merge_config.sh" -m \
		.config "$fragment" >merge_config.log 2>&1); then
		cat "$obj/merge_config.log" >&2
		die "merge_config.sh failed"
	fi
	make -s -C "$cache/src" O="$obj" ARCH=x86_64 olddefconfig >&2
	echo "$want" >"$obj/.fragment-sum"
}

# Every "CONFIG_X=v" and "# CONFIG_X is not set" of the fragment must
# appear verbatim in .config.
check_config() {
	local cfg=$cache/obj/.config line missing=()

	[ -f "$cfg" ] || die "no $cfg"
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*|"# CONFIG_"*" is not set") ;;
		*) continue ;;
		esac
		grep -qxF -- "$line" "$cfg" || missing+=("$line")
	done <"$fragment"
	if [ ${#missing[@]} -gt 0 ]; then
		log "options missing from $cfg:"
		printf '  %s\n' "${missing[@]}" >&2
		return 1
	fi
	log "all $(grep -c '^\(CONFIG_\|# CONFIG_\)' "$fragment") options of $(basename "$fragment") are in $cfg"
}

check_patches() {
	local tmp files=() n

	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mapfile -t files < <(series_patches | xargs -r cat | patch_files /dev/stdin)
	n=$(series_patches | wc -l)
	[ "$n" -gt 0 ] || die "empty series"
	mkdir -p "$tmp/fresh" "$tmp/stage"
	if [ -f "$tarball" ]; then
		# Only the files the series needs are extracted
		tar -C "$tmp/fresh" --strip-components=1 -xf "$tarball" \
			--wildcards --no-wildcards-match-slash \
			$(printf "$topdir/%s " "${files[@]}") 2>/dev/null || true
	elif [ -d "/srv/ref/$topdir" ]; then
		for f in "${files[@]}"; do
			[ -e "/srv/ref/$topdir/$f" ] || continue
			mkdir -p "$tmp/fresh/$(dirname "$f")"
			cp "/srv/ref/$topdir/$f" "$tmp/fresh/$f"
		done
	else
		die "no source tarball at $tarball"
	fi
	apply_series_to "$tmp/stage" "$tmp/fresh" "${files[@]}"
	log "all $n patches apply cleanly (no fuzz) to $(basename "$tarball")"
	rm -rf "$tmp"
	trap - EXIT
}

check_series

case ${1:-} in
--check-patches)
	check_patches
	;;
--check-config)
	mkdir -p "$cache"
	sync_src
	configure
	check_config
	;;
"")
	mkdir -p "$cache"
	start=$(date +%s)
	sync_src
	configure
	check_config
	log "make -j$jobs bzImage"
	make -s -C "$cache/src" O="$cache/obj" ARCH=x86_64 -j"$jobs" bzImage >&2
	log "built in $(($(date +%s) - start)) s"
	echo "$cache/obj/arch/x86/boot/bzImage"
	;;
-h|--help)
	sed -n '3,/^$/s/^# \{0,1\}//p' "$0"
	;;
*)
	die "unknown option $1 (try --help)"
	;;
esac
