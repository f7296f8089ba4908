# SPDX-License-Identifier: GPL-2.0
#
# What the project's bash scripts share on their command line, sourced
# by them: $prog, the script's name; die(), which prints "<prog>:
# <words>" on stderr and exits 3 (the infrastructure failed); and
# work_dir KEEP NAME, which sets $work to the directory KEEP (made if
# need be) or, without KEEP, to a new /var/tmp/NAME.XXXXXX removed on
# exit.
# shellcheck shell=bash
# shellcheck disable=SC2034 # $prog is for the scripts that source this
prog=${0##*/}

die() {
	echo "$prog: $*" >&2
	exit 3
}

work_dir() {
	if [ -n "$1" ]; then
		mkdir -p "$1"
		work=$(cd "$1" && pwd)
	else
		work=$(mktemp -d "/var/tmp/$2.XXXXXX")
		trap 'rm -rf --one-file-system "$work"' EXIT
	fi
}
