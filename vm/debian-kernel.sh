#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fetch a Debian cloud kernel for the VM runner.
#
#   vm/debian-kernel.sh [--cache DIR] <6.1|6.12>
#
# Downloads the newest linux-image-<ver>*-cloud-amd64-unsigned package that
# apt knows about (with "apt-get download", so only the configured Debian
# mirrors are used), extracts it once into the cache directory, runs depmod
# on the extracted module tree and prints two lines:
#
#   KERNEL=/path/to/vmlinuz-<release>
#   MODULES=/path/to/lib/modules/<release>
#
# The output is meant to be used as make arguments or parsed by a script:
#
#   make vm-test $(vm/debian-kernel.sh 6.12)
#
# Default cache: /var/cache/readahead-selftests/debian (override with --cache
# or RA_KERNEL_CACHE).  Progress messages go to stderr.

set -euo pipefail

prog=${0##*/}
cache=${RA_KERNEL_CACHE:-/var/cache/readahead-selftests/debian}

die() {
	echo "$prog: $*" >&2
	exit 1
}

usage() {
	echo "usage: $prog [--cache DIR] <6.1|6.12>" >&2
	exit 2
}

series=
while [ $# -gt 0 ]; do
	case $1 in
	--cache)
		[ $# -ge 2 ] || usage
		cache=$2
		shift 2
		;;
	-h | --help)
		usage
		;;
	-*)
		usage
		;;
	*)
		[ -z "$series" ] || usage
		series=$1
		shift
		;;
	esac
done
[ -n "$series" ] || usage
[[ $series =~ ^[0-9]+\.[0-9]+$ ]] || die "kernel series must look like 6.1 or 6.12, got '$series'"

for tool in apt-cache apt-get dpkg-deb depmod flock; do
	command -v "$tool" >/dev/null || die "$tool not found (a Debian host is needed)"
done

# Find the newest unsigned cloud image package of the series.  Debian names
# them linux-image-6.1.0-NN-cloud-amd64-unsigned and
# linux-image-6.12.NN+debNN-cloud-amd64-unsigned.
find_package() {
	local re="^linux-image-${series//./\\.}[.-][^ ]*-cloud-amd64-unsigned\$"

	apt-cache search --names-only '^linux-image-.*-cloud-amd64-unsigned$' |
		awk '{ print $1 }' | grep -E "$re" | sort -V | tail -n 1
}

pkg=$(find_package || true)
if [ -z "$pkg" ] && [ "$(id -u)" = 0 ]; then
	# A fresh machine may not have package lists yet.
	echo "$prog: no package found, running apt-get update" >&2
	apt-get update -qq >&2 || true
	pkg=$(find_package || true)
fi
[ -n "$pkg" ] || die "no linux-image-$series*-cloud-amd64-unsigned package known to apt"

# The kernel release is the package name without the prefix and suffix.
release=${pkg#linux-image-}
release=${release%-unsigned}

dir=$cache/$pkg
mkdir -p "$dir" || die "cannot create cache directory $dir"

# Serialise concurrent runs on the same cache entry.
exec 9>"$dir/.lock"
flock 9

if [ ! -e "$dir/.done" ]; then
	echo "$prog: fetching $pkg" >&2
	rm -rf "$dir/root" "$dir"/*.deb
	# Download as root without the _apt sandbox user (it cannot write
	# to a root-owned cache directory and apt would only complain).
	(cd "$dir" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >&2) ||
		die "apt-get download $pkg failed"
	deb=$(find "$dir" -maxdepth 1 -name "${pkg}_*.deb" | head -n 1)
	[ -n "$deb" ] || die "apt-get download did not produce a .deb for $pkg"

	echo "$prog: extracting $(basename "$deb")" >&2
	dpkg-deb -x "$deb" "$dir/root" || die "cannot extract $deb"

	# Debian generates modules.dep at install time, not in the package.
	depmod -b "$dir/root" "$release" || die "depmod failed for $release"
	touch "$dir/.done"
fi

kernel=$dir/root/boot/vmlinuz-$release
moddir=$dir/root/lib/modules/$release
[ -d "$moddir" ] || moddir=$dir/root/usr/lib/modules/$release
[ -f "$kernel" ] || die "$kernel missing in $pkg"
[ -d "$moddir" ] || die "module directory for $release missing in $pkg"

echo "KERNEL=$kernel"
echo "MODULES=$moddir"
