#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A private apt state for fetching Debian packages that the machine's own
# sources do not carry (newer kernels, linux-source-7.3).
#
#   vm/debian-apt.sh [--cache DIR] [--suite SUITE] COMMAND ...
#       --suite prefers SUITE's versions (APT::Default-Release): a guest
#       userland or a static library of one Debian release
#   vm/debian-apt.sh [--cache DIR] update
#       (re)write the private sources and download their package lists
#   vm/debian-apt.sh [--cache DIR] search REGEX
#       package names matching REGEX (apt-cache search --names-only)
#   vm/debian-apt.sh [--cache DIR] download PKG[:ARCH]...
#       download each package's .deb into DIR/debs (once) and print the
#       path of each .deb, one a line; ARCH is a Debian architecture
#       (arm64, ppc64el), the machine's own by default
#   vm/debian-apt.sh [--cache DIR] version PKG[:ARCH]
#       the version of PKG in the package lists
#   vm/debian-apt.sh [--cache DIR] depends PKG[:ARCH]...
#       PKG and the shared library packages (lib*) it needs to run,
#       recursively (the first choice of each Depends and Pre-Depends),
#       as PKG:ARCH, one a line
#   vm/debian-apt.sh [--cache DIR] pool PKG[:ARCH] VERSION SOURCE
#       download PKG_VERSION_ARCH.deb of source package SOURCE straight
#       from the mirror's pool (once) and print its path: for a package
#       that the suites' indexes no longer list but that a listed package
#       still depends on with an exact version. apt cannot verify such a
#       file; the caller must (see vm/debian-kernel.sh)
#   vm/debian-apt.sh [--cache DIR] source SERIES
#       extract Debian's linux-source-SERIES tarball from its package
#       (once) and print the tarball's path
#   vm/debian-apt.sh sources
#       the machine's own Debian suites as "deb URI SUITE main" lines
#       (for a root built from the same mirror, see scripts/fresh-check.sh)
#
# The private state lives under DIR/apt (default
# /var/cache/readahead-selftests/apt, or RA_APT_CACHE): its own sources
# file and lists directory. It lists the machine's own Debian suites plus
# trixie, trixie-backports, sid and experimental, for the machine's
# architecture and arm64 and ppc64el, all through the Debian mirror
# the machine already uses (read from apt's index targets), so no host name
# is written here and the system's apt configuration is never touched.
# Package lists are refreshed when older than a day.
#
# Exit status: 0; 2 on usage errors; 3 when a download or an extraction
# fails or a package is unknown (one line on stderr naming it).

set -euo pipefail

# shellcheck source=scripts/cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/cli.sh"
suite=
cache=${RA_APT_CACHE:-/var/cache/readahead-selftests/apt}
extra_suites="trixie trixie-backports sid experimental"
host_arch=$(dpkg --print-architecture)
# The architectures the VM runner boots (vm/run-vm.sh).
arches=$(printf '%s\n' "$host_arch" arm64 ppc64el | sort -u | paste -sd, -)

usage() {
	sed -n '4,/^# The private state/{/^# The private state/d; s/^# \{0,1\}//p; }' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--cache | --suite) [ $# -ge 2 ] || usage; declare "${1#--}=$2"; shift 2 ;;
	-h | --help) usage ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || usage
cmd=$1
shift

apt_opts=(
	-o "Dir::Etc::SourceList=$cache/sources.list"
	-o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$cache/lists"
	-o "Dir::Cache=$cache/cache"
	-o Dir::Cache::pkgcache=pkgcache.bin -o Dir::Cache::srcpkgcache=srcpkgcache.bin
	-o APT::Sandbox::User=root
	-o Acquire::Languages=none
	-o Debug::NoLocking=1
	-o "APT::Architecture=$host_arch"
)
for a in ${arches//,/ }; do
	apt_opts+=(-o "APT::Architectures::=$a")
done
[ -z "$suite" ] || apt_opts+=(-o "APT::Default-Release=$suite")

# The machine's Debian mirror and suites, from apt's own index targets:
# the suites of its release (bookworm, bookworm-updates, ...), not other
# vendors' repositories.
machine_sources() {
	local codename

	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release"
	apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
		'Identifier: Packages' 2>/dev/null |
		awk -v c="$codename" '$2 == c || index($2, c "-") == 1' | sort -u
}

# "deb URI SUITE main" for each of the machine's Debian suites.
debian_lines() {
	local uri suite comp

	while read -r uri suite comp; do
		[ "$comp" = main ] && echo "deb $uri $suite main"
	done < <(machine_sources)
}

# The mirror the extra suites come from, with a trailing slash.
mirror() {
	local m

	m=$(machine_sources | awk '$2 !~ /-security$/ && $3 == "main" { print $1; exit }')
	[ -n "$m" ] || die "no Debian mirror with a main component in the machine's apt sources"
	echo "${m%/}/"
}

write_sources() {
	local mirror keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	local suite

	mirror=$(mirror)
	[ -f "$keyring" ] || die "$keyring missing (package debian-archive-keyring)"
	{
		debian_lines | sed "s|^deb |deb [arch=$arches signed-by=$keyring] |"
		for suite in $extra_suites; do
			echo "deb [arch=$arches signed-by=$keyring] $mirror $suite main"
		done
	} > "$cache/sources.list.new"
	mv "$cache/sources.list.new" "$cache/sources.list"
}

update() {
	mkdir -p "$cache/lists/partial" "$cache/cache/archives/partial" "$cache/debs" ||
		die "cannot create $cache"
	write_sources
	echo "$prog: updating the private package lists in $cache" >&2
	apt-get "${apt_opts[@]}" -q update >&2 || die "apt-get update (private state in $cache) failed"
	touch "$cache/.updated"
}

# Lists older than a day, or none yet: update first.
ensure_lists() {
	if [ ! -e "$cache/.updated" ] ||
	   ! grep -qF "[arch=$arches " "$cache/sources.list" 2>/dev/null ||
	   ! grep -q " trixie main\$" "$cache/sources.list" ||
	   [ -n "$(find "$cache/.updated" -mmin +1440 2>/dev/null)" ]; then
		update
	fi
}

# One .deb, downloaded once: a finished file is only ever renamed into
# place, so a failed download leaves nothing behind.
download_one() {
	local pkg=$1 tmp deb name=${1%:*} arch=$host_arch ver

	[ "$name" = "$pkg" ] || arch=${pkg##*:}
	# The candidate version, as apt-get download names its file.
	ver=$(apt-cache "${apt_opts[@]}" show --no-all-versions "$pkg" 2> /dev/null |
		sed -n 's/^Version: //p' | head -n 1)
	[ -n "$ver" ] || die "package $pkg unknown to the private apt state"
	ver=${ver/:/%3a}
	deb=$(find "$cache/debs" -maxdepth 1 \( -name "${name}_${ver}_$arch.deb" -o \
		-name "${name}_${ver}_all.deb" \) | head -n 1)
	if [ -z "$deb" ]; then
		tmp=$(mktemp -d "$cache/debs/.dl.XXXXXX")
		echo "$prog: downloading $pkg" >&2
		if ! (cd "$tmp" && apt-get "${apt_opts[@]}" -q download "$pkg" >&2); then
			rm -rf "$tmp"
			die "apt-get download $pkg failed"
		fi
		deb=$(find "$tmp" -maxdepth 1 -name '*.deb' | head -n 1)
		[ -n "$deb" ] || { rm -rf "$tmp"; die "apt-get download $pkg produced no .deb"; }
		mv "$deb" "$cache/debs/" && rm -rf "$tmp"
		deb=$cache/debs/${deb##*/}
	fi
	echo "$deb"
}

# A package the indexes no longer list, from the pool (see usage). The
# file must at least be the package and version asked for.
pool_one() {
	local pkg=${1%:*} arch=$host_arch version=${2#*:} src=$3 name url tmp

	[ "$pkg" = "$1" ] || arch=${1##*:}
	name=${pkg}_${version}_$arch.deb
	if [ ! -f "$cache/debs/$name" ]; then
		case $src in
		lib?*) url=$(mirror)pool/main/${src:0:4}/$src/$name ;;
		*) url=$(mirror)pool/main/${src:0:1}/$src/$name ;;
		esac
		command -v curl > /dev/null || die "curl not found (needed for $name)"
		tmp=$(mktemp "$cache/debs/.pool.XXXXXX")
		echo "$prog: $pkg is in no index any more, downloading $url" >&2
		if ! curl -fsS -o "$tmp" "$url"; then
			rm -f "$tmp"
			die "download of $pkg $version from the pool failed"
		fi
		if [ "$(dpkg-deb -f "$tmp" Package Version 2>/dev/null | tr '\n' ' ')" != \
		     "Package: $pkg Version: $2 " ]; then
			rm -f "$tmp"
			die "$url is not $pkg $2"
		fi
		mv "$tmp" "$cache/debs/$name"
	fi
	echo "$cache/debs/$name"
}

if [ "$cmd" = sources ]; then
	[ $# -eq 0 ] || usage
	lines=$(debian_lines)
	[ -n "$lines" ] || die "no Debian suite with a main component in the machine's apt sources"
	echo "$lines"
	exit 0
fi

mkdir -p "$cache/debs" || die "cannot create $cache"
exec 9> "$cache/.lock"
flock 9

case $cmd in
update)
	[ $# -eq 0 ] || usage
	update
	;;
search)
	[ $# -eq 1 ] || usage
	ensure_lists
	apt-cache "${apt_opts[@]}" search --names-only "$1" | awk '{ print $1 }' | sort -V
	;;
download)
	[ $# -ge 1 ] || usage
	ensure_lists
	for pkg; do
		download_one "$pkg"
	done
	;;
version)
	[ $# -eq 1 ] || usage
	ensure_lists
	apt-cache "${apt_opts[@]}" show --no-all-versions "$1" 2> /dev/null |
		sed -n 's/^Version: //p' | grep . || die "package $1 unknown to the private apt state"
	;;
depends)
	[ $# -ge 1 ] || usage
	ensure_lists
	todo=()
	for pkg; do
		[[ $pkg == *:* ]] || pkg=$pkg:$host_arch
		todo+=("$pkg")
	done
	seen=" "
	while [ ${#todo[@]} -gt 0 ]; do
		pkg=${todo[0]}
		todo=("${todo[@]:1}")
		case $seen in *" $pkg "*) continue ;; esac
		seen="$seen$pkg "
		echo "$pkg"
		deps=$(apt-cache "${apt_opts[@]}" depends --no-recommends --no-suggests \
			--no-conflicts --no-breaks --no-replaces --no-enhances "$pkg" 2> /dev/null) ||
			die "package $pkg unknown to the private apt state"
		# "  |Depends: a" then "    b" are alternatives: a is taken.
		# shellcheck disable=SC2013 # package names are words
		for dep in $(awk '/^  \|?(Pre)?Depends: / && !alt { print $2 }
				  { alt = ($1 ~ /^\|/) }' <<< "$deps"); do
			dep=${dep%:any}
			[[ $dep == lib* ]] || continue
			[[ $dep == *:* ]] || dep=$dep:${pkg##*:}
			todo+=("$dep")
		done
	done
	;;
pool)
	[ $# -eq 3 ] || usage
	pool_one "$@"
	;;
source)
	[ $# -eq 1 ] && [[ $1 =~ ^[0-9]+\.[0-9]+$ ]] || usage
	tarball=$cache/linux-source-$1.tar.xz
	if [ ! -f "$tarball" ]; then
		ensure_lists
		deb=$(download_one "linux-source-$1")
		tmp=$(mktemp -d "$cache/.src.XXXXXX")
		if ! dpkg-deb --fsys-tarfile "$deb" |
		     tar -x -C "$tmp" "./usr/src/linux-source-$1.tar.xz"; then
			rm -rf "$tmp"
			die "cannot extract linux-source-$1.tar.xz from ${deb##*/}"
		fi
		mv "$tmp/usr/src/linux-source-$1.tar.xz" "$tarball"
		rm -rf "$tmp"
	fi
	echo "$tarball"
	;;
*)
	usage
	;;
esac
