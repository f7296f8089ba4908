#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fetch a Debian kernel for the VM runner.
#
#   vm/debian-kernel.sh [--cache DIR] [--arch ARCH] [--flavour F] [--list]
#                       SERIES[-ARCH[-F]]
#
# SERIES is a kernel series such as 6.1, 6.12, 6.18 or 7.3 (7.2-arm64-16k
# is 7.2 --arch arm64 --flavour 16k, as a verdicts column names it).
# ARCH is a Debian architecture: amd64 (the default), arm64 or ppc64el.
# F is the page size of the kernel, 4k (the default), 16k (arm64) or 64k
# (ppc64el), or a Debian flavour name (cloud-arm64, rt-arm64, ..., which
# implies its architecture); 4k is Debian's cloud-amd64, arm64 and
# powerpc64le flavour, 16k and 64k are its arm64-16k and powerpc64le-64k. The newest point release of the
# series whose packages can all be downloaded is fetched through the
# private apt state of vm/debian-apt.sh (the machine's Debian suites plus
# trixie, trixie-backports, sid and experimental, the indexes of ARCH
# only), extracted once into
# DIR/<release>, and two lines are printed:
#
#   KERNEL=/path/to/vmlinuz
#   MODULES=/path/to/lib/modules/<release>
#
# plus, for arm64 and ppc64el, ARCH=arm64 or ARCH=powerpc (the kernel's
# name, which the top Makefile builds the tests for), for make or a
# script to use:
#
#   make vm-test $(vm/debian-kernel.sh 6.12)
#   make vm-test $(vm/debian-kernel.sh --arch arm64 --flavour 16k 7.2)
#
# --list prints the candidate releases of the series, newest first, each
# with its package layout and the packages it needs, and downloads nothing.
#
# Debian packages a cloud kernel in one of three ways:
#   6.1, 6.12    linux-image-<release>-unsigned: vmlinuz and modules
#   6.16-6.18    linux-image-<release>: vmlinuz and modules (plus
#                linux-base-<release> when the archive has one)
#   6.19, 7.x    linux-binary-<release> (or linux-binary-unsigned-):
#                vmlinuz; linux-modules-<release>: the .ko.xz files;
#                linux-base-<release>: modules.builtin, modules.order,
#                config, System.map
# Older point releases often lack a package (their linux-modules are
# removed from the archive first): the next older release is tried then.
# Where no release of a series has all its packages listed (6.19, 7.0 and
# 7.1: the indexes keep linux-binary but dropped linux-modules and
# linux-base), the newest listed linux-binary is used and the two others
# come from the mirror's pool at the exact version linux-binary depends
# on. apt cannot verify those two; the modules are checked in the guest
# instead: they are signed with a key built into the apt-verified kernel
# image, and vm/run-vm.sh boots kernels with signed modules with
# module.sig_enforce=1, so a module that is not Debian's does not load.
#
# Default cache: /var/cache/readahead-selftests/debian (or RA_KERNEL_CACHE).
# An entry is extracted into a temporary directory and renamed into place
# once complete (depmod included), so a failure leaves no partial entry.
# Progress goes to stderr.
#
# Exit status: 0; 2 on usage errors; 3 when the architecture or flavour
# is not one Debian builds, no release of the series can be fetched, a
# download or extraction fails or a layout is not understood (one line on
# stderr naming the architecture, package or step).

set -euo pipefail

# shellcheck source=scripts/cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/cli.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${RA_KERNEL_CACHE:-/var/cache/readahead-selftests/debian}

arch=amd64
flavour=4k
arch_given=
flavour_given=
list=0

usage() {
	sed -n '4,/^# --list/{/^# --list/d; s/^# \{0,1\}//p; }' "$0" >&2
	exit 2
}

series=
while [ $# -gt 0 ]; do
	case $1 in
	--cache | --arch | --flavour)
		[ $# -ge 2 ] || usage
		declare "${1#--}=$2" "${1#--}_given=1"
		shift 2
		;;
	--list) list=1; shift ;;
	-*) usage ;;
	*) [ -z "$series" ] || usage; series=$1; shift ;;
	esac
done
[ -n "$series" ] || usage
if [[ $series =~ ^([0-9]+\.[0-9]+)-([a-z0-9]+)(-([0-9]+k))?$ ]]; then
	if [ -n "$arch_given$flavour_given" ]; then
		echo "$prog: $series names the architecture and page size: no --arch or --flavour with it" >&2
		exit 2
	fi
	series=${BASH_REMATCH[1]}
	arch=${BASH_REMATCH[2]}
	flavour=${BASH_REMATCH[4]:-$flavour}
elif ! [[ $series =~ ^[0-9]+\.[0-9]+$ ]]; then
	echo "$prog: kernel series must look like 6.12, 7.3 or 7.2-arm64-16k, got '$series'" >&2
	exit 2
fi

# The kernel's own name of the architecture (what ARCH= means to a kernel
# or selftests Makefile), and the Debian flavour of each page size.
# A flavour name says its architecture (arm64-16k, powerpc64le-64k).
case $flavour in
*arm64*) farch=arm64 ;;
*powerpc64le*) farch=ppc64el ;;
*amd64*) farch=amd64 ;;
*) farch=$arch ;;
esac
if [ "$farch" != "$arch" ]; then
	if [ -n "$arch_given" ]; then
		echo "$prog: flavour $flavour is not one of architecture $arch" >&2
		exit 2
	fi
	arch=$farch
fi
case $arch in
amd64) karch= ;;
arm64) karch=arm64 ;;
ppc64el) karch=powerpc ;;
*) die "architecture $arch: no Debian kernel is fetched for it (amd64, arm64 or ppc64el)" ;;
esac
case $arch/$flavour in
amd64/4k) flavour=cloud-amd64 ;;
arm64/4k) flavour=arm64 ;;
arm64/16k) flavour=arm64-16k ;;
ppc64el/4k) flavour=powerpc64le ;;
ppc64el/64k) flavour=powerpc64le-64k ;;
*/[0-9]*k) die "Debian builds no $flavour-page kernel for architecture $arch (amd64: 4k; arm64: 4k, 16k; ppc64el: 4k, 64k)" ;;
esac
# apt names a package of another architecture PKG:ARCH; only that
# architecture's indexes are read.
qual=
[ "$arch" = "$(dpkg --print-architecture)" ] || qual=:$arch
apt=("$here/debian-apt.sh" --arch "$arch")

for tool in dpkg-deb depmod flock; do
	command -v "$tool" > /dev/null || die "$tool not found (a Debian host is needed)"
done

# Every package name of the series in the four families, from one search.
# A release is the series, a point release, an ABI number, a Debian
# suffix and the flavour (6.1.0-57-cloud-amd64, 7.3.4+deb13-arm64): no
# other flavour ending in this one (rt-arm64) matches.
sre="${series//./\\.}(\\.[0-9]+)*(-[0-9]+)?(\\+deb[0-9]+(u[0-9]+)?)?"
known=$("${apt[@]}" search "^linux-(image|binary|binary-unsigned|modules|base)-$sre-$flavour(-unsigned)?\$") ||
	exit 3

is_known() {
	grep -qxF "$1" <<< "$known"
}

# Releases, newest first: 6.1.0-57-cloud-amd64, 6.12.117+deb12-cloud-amd64,
# 7.3.4+deb13-cloud-amd64, 7.3-cloud-amd64 (a release candidate) ...
releases=$(sed -nE "s/^linux-(image|binary)-($sre-$flavour)\$/\\2/p" <<< "$known" |
	sort -u -V -r)
[ -n "$releases" ] || die "no linux-image or linux-binary package of series $series ($flavour, $arch) in the archive"

# The packages of one release, by layout, into $pkgs; when the archive
# lacks one of them, $pkgs is empty and $missing names it.
layout=
missing=
pkgs=()
packages_of() {
	local rel=$1 p bin

	missing=
	if is_known "linux-binary-$rel" || is_known "linux-binary-unsigned-$rel"; then
		layout='split'
		bin=linux-binary-$rel
		is_known "$bin" || bin=linux-binary-unsigned-$rel
		pkgs=("$bin" "linux-modules-$rel" "linux-base-$rel")
	elif [[ ! $rel =~ ^[0-9]+\.[0-9]+[.+] ]]; then
		# linux-image-6.12-cloud-amd64 and the like: a metapackage.
		layout=meta
		pkgs=()
		missing="(metapackage)"
		return 0
	elif is_known "linux-image-$rel-unsigned"; then
		layout=unsigned-image
		pkgs=("linux-image-$rel-unsigned")
	else
		layout=image
		pkgs=("linux-image-$rel")
		if is_known "linux-base-$rel"; then
			pkgs+=("linux-base-$rel")
		fi
	fi
	for p in "${pkgs[@]}"; do
		if ! is_known "$p"; then
			missing=$p
			pkgs=()
			return 0
		fi
	done
}

# The split layout with linux-modules and linux-base from the pool (see
# above): into $pkgs as pool:<package>=<version>.
pool_packages_of() {
	local rel=$1 bin ver

	pkgs=()
	bin=linux-binary-$rel
	is_known "$bin" || bin=linux-binary-unsigned-$rel
	is_known "$bin" || return 0
	ver=$("${apt[@]}" version "$bin$qual") || exit 3
	pkgs=("$bin" "pool:linux-modules-$rel$qual=$ver" "pool:linux-base-$rel$qual=$ver")
}

if [ "$list" = 1 ]; then
	for rel in $releases; do
		packages_of "$rel"
		printf '%s\t%s\t%s\n' "$rel" "$layout" "${pkgs[*]:-missing $missing}"
	done
	exit 0
fi

# The .debs of $pkgs into $debs, unless the release is extracted already;
# 1 with $missing naming the package when one cannot be downloaded (a
# package can be listed and still be missing from the pool).
debs=()
fetch_debs() {
	local p deb start

	debs=()
	[ ! -d "$cache/$1" ] || return 0
	for p in "${pkgs[@]}"; do
		start=$EPOCHSECONDS
		case $p in
		pool:*)
			p=${p#pool:}
			deb=$("${apt[@]}" pool "${p%%=*}" "${p#*=}" linux) || exit 3
			p=${p%%=*}
			;;
		*)
			if ! deb=$("${apt[@]}" download "$p$qual"); then
				missing=$p
				return 1
			fi
			;;
		esac
		[ -f "$deb" ] || die "download of $p gave no file"
		echo "$prog: $p: $(du -m "$deb" | cut -f1) MiB, $((EPOCHSECONDS - start)) s" >&2
		debs+=("$deb")
	done
}

release=
first_missing=
for rel in $releases; do
	packages_of "$rel"
	if [ ${#pkgs[@]} -gt 0 ]; then
		if fetch_debs "$rel"; then
			release=$rel
			break
		fi
		echo "$prog: $rel: $missing cannot be downloaded, trying an older release" >&2
	fi
	[ "$layout" != meta ] || continue
	[ -n "$first_missing" ] || first_missing=$missing
done
if [ -z "$release" ]; then
	for rel in $releases; do
		pool_packages_of "$rel"
		if [ ${#pkgs[@]} -gt 0 ]; then
			release=$rel
			echo "$prog: using $release: no release of $series has all its packages listed, linux-modules and linux-base come from the pool" >&2
			first_missing=
			fetch_debs "$rel" || die "$missing cannot be downloaded"
			break
		fi
	done
fi
[ -n "$release" ] ||
	die "no $series release ($flavour, $arch) has all its packages in the archive (newest: $(head -n 1 <<< "$releases"), $first_missing missing)"
if [ -n "$first_missing" ]; then
	echo "$prog: using $release: newer releases lack packages ($first_missing ...)" >&2
fi

# The kernel image in an extracted tree: /boot (up to 6.19) or next to
# the modules (7.x); ppc64el's is an uncompressed vmlinux.
find_kernel() {
	local k

	for k in "$1/boot/vmlinuz-$release" "$1/lib/modules/$release/vmlinuz" \
		 "$1/boot/vmlinux-$release" "$1/lib/modules/$release/vmlinux"; do
		if [ -f "$k" ]; then
			echo "$k"
			return
		fi
	done
}

mkdir -p "$cache" || die "cannot create cache directory $cache"
dir=$cache/$release

# Serialise concurrent runs on the same release.
exec 9> "$cache/.$release.lock"
flock 9

if [ ! -d "$dir" ]; then
	# Leftovers of a run that was killed while extracting.
	rm -rf "$cache/.$release.tmp."*
	# Fetched above, unless the release was extracted when it was chosen.
	[ ${#debs[@]} -gt 0 ] || fetch_debs "$release" || die "$missing cannot be downloaded"

	tmp=$(mktemp -d "$cache/.$release.tmp.XXXXXX")
	trap 'rm -rf "$tmp" "$tmp.err"' EXIT
	for deb in "${debs[@]}"; do
		echo "$prog: extracting ${deb##*/}" >&2
		dpkg-deb -x "$deb" "$tmp" 2> "$tmp.err" ||
			die "cannot extract ${deb##*/}: $(grep -m 1 'error' "$tmp.err")"
		rm -f "$tmp.err"
	done

	# depmod looks in <base>/lib/modules: give a tree that has only
	# usr/lib/modules (7.x) the merged-/usr link.
	if [ ! -e "$tmp/lib" ] && [ -d "$tmp/usr/lib/modules" ]; then
		ln -s usr/lib "$tmp/lib"
	fi
	mod=$tmp/lib/modules/$release
	[ -d "$mod/kernel" ] || die "$release: no module tree (lib/modules/$release/kernel) in ${pkgs[*]}"
	[ -f "$mod/modules.builtin" ] || die "$release: no modules.builtin in ${pkgs[*]}"
	# Debian generates modules.dep at install time, not in the package.
	depmod -b "$tmp" "$release" 2> "$tmp/depmod.err" ||
		die "depmod $release failed: $(head -n 1 "$tmp/depmod.err")"
	rm -f "$tmp/depmod.err"
	[ -n "$(find_kernel "$tmp")" ] || die "$release: no vmlinuz in ${pkgs[*]} (unknown package layout)"
	mv "$tmp" "$dir" || die "cannot rename the extracted tree to $dir"
	trap - EXIT
	echo "$prog: $release ready in $dir" >&2
fi

kernel=$(find_kernel "$dir")
[ -n "$kernel" ] || die "$release: no vmlinuz in $dir (remove it and retry)"

echo "KERNEL=$kernel"
echo "MODULES=$dir/lib/modules/$release"
[ -z "$karch" ] || echo "ARCH=$karch"
