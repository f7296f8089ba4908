#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The userland of a guest of another architecture, for vm/run-vm.sh.
#
#   vm/guest-root.sh [--cache DIR] ARCH
#
# ARCH is a Debian architecture (arm64, ppc64el). The programs the guest
# init and the suite use (busybox-static, e2fsprogs, xfsprogs,
# btrfs-progs, f2fs-tools, mount for losetup, dash,
# coreutils for timeout, bash) and the shared library
# packages they depend on are taken from the machine's own Debian release
# through the private apt state of vm/debian-apt.sh, extracted once with
# dpkg-deb -x into DIR/<codename>-<ARCH>, and that path is printed.
#
# Default cache: /var/cache/readahead-selftests/guest-root (or
# RA_GUEST_ROOT_CACHE). A root is extracted into a temporary directory and
# renamed into place once complete, so a failure leaves no partial root.
#
# Exit status: 0; 2 on usage errors; 3 when the architecture is not one
# the private apt state carries or a package cannot be had (one line on
# stderr naming it).

set -euo pipefail

# shellcheck source=scripts/cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/cli.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${RA_GUEST_ROOT_CACHE:-/var/cache/readahead-selftests/guest-root}
programs="busybox-static e2fsprogs xfsprogs btrfs-progs f2fs-tools mount dash
	coreutils bash"

usage() {
	sed -n '4,/^# Default cache/{/^# Default cache/d; s/^# \{0,1\}//p; }' "$0" >&2
	exit 2
}

if [ "${1:-}" = --cache ] && [ $# -ge 2 ]; then
	cache=$2
	shift 2
fi
if [ $# -ne 1 ] || [[ $1 == -* ]]; then usage; fi
arch=$1
case $arch in
arm64 | ppc64el) ;;
*) die "architecture $arch: no guest userland is made for it (arm64 or ppc64el)" ;;
esac
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release"
apt=("$here/debian-apt.sh" --suite "$codename")

dir=$cache/$codename-$arch
if [ ! -d "$dir" ]; then
	mkdir -p "$cache" || die "cannot create $cache"
	exec 9> "$cache/.$arch.lock"
	flock 9
fi
if [ ! -d "$dir" ]; then
	rm -rf "$cache/.$codename-$arch.tmp."*
	# shellcheck disable=SC2046,SC2086 # package names are words
	pkgs=$("${apt[@]}" depends $(printf "%s:$arch " $programs)) || exit 3
	echo "$prog: $arch userland from $codename: $(wc -l <<< "$pkgs") packages" >&2
	# shellcheck disable=SC2086 # package names are words
	debs=$("${apt[@]}" download $pkgs) || exit 3
	tmp=$(mktemp -d "$cache/.$codename-$arch.tmp.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	while read -r deb; do
		dpkg-deb -x "$deb" "$tmp/root" 2> "$tmp/err" ||
			die "cannot extract ${deb##*/}: $(head -n 1 "$tmp/err")"
	done <<< "$debs"
	# Absolute links (/lib64/ld64.so.2 -> /lib/...) would point into the
	# host: make them relative, inside the root.
	while IFS= read -r -d '' l; do
		ln -sfnr "$tmp/root$(readlink "$l")" "$l"
	done < <(find "$tmp/root" -type l -lname '/*' -print0)
	for p in busybox mkfs.ext4 mkfs.xfs losetup dash timeout bash; do
		[ -n "$(find "$tmp/root" -name "$p" \( -type f -o -type l \) -print -quit)" ] ||
			die "$p is in none of the $arch packages ($programs)"
	done
	mv "$tmp/root" "$dir" || die "cannot rename the extracted root to $dir"
	rm -rf "$tmp"
	trap - EXIT
fi
echo "$dir"
