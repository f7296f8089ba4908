#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A private apt state for fetching Debian packages that the machine's own
# sources do not carry (newer kernels, linux-source-7.3).
#
#   vm/debian-apt.sh [--cache DIR] [--suite SUITE] [--arch ARCH] COMMAND ...
#       --suite reads only the indexes of release SUITE (a codename such
#       as bookworm: its suites bookworm, bookworm-updates, ...): a
#       guest userland or a static library of one Debian release
#       --arch reads only ARCH's indexes (a Debian architecture: amd64,
#       arm64, ppc64el), and a PKG without :ARCH is ARCH's; without it,
#       the architectures that PKG:ARCH arguments name, else the
#       machine's own
#   vm/debian-apt.sh [--cache DIR] [--suite SUITE] [--arch ARCH] update
#       download the package lists of those suites and architectures
#   vm/debian-apt.sh [--cache DIR] [--arch ARCH] search REGEX
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
#       (once) and print the tarball's path; the suites are read one at
#       a time, in the order of RA_APT_SUITES and then the machine's,
#       up to the first that lists the package, but for sid and
#       experimental (a release candidate's tarball is not the series')
#   vm/debian-apt.sh sources
#       the machine's own Debian suites as "deb URI SUITE main" lines
#       (for a root built from the same mirror, see scripts/fresh-check.sh)
#
# The private state lives in DIR (default
# /var/cache/readahead-selftests/apt, or RA_APT_CACHE): its own sources
# file and lists directory. It knows the machine's own Debian suites plus
# those of RA_APT_SUITES (default: trixie-backports trixie sid
# experimental), for the machine's architecture and arm64 and ppc64el,
# all through the Debian mirror the machine already uses (read from apt's
# index targets), so no host name is written here and the system's apt
# configuration is never touched. A request downloads only the indexes
# of its suites and architectures, each when it is older than a day. An
# index that cannot be fetched (a mirror in the middle of a sync) is
# tried once more, then named in a warning; the request fails only when
# what it asks for is in none of the indexes it has, in one line that
# names the indexes it could not fetch and the mirror's message.
#
# Exit status: 0; 2 on usage errors; 3 when a download or an extraction
# fails or a package is unknown (one line on stderr naming it).

set -euo pipefail

# shellcheck source=scripts/cli.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/cli.sh"
suite=
arch=
cache=${RA_APT_CACHE:-/var/cache/readahead-selftests/apt}
extra_suites=${RA_APT_SUITES:-trixie-backports trixie sid experimental}
host_arch=$(dpkg --print-architecture)
# The architectures the VM runner boots (vm/run-vm.sh).
known_arches=" $host_arch arm64 ppc64el "
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

usage() {
	sed -n '4,/^# The private state/{/^# The private state/d; s/^# \{0,1\}//p; }' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--cache | --suite | --arch) [ $# -ge 2 ] || usage; declare "${1#--}=$2"; shift 2 ;;
	-h | --help) usage ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || usage
cmd=$1
shift
[ -z "$arch" ] || [[ $known_arches == *" $arch "* ]] ||
	die "architecture $arch: the private state has$known_arches only"

# The machine's Debian mirror and suites, from apt's own index targets:
# "URI SUITE" for each suite of its release with a main component
# (bookworm, bookworm-updates, ...), not other vendors' repositories.
machine_sources() {
	local codename

	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release"
	apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
		'Identifier: Packages' 2>/dev/null |
		awk -v c="$codename" '($2 == c || index($2, c "-") == 1) && $3 == "main" {
			print $1, $2 }' | sort -u
}

# The mirror the extra suites come from, with a trailing slash, from the
# machine's suites ($1, or read anew).
mirror() {
	local m

	m=$(awk '$2 !~ /-security$/ { print $1; exit }' <<< "${1:-$(machine_sources)}")
	[ -n "$m" ] || die "no Debian mirror with a main component in the machine's apt sources"
	echo "${m%/}/"
}

# "URI SUITE" for every suite the private state knows: the extra suites
# in their order, then the machine's.
all_suites() {
	local machine mirror s

	machine=$(machine_sources)
	mirror=$(mirror "$machine")
	for s in $extra_suites; do
		echo "$mirror $s"
	done
	echo "$machine"
}

# The request's architectures: --arch, else those of the PKG:ARCH
# arguments, else the machine's.
request_arches() {
	local p a out=

	if [ -n "$arch" ]; then
		echo "$arch"
		return
	fi
	for p; do
		a=$host_arch
		[[ $p != *:* ]] || a=${p##*:}
		[[ $known_arches == *" $a "* ]] ||
			die "architecture $a of $p: the private state has$known_arches only"
		[[ " $out " == *" $a "* ]] || out="$out $a"
	done
	echo "${out:-$host_arch}"
}

# The request's suites ("URI SUITE" lines): --suite's release, else all.
request_suites() {
	all_suites | awk -v s="$suite" 's == "" || $2 == s || index($2, s "-") == 1'
}

# Point apt ($apt_opts) at the suites of the "URI SUITE" lines $2, for
# the architectures $1: a sources file and a binary cache per set of
# sources, written once (apt rebuilds a cache older than its sources
# file); those unused for a day go.
apt_opts=()
use_sources() {
	local uri s a key list

	list=$(while read -r uri s; do
		for a in $1; do
			echo "deb [arch=$a signed-by=$keyring] $uri $s main"
		done
	done <<< "$2")
	key=$(cksum <<< "$list" | cut -d ' ' -f 1)
	mkdir -p "$cache/cache/archives/partial" || die "cannot create $cache/cache"
	find "$cache/cache" -maxdepth 1 -name '*-*.*' -atime +0 -delete 2> /dev/null || true
	[ -f "$cache/cache/sources-$key.list" ] ||
		echo "$list" > "$cache/cache/sources-$key.list"
	apt_opts=(
		-o "Dir::Etc::SourceList=$cache/cache/sources-$key.list"
		-o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$cache/lists"
		-o Dir::State::status=/dev/null
		-o "Dir::Cache=$cache/cache"
		-o "Dir::Cache::pkgcache=pkgcache-$key.bin"
		-o "Dir::Cache::srcpkgcache=srcpkgcache-$key.bin"
		-o APT::Sandbox::User=root
		-o Acquire::Languages=none
		-o Debug::NoLocking=1
		-o APT::Get::List-Cleanup=false
		-o "APT::Architecture=$host_arch"
	)
	for a in $1; do
		apt_opts+=(-o "APT::Architectures::=$a")
	done
}

# The indexes that could not be fetched, "SUITE/ARCH (message)", for the
# one line of a request that then cannot be met.
unfetched=

# Whether the lists hold suite $1's index for architecture $2.
has_list() {
	compgen -G "$cache/lists/*_dists_$1_main_binary-$2_Packages*" > /dev/null
}

# Download the package lists of suite $2 (at URI $1) for architectures
# $3, each unless fetched within a day, one architecture at a time (apt
# drops a whole suite when one of its indexes fails); an index that
# fails is tried once more, then named in a warning and in $unfetched.
fetch_suite() {
	local uri=$1 s=$2 a again log msg stamp ok mirror=${1#*://}

	mkdir -p "$cache/lists/partial" "$cache/stamps" || die "cannot create $cache"
	log=$cache/update.log
	for a in $3; do
		stamp=$cache/stamps/${mirror//\//_}$s-$a
		if [ -n "$(find "$stamp" -mmin -1440 2>/dev/null)" ] && has_list "$s" "$a"; then
			continue
		fi
		ok=
		for again in "" " again"; do
			use_sources "$a" "$uri $s"
			echo "$prog: downloading the $s package list ($a) into $cache$again" >&2
			# A failed connection is only a warning to apt without
			# --error-on=any; no binary cache for a one-index set.
			if apt-get "${apt_opts[@]}" -o Dir::Cache::pkgcache= \
				-o Dir::Cache::srcpkgcache= -q --error-on=any update \
				< /dev/null > "$log" 2>&1 && has_list "$s" "$a"; then
				touch "$stamp"
				ok=1
				break
			fi
		done
		[ -z "$ok" ] || continue
		msg=$(grep -m 1 -E '^(E|W): ' "$log" | sed -E 's/^(E|W): //; s/^Failed to fetch [^ ]* *//')
		[ -n "$msg" ] || msg=$(tail -n 1 "$log")
		echo "$prog: warning: the $s index for $a could not be fetched: $msg" >&2
		unfetched="${unfetched:+$unfetched; }$s/$a ($msg)"
	done
}

# The lists of the request's suites and architectures (see above).
ensure_lists() {
	local uri s

	while read -r uri s; do
		fetch_suite "$uri" "$s" "$arches"
	done <<< "$suites"
	use_sources "$arches" "$suites"
}

# A package the request cannot have: one line, naming what could not be
# fetched.
unknown() {
	if [ -n "$unfetched" ]; then
		die "package $1 is in none of the indexes fetched; not fetched: $unfetched: try again later"
	fi
	die "package $1 unknown to the private apt state"
}

# The candidate version of package $1 (NAME[:ARCH]) in apt's lists, or
# nothing: of that name exactly (apt-cache takes a name that no package
# has, such as linux-source-6.1 in trixie's lists, as a pattern).
version_of() {
	{ apt-cache "${apt_opts[@]}" show --no-all-versions "$1" 2> /dev/null || true; } |
		awk -v p="${1%:*}" '/^Package: / { ok = ($2 == p) }
				     ok && /^Version: / { print $2; exit }'
}

# One .deb, downloaded once: a finished file is only ever renamed into
# place, so a failed download leaves nothing behind.
download_one() {
	local pkg=$1 tmp deb name=${1%:*} arch=$host_arch ver

	[ "$name" = "$pkg" ] || arch=${pkg##*:}
	# The candidate version, as apt-get download names its file.
	ver=$(version_of "$pkg")
	[ -n "$ver" ] || unknown "$pkg"
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
	lines=$(machine_sources | sed 's/^/deb /; s/$/ main/')
	[ -n "$lines" ] || die "no Debian suite with a main component in the machine's apt sources"
	echo "$lines"
	exit 0
fi

[ -f "$keyring" ] || die "$keyring missing (package debian-archive-keyring)"
mkdir -p "$cache/debs" || die "cannot create $cache"
exec 9> "$cache/.lock"
flock 9
# With --arch, a package named without its architecture is ARCH's.
if [ -n "$arch" ] && [[ $cmd =~ ^(download|version|depends)$ ]]; then
	# shellcheck disable=SC2046 # package names are words
	set -- $(printf "%s\n" "$@" | sed "/:/!s/\$/:$arch/")
fi
suites=$(request_suites)
[ -n "$suites" ] || die "no suite of release $suite in the private state"
case $cmd in
download | version | depends) arches=$(request_arches "$@") ;;
*) arches=$(request_arches) ;;
esac

case $cmd in
update)
	[ $# -eq 0 ] || usage
	ensure_lists
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
	version_of "$1" | grep . || unknown "$1"
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
			unknown "$pkg"
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
		# An arch-all package, in every architecture's index: the
		# machine's, one suite at a time, up to the first that lists it.
		found=
		while read -r uri s; do
			case $s in sid | experimental) continue ;; esac
			fetch_suite "$uri" "$s" "$arches"
			use_sources "$arches" "$uri $s"
			if [ -n "$(version_of "linux-source-$1")" ]; then
				found=1
				break
			fi
		done <<< "$suites"
		[ -n "$found" ] || unknown "linux-source-$1"
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
