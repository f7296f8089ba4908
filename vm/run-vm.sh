#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot a kernel in QEMU and run the readahead selftest suite inside it.
#
#   vm/run-vm.sh --kernel <bzImage|vmlinuz> [options]
#
# The guest is a throw-away initramfs (busybox, mkfs.ext4, mkfs.xfs,
# losetup, the suite's binaries and their shared libraries, plus the loop,
# ext4 and xfs modules when the kernel is modular; mkfs.btrfs, mkfs.f2fs
# and their modules where there are).  Nothing is written to
# disk images; all temporary files live in one directory that is removed on
# exit.
#
# The kernel's architecture is read from its image: x86-64 (QEMU's pc
# machine), arm64 (virt, -cpu max, any page size) or ppc64le (pseries,
# POWER9).  For an architecture other than the host's, the programs come
# from that architecture's Debian packages (vm/guest-root.sh), the test
# binaries must be built for it (make ARCH=arm64 or ARCH=powerpc, static),
# and QEMU emulates it (TCG).
#
# Output:
#   stdout  "# guest kernel: <uname -r>" followed by the suite's TAP,
#           unchanged, as the guest prints it.
#   stderr  nothing on success (unless --verbose); one line on failure.
#
# Exit status:
#   the suite's exit status when it ran to completion,
#   2 for usage errors (bad option, missing file),
#   3 for infrastructure failures (kernel does not boot, kernel panic,
#     missing module, timeout, QEMU failure).
#
# The guest has two serial channels: the kernel console (ttyS0, ttyAMA0 or
# hvc0) goes to a log file only, the suite channel (ttyS1, a virtio console
# hvc0 on arm64, a second vty hvc1 on pseries; its driver must be built in)
# carries the suite's output (and a few marker lines used to find the start
# and end of the suite and its exit status), so TAP is never interleaved
# with kernel messages.  On failure the console log is kept and its path
# printed.

set -euo pipefail

prog=${0##*/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")

EXIT_USAGE=2
EXIT_INFRA=3

# Defaults.
kernel=
modules=
mem=2G
smp=1
cmdline=
timeout=600
boot_timeout=60
build=$repo/build
runner=
log=
accel=auto
pvh=auto
verbose=0
envs=()
programs=()

usage() {
	cat <<EOF
usage: $prog --kernel <bzImage|vmlinuz> [options]

  --kernel FILE        kernel image to boot (required)
  --modules DIR|DEB    kernel modules: a /lib/modules/<release> directory, a
                       tree containing lib/modules/<release>, or a
                       linux-image .deb (not needed for a kernel with loop,
                       ext4 and xfs built in)
  --mem SIZE           guest memory, QEMU syntax (default: $mem)
  --smp N              guest CPUs (default: $smp)
  --cmdline "ARGS"     extra kernel command line arguments
  --timeout SECONDS    kill the guest after this long (default: $timeout)
  --boot-timeout SECONDS
                       fail if the suite has not started after this long
                       (default: $boot_timeout)
  --build DIR          directory with the test binaries (default: build/)
  --runner FILE|none   script that runs the suite in the guest (default:
                       run-suite.sh of the build directory, else
                       scripts/run-suite.sh of the repository); "none" runs
                       every executable of the build directory in turn;
                       with a runner FILE the build directory may hold no
                       test binaries (e.g. job files for a program below)
  --program NAME       also copy this host program and its shared libraries
                       into the guest's PATH (repeatable)
  --env NAME=VALUE     export a variable to the suite (repeatable)
  --log FILE           where to write the guest console log (always written
                       when given; on failure a temporary file otherwise)
  --accel auto|kvm|tcg use KVM only if it is usable (default: $accel)
  --pvh auto|no        boot the decompressed kernel through its PVH entry
                       point when it has one (default: $pvh)
  -v, --verbose        print progress and timing on stderr
  -h, --help           this text

Exit status: the suite's status; 2 usage error; 3 infrastructure failure.
EOF
}

# One line on stderr, then exit with the given status.
usage_error() {
	echo "$prog: $*" >&2
	exit "$EXIT_USAGE"
}

die() {
	echo "$prog: $*" >&2
	exit "$EXIT_INFRA"
}

info() {
	if [ "$verbose" = 1 ]; then
		echo "$prog: $*" >&2
	fi
}

# Set $now to the current time in microseconds (without a subshell: it is
# called for every line the guest prints).
set_now() {
	now=${EPOCHREALTIME//[!0-9]/}
	now=$((10#$now))
}
set_now
t0=$now

# Seconds since the script started, for --verbose.
elapsed() {
	local now

	set_now
	printf '%d.%02d' $(((now - t0) / 1000000)) $(((now - t0) % 1000000 / 10000))
}

# ---------------------------------------------------------------------------
# Command line

need_arg() {
	[ "$2" -ge 2 ] || usage_error "option $1 needs an argument (see --help)"
}

while [ $# -gt 0 ]; do
	# Accept both "--opt value" and "--opt=value".
	if [[ $1 == --*=* ]]; then
		opt=${1%%=*}
		val=${1#*=}
		shift
		set -- "$opt" "$val" "$@"
	fi
	case $1 in
	--kernel) need_arg "$1" $#; kernel=$2; shift 2 ;;
	--modules) need_arg "$1" $#; modules=$2; shift 2 ;;
	--mem) need_arg "$1" $#; mem=$2; shift 2 ;;
	--smp) need_arg "$1" $#; smp=$2; shift 2 ;;
	--cmdline) need_arg "$1" $#; cmdline=$2; shift 2 ;;
	--timeout) need_arg "$1" $#; timeout=$2; shift 2 ;;
	--boot-timeout) need_arg "$1" $#; boot_timeout=$2; shift 2 ;;
	--build) need_arg "$1" $#; build=$2; shift 2 ;;
	--runner) need_arg "$1" $#; runner=$2; shift 2 ;;
	--env) need_arg "$1" $#; envs+=("$2"); shift 2 ;;
	--program) need_arg "$1" $#; programs+=("$2"); shift 2 ;;
	--log) need_arg "$1" $#; log=$2; shift 2 ;;
	--accel) need_arg "$1" $#; accel=$2; shift 2 ;;
	--pvh) need_arg "$1" $#; pvh=$2; shift 2 ;;
	-v | --verbose) verbose=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage_error "unknown argument '$1' (see --help)" ;;
	esac
done

[ -n "$kernel" ] || usage_error "--kernel is required (see --help)"
[ -e "$kernel" ] || usage_error "kernel image '$kernel' does not exist"
if [ ! -f "$kernel" ] || [ ! -r "$kernel" ]; then
	usage_error "kernel image '$kernel' is not a readable file"
fi
[[ $mem =~ ^[0-9]+[KMGT]?$ ]] || usage_error "bad --mem '$mem' (e.g. 2G or 2048M)"
[[ $smp =~ ^[1-9][0-9]*$ ]] || usage_error "bad --smp '$smp'"
[[ $timeout =~ ^[1-9][0-9]*$ ]] || usage_error "bad --timeout '$timeout' (seconds)"
[[ $boot_timeout =~ ^[1-9][0-9]*$ ]] || usage_error "bad --boot-timeout '$boot_timeout' (seconds)"
case $accel in auto | kvm | tcg) ;; *) usage_error "bad --accel '$accel'" ;; esac
case $pvh in auto | no) ;; *) usage_error "bad --pvh '$pvh'" ;; esac
[ -d "$build" ] || usage_error "build directory '$build' does not exist; build the suite first"
if [ -z "$modules" ]; then
	:
elif [ ! -e "$modules" ]; then
	usage_error "modules '$modules' does not exist"
fi
for kv in ${envs[@]+"${envs[@]}"}; do
	[[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage_error "bad --env '$kv' (expected NAME=VALUE)"
done
if [ -n "$runner" ] && [ "$runner" != none ] && [ ! -f "$runner" ]; then
	usage_error "runner '$runner' does not exist"
fi

for tool in cpio gzip; do
	command -v "$tool" >/dev/null || die "$tool not found on the host"
done

# ---------------------------------------------------------------------------
# Temporary directory, cleanup

tmp=$(mktemp -d "${TMPDIR:-/tmp}/run-vm.XXXXXX")
qemu_pid=

stop_qemu() {
	if [ -n "$qemu_pid" ]; then
		kill -KILL "$qemu_pid" 2>/dev/null || true
		wait "$qemu_pid" 2>/dev/null || true
		qemu_pid=
	fi
}

# shellcheck disable=SC2317 # called from the trap
cleanup() {
	stop_qemu
	if [ -n "${reader_pid:-}" ]; then
		kill "$reader_pid" 2>/dev/null || true
		wait "$reader_pid" 2>/dev/null || true
	fi
	if [ -n "${pvh_pid:-}" ]; then
		kill "$pvh_pid" 2>/dev/null || true
		wait "$pvh_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Keep the guest console log: copy it to --log or to a new temporary file
# (outside $tmp, which is removed on exit) and print the path.
save_log() {
	local dest=$log

	if [ -z "$dest" ]; then
		dest=$(mktemp "${TMPDIR:-/tmp}/run-vm-console.XXXXXX") || return 0
	fi
	{
		cat "$tmp/console.log" 2>/dev/null || true
		if [ -s "$tmp/qemu.err" ]; then
			echo "--- QEMU stderr ---"
			cat "$tmp/qemu.err"
		fi
	} >"$dest"
	echo "$dest"
}

# Infrastructure failure after the guest was started: one line including
# the console log path.
guest_fail() {
	stop_qemu
	die "$* (console log: $(save_log))"
}

# ---------------------------------------------------------------------------
# Kernel image

# An x86 bzImage has "HdrS" (48 64 72 53) at offset 0x202 and a pointer
# to the version string at 0x20e (relative to 0x200).  The first word of
# that string is the release, as printed by uname -r.  An arm64 Image has
# "ARMd" at 0x38 (Debian's vmlinuz is one); an ELF vmlinux (ppc64le's)
# names its machine at 18.  Those two carry the release in their banner.
kver=
karch=
# od fails to skip past the end of a file shorter than the header
magic=$(od -An -tx1 -j514 -N4 "$kernel" 2>/dev/null | tr -d ' \n') || magic=
if [ "$magic" = 48647253 ]; then
	karch=x86
	off=$(od -An -tu2 -j526 -N2 "$kernel" | tr -d ' ')
	if [ -n "$off" ] && [ "$off" -gt 0 ]; then
		kver=$(dd if="$kernel" bs=1 skip=$((off + 512)) count=256 2>/dev/null |
			tr '\0' '\n' | head -n 1 | awk '{ print $1 }')
	fi
else
	if [ "$(od -An -c -j56 -N4 "$kernel" 2>/dev/null | tr -d ' ')" = ARMd ]; then
		karch=arm64
	elif [ "$(head -c 4 "$kernel")" = $'\x7fELF' ]; then
		case $(od -An -tu2 -j18 -N2 "$kernel" | tr -d ' ') in
		62) karch=x86 ;;
		183) karch=arm64 ;;
		21) karch=powerpc ;;
		esac
	fi
	[ -n "$karch" ] ||
		usage_error "'$kernel' is not a kernel image this runner boots (x86 bzImage or ELF, arm64 Image, ppc64le vmlinux)"
	if [ "$karch" != x86 ]; then
		kver=$(LC_ALL=C grep -a -m 1 -o 'Linux version [^ ]*' "$kernel" | awk '{ print $3 }')
	fi
fi
info "kernel release: ${kver:-unknown}, architecture $karch"

# An ELF file (a program or a kernel image).
is_elf() {
	local magic=

	LC_ALL=C read -r -n 4 magic <"$1" 2>/dev/null || true
	[ "$magic" = $'\x7fELF' ]
}

# The architecture's QEMU machine, kernel console and suite channel.  A
# guest of the host's architecture runs the host's programs; another one
# runs Debian's for its architecture, from guest_root.
case $(uname -m) in
x86_64) host_arch=x86 ;;
aarch64) host_arch=arm64 ;;
ppc64le) host_arch=powerpc ;;
*) host_arch=$(uname -m) ;;
esac
case $karch in
x86)
	qemu=${QEMU:-qemu-system-x86_64} debarch=amd64 elf_machine=62
	triplet=x86_64-linux-gnu
	# Without ERMS and FSRM the kernel clears and copies pages with
	# rep stosq/movsq: a quarter less time under TCG than byte-wise
	# rep stosb/movsb, which TCG runs one byte at a time.
	machine=(-machine pc) tcg_cpu=max,erms=off,fsrm=off console=ttyS0 channel=ttyS1
	channel_dev=(-serial chardev:suite)
	;;
arm64)
	qemu=${QEMU:-qemu-system-aarch64} debarch=arm64 elf_machine=183
	triplet=aarch64-linux-gnu
	# Pointer authentication with QEMU's own algorithm: the kernel signs
	# every return address, and TCG's QARMA5 triples the suite's time.
	machine=(-machine virt) tcg_cpu=max,pauth-impdef=on console=ttyAMA0 channel=hvc0
	channel_dev=(-device virtio-serial-pci -device 'virtconsole,chardev=suite')
	;;
powerpc)
	# The speculation workarounds are not emulated: broken is what TCG
	# gives, said so that QEMU does not warn.
	qemu=${QEMU:-qemu-system-ppc64} debarch=ppc64el elf_machine=21
	triplet=powerpc64le-linux-gnu
	machine=(-machine 'pseries,cap-cfpc=broken,cap-sbbc=broken,cap-ibs=broken,cap-ccf-assist=off')
	tcg_cpu=power9 console=hvc0 channel=hvc1
	channel_dev=(-device 'spapr-vty,chardev=suite')
	;;
esac
command -v "$qemu" >/dev/null || die "$qemu not found on the host (for the $karch kernel)"
# The test binaries must be the kernel's architecture's.
while IFS= read -r -d '' f; do
	is_elf "$f" || continue
	[ "$(od -An -tu2 -j18 -N2 "$f" | tr -d ' ')" = "$elf_machine" ] ||
		usage_error "'${f#"$build/"}' in '$build' is not built for $karch (build the suite with make ARCH=$karch)"
done < <(find -L "$build" -type f -perm /111 -print0)
guest_root=
if [ "$karch" != "$host_arch" ]; then
	[ "$accel" != kvm ] || usage_error "--accel kvm: the $karch kernel is emulated on this $host_arch host"
	accel=tcg
	guest_root=$("$here/guest-root.sh" "$debarch") || die "no $debarch userland for the guest"
else
	for tool in busybox ldd; do
		command -v "$tool" >/dev/null || die "$tool not found on the host"
	done
fi

# Booting through the PVH entry point of the decompressed kernel saves the
# firmware and the in-guest decompression of the bzImage, several seconds
# under TCG.  It needs a kernel built with CONFIG_PVH (Debian's are) and a
# host tool for the bzImage's compression; otherwise the bzImage is booted.
boot_image=$kernel
pvh_image() {
	local sects start len magic size
	local -a dec

	sects=$(od -An -tu1 -j$((0x1f1)) -N1 "$kernel" | tr -d ' ')
	[ "$sects" != 0 ] || sects=4
	start=$(od -An -tu4 -j$((0x248)) -N4 "$kernel" | tr -d ' ')
	len=$(od -An -tu4 -j$((0x24c)) -N4 "$kernel" | tr -d ' ')
	start=$(((sects + 1) * 512 + start))
	# A truncated image is left for the boot to fail on.
	[ $((start + len)) -le "$(stat -c %s "$kernel")" ] || return 1
	magic=$(od -An -tx1 -j"$start" -N4 "$kernel" | tr -d ' \n')
	case $magic in
	1f8b*) dec=(gzip -dc) ;;
	fd377a58) dec=(xz -dc) ;;
	28b52ffd) dec=(zstd -qdc) ;;
	02214c18) dec=(lz4 -dc) ;;
	425a68*) dec=(bzip2 -dc) ;;
	*) return 1 ;;
	esac
	command -v "${dec[0]}" >/dev/null || return 1
	# The tools complain about the size the kernel build appends; the
	# result is checked against that size instead.
	tail -c +$((start + 1)) "$kernel" | head -c "$len" |
		"${dec[@]}" >"$tmp/vmlinux" 2>/dev/null || true
	size=$(od -An -tu4 -j$((start + len - 4)) -N4 "$kernel" | tr -d ' ')
	[ "$(stat -c %s "$tmp/vmlinux")" = "$size" ] || return 1
	# An ELF note "Xen" of type 0x12 (XEN_ELFNOTE_PHYS32_ENTRY).
	LC_ALL=C grep -qaP '\x04\x00\x00\x00[\x04\x08]\x00\x00\x00\x12\x00\x00\x00Xen\x00' "$tmp/vmlinux"
}

# ---------------------------------------------------------------------------
# Kernel modules

# Modules the suite needs.  Each must be built in or found in --modules.
needed_modules=(loop ext4 xfs)
# Modules of the filesystems some variants run on: a kernel that has none
# of one skips them. btrfs asks the crypto API for crc32c at mount (a
# softdep modprobe would load; 6.18 has it as a module of its own).
optional_modules=(btrfs crypto-crc32c f2fs)
module_files=() # host paths, in load order

# Add the files of "insmod <path>" lines of modprobe --show-depends $1.
add_module_files() {
	local entry path _
	while read -r entry path _; do
		[ "$entry" = insmod ] || continue
		case $seen in *" $path "*) continue ;; esac
		seen="$seen$path "
		module_files+=("$path")
	done <<<"$1"
}

# Find the lib/modules/<release> directory in what --modules points to.
find_moddir() {
	local src=$1 d
	local candidates=()

	if [ -e "$src/modules.order" ] || [ -e "$src/modules.dep" ] ||
		[ -e "$src/modules.builtin" ] || [ -d "$src/kernel" ]; then
		echo "$src"
		return
	fi
	for d in "$src"/lib/modules/*/ "$src"/usr/lib/modules/*/ "$src"/*/; do
		d=${d%/}
		if [ -e "$d/modules.order" ] || [ -e "$d/modules.dep" ] ||
			[ -e "$d/modules.builtin" ]; then
			candidates+=("$d")
		fi
	done
	if [ ${#candidates[@]} -gt 1 ] && [ -n "$kver" ]; then
		for d in "${candidates[@]}"; do
			if [ "${d##*/}" = "$kver" ]; then
				echo "$d"
				return
			fi
		done
	fi
	if [ ${#candidates[@]} -eq 1 ]; then
		echo "${candidates[0]}"
	fi
}

resolve_modules() {
	local src=$modules moddir ver base entry name out path seen=" "

	if [ -f "$src" ]; then
		case $src in
		*.deb) ;;
		*) usage_error "--modules must be a directory or a .deb, got '$src'" ;;
		esac
		command -v dpkg-deb >/dev/null || die "dpkg-deb not found, cannot unpack '$src'"
		info "unpacking $src"
		mkdir "$tmp/deb"
		dpkg-deb -x "$src" "$tmp/deb" || die "cannot unpack '$src'"
		src=$tmp/deb
	fi
	moddir=$(find_moddir "$src")
	[ -n "$moddir" ] || die "no lib/modules/<release> directory found in '$modules'"
	ver=${kver:-${moddir##*/}}
	info "modules from $moddir"

	# modprobe and depmod want <base>/lib/modules/<release>: build one
	# from symlinks so that the given tree is never written to.
	base=$tmp/modbase
	mkdir -p "$base/lib/modules/$ver"
	moddir=$(readlink -f "$moddir")
	ln -s "$moddir"/* "$base/lib/modules/$ver/"
	if [ ! -e "$moddir/modules.dep" ]; then
		# Distribution packages ship no modules.dep (it is made at
		# install time).  depmod replaces files by renaming, so it only
		# touches our symlink directory.
		info "running depmod"
		depmod -b "$base" "$ver" 2>"$tmp/depmod.err" ||
			die "depmod failed on '$moddir': $(head -n 1 "$tmp/depmod.err")"
	fi

	# modprobe --show-depends prints, in load order, "insmod <path>" for
	# the module, its dependencies and pre-softdeps, or "builtin <name>".
	mkdir -p "$tmp/modprobe.d"
	for name in "${needed_modules[@]}"; do
		if ! out=$(modprobe -C "$tmp/modprobe.d" -d "$base" -S "$ver" \
			--show-depends "$name" 2>&1); then
			die "module '$name' not found in '$moddir' and not built in"
		fi
		add_module_files "$out"
	done
	for name in "${optional_modules[@]}"; do
		out=$(modprobe -C "$tmp/modprobe.d" -d "$base" -S "$ver" \
			--show-depends "$name" 2>/dev/null) || continue
		add_module_files "$out"
	done

	# A module tree for another kernel would fail later with a less
	# obvious error: compare the release in vermagic with the image.
	if [ -n "$kver" ] && [ ${#module_files[@]} -gt 0 ]; then
		out=$(modinfo -F vermagic "${module_files[0]}" 2>/dev/null | awk '{ print $1 }')
		if [ -n "$out" ] && [ "$out" != "$kver" ]; then
			die "modules in '$moddir' are for $out, but the kernel is $kver"
		fi
	fi
}

if [ -n "$modules" ]; then
	command -v modprobe >/dev/null || die "modprobe (kmod) not found on the host"
	resolve_modules
fi

# Decompress in the background while the initramfs is built.
pvh_pid=
if [ "$pvh" = auto ] && [ "$magic" = 48647253 ]; then
	pvh_image &
	pvh_pid=$!
fi

# ---------------------------------------------------------------------------
# Initramfs

root=$tmp/root
mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,dev,proc,sys,tmp,etc,run,root,suite,modules}
# Merged /usr layout, as on Debian: one copy of everything.
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"

# Copy one file (following symlinks) to the same path in the guest, or to
# the guest path given as $2.  /lib/x becomes /usr/lib/x etc.
add_file() {
	local dest=${2:-$1}

	case $dest in
	/lib/* | /lib64/* | /bin/* | /sbin/*) dest=/usr$dest ;;
	esac
	dest=$root$dest
	[ -e "$dest" ] && return 0
	[ -d "${dest%/*}" ] || mkdir -p "${dest%/*}"
	cp -L "$1" "$dest"
}

# ELF files whose shared libraries must be copied.
elf_files=()


# Copy a program of the host (or of guest_root) to /usr/bin or /usr/sbin.
add_program() {
	local name=$1 required=$2 path dir d

	path=
	if [ -n "$guest_root" ]; then
		for d in /usr/sbin /usr/bin /sbin /bin; do
			[ ! -e "$guest_root$d/$name" ] || { path=$guest_root$d/$name; break; }
		done
	else
		path=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH command -v "$name" || true)
	fi
	if [ -z "$path" ]; then
		[ "$required" = required ] && die "$name not found ${guest_root:+in $guest_root}${guest_root:-on the host}"
		return 0
	fi
	case $path in */sbin/*) dir=/usr/sbin ;; *) dir=/usr/bin ;; esac
	add_file "$path" "$dir/$name"
	elf_files+=("$path")
}

# Tools the suite relies on (mke2fs is what mkfs.ext4 points to).
# coreutils' timeout is needed by the kselftest runner (--foreground);
# util-linux's fallocate punches the XFS log out of images on a small guest.
add_program mkfs.ext4 required
add_program mkfs.xfs required
add_program losetup required
for p in mke2fs timeout mkfs.btrfs mkfs.f2fs fallocate; do
	add_program "$p" optional
done
[ -f "$guest_root/etc/mke2fs.conf" ] && add_file "$guest_root/etc/mke2fs.conf" /etc/mke2fs.conf

# dash is /bin/sh, as on Debian: busybox's own sh runs its applets in
# preference to the programs in PATH (e.g. its losetup, which lacks --show).
add_program dash optional
for p in ${programs[@]+"${programs[@]}"}; do
	add_program "$p" required
done
[ ! -e "$root/usr/bin/dash" ] || ln -s dash "$root/usr/bin/sh"

# Busybox provides every other command.  Its applet links are
# made by the guest init ("busybox --install" keeps existing files, so the
# real programs copied above take precedence).
add_program busybox required

ln -s /proc/self/mounts "$root/etc/mtab"
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"
# Let the kernel give init a console before devtmpfs is mounted; init
# reopens /dev/console anyway if this fails.
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true

# The suite: the whole build directory (test binaries and, when the
# Makefile installs them, run-suite.sh, settings and the kselftest runner).
cp -RL "$build/." "$root/suite/" || die "cannot copy '$build'"
ntests=0
need_bash=0
while IFS= read -r -d '' f; do
	if is_elf "$f"; then
		elf_files+=("$f")
		ntests=$((ntests + 1))
	elif head -n 1 "$f" | grep -q '^#!.*bash'; then
		need_bash=1
	fi
done < <(find "$root/suite" -type f -perm /111 -print0)
if [ "$ntests" = 0 ] && { [ -z "$runner" ] || [ "$runner" = none ]; }; then
	usage_error "no test binaries in '$build' (build the suite first)"
fi

# The runner: --runner, else run-suite.sh from the build directory, else
# scripts/run-suite.sh of the repository.  Without one, the init runs every
# executable itself.
if [ "$runner" = none ]; then
	rm -f "$root/suite/run-suite.sh"
	runner=
elif [ -n "$runner" ]; then
	cp -L "$runner" "$root/suite/run-suite.sh"
elif [ ! -f "$root/suite/run-suite.sh" ] && [ -f "$repo/scripts/run-suite.sh" ]; then
	runner=$repo/scripts/run-suite.sh
	cp -L "$runner" "$root/suite/run-suite.sh"
fi
if [ -f "$root/suite/run-suite.sh" ]; then
	chmod 755 "$root/suite/run-suite.sh"
	if head -n 1 "$root/suite/run-suite.sh" | grep -q '^#!.*bash'; then
		need_bash=1
	fi
fi
if [ "$need_bash" = 1 ]; then
	add_program bash required
fi
info "payload: $ntests ELF executable(s) from $build${runner:+, runner $runner}"

# Shared libraries of every ELF file.  Asking the dynamic loader directly
# is what ldd does, without ldd's extra run per file.  The loader crashes
# on a static executable: that prints nothing, like "not a dynamic
# executable", and the shell's report of the crash goes to /dev/null.
list_libs() {
	local ldso=/lib64/ld-linux-x86-64.so.2 f

	if [ ! -x "$ldso" ]; then
		ldd "$@" 2>/dev/null || true
		return
	fi
	(
		for f in "$@"; do
			"$ldso" --list "$f" || true
		done
	) 2>/dev/null
}
# Shared libraries of guest_root's programs: the interpreter and every
# DT_NEEDED, transitively, found in the root's library directories (the
# guest's loader searches those by default).  readelf reads any ELF.
guest_libs() {
	local -a todo=("$@")
	local f so d seen=" "

	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		for so in $(readelf -lW "$f" 2>/dev/null |
				sed -n 's|.*Requesting program interpreter: /\(.*\)\]|\1|p') \
			  $(readelf -dW "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			case $seen in *" ${so##*/} "*) continue ;; esac
			seen="$seen${so##*/} "
			# The interpreter at its own path, libraries by name.
			d=
			[[ $so != */* ]] || d=${so%/*}
			for d in $d lib/$triplet usr/lib/$triplet lib usr/lib; do
				[ -e "$guest_root/$d/${so##*/}" ] || continue
				if [[ $so == */* ]]; then
					echo "/$d/${so##*/} /$so"
				else
					echo "/$d/${so##*/} /$d/${so##*/}"
				fi
				todo+=("$guest_root/$d/${so##*/}")
				continue 2
			done
			echo "missing ${so##*/}"
		done
	done
}
if [ -n "$guest_root" ]; then
	command -v readelf >/dev/null || die "readelf (binutils) not found on the host"
	libs=$(guest_libs "${elf_files[@]}")
	missing=$(sed -n 's/^missing //p' <<<"$libs")
	[ -z "$missing" ] || die "shared libraries missing in $guest_root: $(echo "$missing" | sort -u | tr '\n' ' ')"
	while read -r f dest; do
		add_file "$guest_root$f" "$dest"
	done <<<"$libs"
else
	libs=$(list_libs "${elf_files[@]}")
	missing=$(awk '/=> not found/ { print $1 }' <<<"$libs")
	[ -z "$missing" ] || die "shared libraries missing on the host: $(echo "$missing" | sort -u | tr '\n' ' ')"
	mapfile -t libpaths < <(awk '
		$2 == "=>" && $3 ~ /^\// { print $3; next }
		$1 ~ /^\// && $1 !~ /:$/ { print $1 }' <<<"$libs" | sort -u)
	# One cp for all; /lib etc. are symlinks into /usr in the guest too.
	cp -L --parents "${libpaths[@]}" "$root/" || die "cannot copy shared libraries"

	# Library search path for anything outside the default directories.
	printf '%s\n' "${libpaths[@]%/*}" | sort -u >"$root/etc/ld.so.conf"
	ldconfig -r "$root" 2>/dev/null || true
fi

# Modules, decompressed (busybox insmod may not read .ko.xz), listed in
# load order.
: >"$root/etc/modules.load"
for m in ${module_files[@]+"${module_files[@]}"}; do
	name=${m##*/}
	case $name in
	*.ko.xz) name=${name%.xz}; xz -dc "$m" >"$root/modules/$name" ;;
	*.ko.zst) name=${name%.zst}; zstd -qdc "$m" >"$root/modules/$name" ;;
	*.ko.gz) name=${name%.gz}; gzip -dc "$m" >"$root/modules/$name" ;;
	*) cp -L "$m" "$root/modules/$name" ;;
	esac || die "cannot decompress module $m"
	echo "$name" >>"$root/etc/modules.load"
done

# Signed modules (Debian's are signed with a key built into its kernel
# image): the guest kernel loads only those that verify, so modules that
# vm/debian-kernel.sh had to take from outside apt are checked by the
# kernel image apt verified.
modsig=
for m in "$root"/modules/*.ko; do
	if [ -f "$m" ] && [ "$(tail -c 28 "$m")" = '~Module signature appended~' ]; then
		modsig=module.sig_enforce=1
	fi
	break
done

# Variables for the suite, quoted for sh.
: >"$root/etc/suite.env"
for kv in ${envs[@]+"${envs[@]}"}; do
	name=${kv%%=*}
	value=${kv#*=}
	printf "export %s='%s'\n" "$name" "${value//\'/\'\\\'\'}" >>"$root/etc/suite.env"
done

# Marker lines on the suite channel; the random part keeps a test from
# printing one by accident.
mark="@@run-vm-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"

cat >"$root/init" <<EOF
#!/usr/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
# Guest init generated by run-vm.sh: set up the system, load modules, run
# the suite with its output on ttyS1, report the exit status, power off.

export PATH=/usr/sbin:/usr/bin HOME=/root
/usr/bin/busybox mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
/usr/bin/busybox mount -t proc proc /proc
/usr/bin/busybox --install -s /usr/bin
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
# devtmpfs lacks the links udev would make (the kselftest runner writes
# to /dev/stdout).
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mkdir -p /dev/shm /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t devpts devpts /dev/pts 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
# cgroup v2 with the memory and io controllers enabled for children, as
# systemd sets it up (the thrash tests make cgroups of their own there).
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null &&
	echo "+memory +io" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null

# $channel is the suite channel: raw, so that output is passed as it is.
# Its driver may register it late; without it, writing there would fill a
# plain file in /dev.
i=0
while [ ! -c /dev/$channel ] && [ \$i -lt 50 ]; do
	sleep 0.1
	i=\$((i + 1))
done
if [ ! -c /dev/$channel ]; then
	echo "run-vm: no suite channel /dev/$channel (its driver must be built in)"
	poweroff -f
fi
exec 3>/dev/$channel
stty -F /dev/$channel raw -echo 2>/dev/null
say() { echo "\$*" >&3; }
# Progress notes for the console log, with the uptime.
note() {
	read -r up _ </proc/uptime
	echo "[\$up] run-vm: \$*"
}
note "init started"
finish() {
	note "exit status \$1, powering off"
	if [ "\$1" != 0 ]; then
		# Put the whole kernel log in the console log kept on failure,
		# and give the console a moment to send it.
		echo "run-vm: kernel log (dmesg) follows"
		dmesg
		sleep 1
	fi
	say "$mark-END \$1"
	# The last close of the tty waits until its output has been sent.
	exec 3>&-
	poweroff -f
	sleep 60
}

# KVM probe boot: only show that the guest gets this far.
if grep -qw run_vm_probe /proc/cmdline; then
	say "$mark-PROBE"
	finish 0
fi

while read -r m; do
	[ -n "\$m" ] || continue
	name=\${m%.ko}
	name=\$(echo "\$name" | tr - _)
	note "insmod \$m"
	if ! insmod "/modules/\$m" 2>/tmp/insmod.err; then
		# Already loaded (e.g. by a dependency) is fine.
		[ -d "/sys/module/\$name" ] && continue
		case " loop ext4 xfs " in
		*" \$name "*)
			say "$mark-ERROR cannot load module \$name: \$(head -n 1 /tmp/insmod.err)"
			finish 3
			;;
		esac
		echo "run-vm: warning: cannot load \$m: \$(head -n 1 /tmp/insmod.err)"
	fi
done </etc/modules.load

# Without --modules these must be built in.
missing=
[ -e /dev/loop-control ] || [ -d /sys/module/loop ] || missing="\$missing loop"
grep -qw ext4 /proc/filesystems || missing="\$missing ext4"
grep -qw xfs /proc/filesystems || missing="\$missing xfs"
if [ -n "\$missing" ]; then
	say "$mark-ERROR the guest kernel lacks\$missing (not built in; give --modules)"
	finish 3
fi

set -a
. /etc/suite.env
set +a

note "starting the suite"
say "$mark-START"
say "# guest kernel: \$(uname -r)"
cd /suite
if [ -x /suite/run-suite.sh ]; then
	/suite/run-suite.sh </dev/null >&3 2>&1 3>&-
	rc=\$?
else
	# No runner: run every executable in turn; KSFT_SKIP (4) is no failure.
	rc=0
	for t in /suite/*; do
		[ -f "\$t" ] && [ -x "\$t" ] || continue
		"\$t" </dev/null >&3 2>&1 3>&-
		r=\$?
		if [ \$r -ne 0 ] && [ \$r -ne 4 ]; then
			rc=1
		fi
	done
fi
finish \$rc
EOF
chmod 755 "$root/init"

(cd "$root" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) |
	gzip -1 >"$tmp/initrd.gz" || die "cannot build the initramfs"
info "initramfs: $(du -k "$tmp/initrd.gz" | cut -f1) KiB, built at $(elapsed) s"

if [ -n "$pvh_pid" ] && wait "$pvh_pid"; then
	boot_image=$tmp/vmlinux
	info "booting the decompressed kernel through its PVH entry point"
fi
pvh_pid=

# ---------------------------------------------------------------------------
# QEMU

# Guest state filled in by run_guest.
g_started=0  # the start marker was seen
g_status=''  # exit status from the end marker
g_error=''   # error reported by the guest init
g_result=''  # finished|probe|exited|no-reader|panic|boot-timeout|timeout
g_first_tap='' # seconds from script start to the first suite line

# The suite channel is read by awk (bash reads pipes a byte at a time):
# it prints the suite's lines as they come and records the markers in a
# state file that the main loop polls.  mawk needs -W interactive not to
# wait for a full buffer.
reader=(awk)
if command -v mawk >/dev/null; then
	reader=(mawk -W interactive)
fi
# shellcheck disable=SC2016 # awk program, not shell
reader_prog='
function note(s) { print s >> state; fflush(state) }
{ sub(/\r$/, "") }
$0 == mark "-START" { started = 1; note("START"); next }
$0 == mark "-PROBE" { note("PROBE"); exit }
index($0, mark "-END ") == 1 { note("END " substr($0, length(mark) + 6)); exit }
index($0, mark "-ERROR ") == 1 { note("ERROR " substr($0, length(mark) + 8)); next }
started {
	print
	fflush()
	if (!first && $0 !~ /^# guest kernel: /) { first = 1; note("FIRST") }
}'
reader_pid=

# Sleep without a subprocess: wait for input that never comes.
mkfifo "$tmp/idle"
exec 5<>"$tmp/idle"
nap() {
	read -r -t "$1" -u 5 _ || true
}

# Update the g_ variables from the reader's state file.
read_state() {
	local kind rest

	[ -f "$tmp/state" ] || return 0
	while read -r kind rest; do
		case $kind in
		START) g_started=1 ;;
		FIRST) [ -n "$g_first_tap" ] || g_first_tap=$(elapsed) ;;
		ERROR) g_error=$rest ;;
		END) g_status=$rest; g_result=finished ;;
		PROBE) g_result=probe ;;
		esac
	done <"$tmp/state"
}

# Stop the reader once QEMU is gone: it ends at end of file, which comes
# when no writer is left.  Opening the FIFO once here also releases a
# reader still waiting in open() because QEMU never started.
stop_reader() {
	local _

	[ -n "$reader_pid" ] || return 0
	exec 6<>"$tmp/tap.out"
	exec 6>&-
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		kill -0 "$reader_pid" 2>/dev/null || break
		nap 0.2
	done
	kill "$reader_pid" 2>/dev/null || true
	wait "$reader_pid" 2>/dev/null || true
	reader_pid=
}

# Run the guest until it reports its end (or the probe marker), panics,
# exits or times out.  $1: kvm|tcg, $2: extra kernel arguments,
# $3: seconds until the suite must start, $4: seconds in total.
run_guest() {
	local acc=$1 extra=$2 boot_limit=$3 limit=$4
	local start now last_check=0 cpu
	local -a args

	g_started=0 g_status='' g_error='' g_result='' g_first_tap=''
	rm -f "$tmp/console.log" "$tmp/qemu.err" "$tmp/state" "$tmp/tap.in" "$tmp/tap.out"
	# QEMU opens tap.in and tap.out read-write, so it never blocks.
	mkfifo "$tmp/tap.in" "$tmp/tap.out"
	"${reader[@]}" -v mark="$mark" -v state="$tmp/state" "$reader_prog" \
		<"$tmp/tap.out" &
	reader_pid=$!

	# Kernel console into the log file: loglevel=5 keeps
	# warnings, oopses and panics but not the slow-to-emulate boot chatter
	# (a later loglevel= in --cmdline wins).  panic=-1 with -no-reboot
	# makes QEMU exit at once on a panic.  cryptomgr.notests skips the
	# crypto self-tests, a second of boot time under TCG that has nothing
	# to do with the suite.  On x86, no_timer_check skips the check that
	# the timer interrupt arrives through the IO-APIC in time: under TCG
	# on a loaded host it can fail and panic the boot ("IO-APIC + timer
	# doesn't work", seen with Debian 7.3.4).
	if [ "$acc" = kvm ]; then cpu=host; else cpu=$tcg_cpu; fi
	if [ "$karch" = x86 ]; then extra="no_timer_check $extra"; fi
	args=(-nodefaults -no-user-config "${machine[@]}" -accel "$acc" -cpu "$cpu"
		-smp "$smp" -m "$mem" -display none -nic none -no-reboot
		-kernel "$boot_image" -initrd "$tmp/initrd.gz"
		-append "console=$console loglevel=5 panic=-1 cryptomgr.notests $modsig $cmdline $extra"
		-serial "file:$tmp/console.log"
		-chardev "pipe,id=suite,path=$tmp/tap" "${channel_dev[@]}")
	"$qemu" "${args[@]}" </dev/null >"$tmp/qemu.err" 2>&1 &
	qemu_pid=$!
	set_now
	start=$now

	while :; do
		nap 0.2
		read_state
		[ -z "$g_result" ] || break

		set_now
		if ! kill -0 "$qemu_pid" 2>/dev/null; then
			# Powered off or died: let the reader take in the rest
			# (normally the end marker) before judging.
			wait "$qemu_pid" 2>/dev/null || true
			qemu_pid=
			stop_reader
			read_state
			[ -n "$g_result" ] || g_result=exited
		elif ! kill -0 "$reader_pid" 2>/dev/null; then
			# The reader ended without the end marker (e.g. our
			# stdout was closed): the guest would block on output.
			g_result=no-reader
		elif [ $((now - last_check)) -ge 1000000 ]; then
			# The console is read once a second.
			last_check=$now
			if grep -q 'Kernel panic' "$tmp/console.log" 2>/dev/null; then
				g_result=panic
			elif [ "$g_started" = 0 ] && [ $((now - start)) -ge $((boot_limit * 1000000)) ]; then
				g_result=boot-timeout
			elif [ $((now - start)) -ge $((limit * 1000000)) ]; then
				g_result=timeout
			fi
		fi
		[ -z "$g_result" ] || break
	done

	# The guest powers itself off; there is nothing to wait for.
	stop_qemu
	stop_reader
}

# Use KVM only if it exists and can actually boot this kernel: a probe
# boot must reach the guest init quickly.
if [ "$accel" = auto ]; then
	accel=tcg
	if [ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
		info "probing KVM"
		run_guest kvm run_vm_probe 10 10
		if [ "$g_result" = probe ]; then
			accel=kvm
		else
			info "KVM unusable ($g_result), using TCG"
		fi
	fi
fi
info "booting with $accel at $(elapsed) s"

run_guest "$accel" "" "$boot_timeout" "$timeout"

[ -z "$log" ] || save_log >/dev/null

case $g_result in
finished)
	if [ -n "$g_error" ]; then
		guest_fail "$g_error"
	fi
	info "first suite line at ${g_first_tap:-never} s, done at $(elapsed) s"
	[[ $g_status =~ ^[0-9]+$ ]] || guest_fail "bad exit status '$g_status' from the guest"
	# Failing tests are the suite's business: their TAP says all. The
	# console log is kept for infrastructure failures, or with --log.
	if [ "$g_status" != 0 ]; then
		echo "$prog: suite exited with status $g_status" >&2
	fi
	[ -z "$log" ] || save_log > /dev/null
	exit "$g_status"
	;;
panic)
	guest_fail "kernel panic: $(grep -m 1 'Kernel panic' "$tmp/console.log" | tr -d '\r' | sed 's/^\[[^]]*\] *//')"
	;;
exited)
	if grep -q 'run-vm: no suite channel' "$tmp/console.log" 2>/dev/null; then
		guest_fail "$(grep -m 1 -o 'no suite channel.*' "$tmp/console.log" | tr -d '\r')"
	elif grep -q 'Kernel panic' "$tmp/console.log" 2>/dev/null; then
		guest_fail "kernel panic: $(grep -m 1 'Kernel panic' "$tmp/console.log" | tr -d '\r' | sed 's/^\[[^]]*\] *//')"
	elif grep -qF "${qemu##*/}:" "$tmp/qemu.err" 2>/dev/null; then
		guest_fail "QEMU failed: $(grep -m 1 -F "${qemu##*/}:" "$tmp/qemu.err" | sed 's/^[^:]*: *//')"
	elif [ "$g_started" = 1 ]; then
		guest_fail "guest stopped before the suite finished"
	else
		guest_fail "kernel did not boot (guest stopped before starting the suite)"
	fi
	;;
no-reader)
	guest_fail "the suite output could not be written (stdout closed?)"
	;;
boot-timeout)
	guest_fail "kernel did not reach the test suite within $boot_timeout s"
	;;
timeout)
	guest_fail "timeout after $timeout s"
	;;
*)
	guest_fail "unexpected guest state '$g_result'"
	;;
esac
