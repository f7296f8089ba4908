#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Install Debian packages for the project (make deps).
#
#   scripts/deps.sh PKG...
#
# Installs with --no-install-recommends and --no-upgrade: nothing beyond
# the packages named and what they depend on, and no installed package
# is upgraded unless a package named depends on an exact newer version of
# it (a -dev package and its library); such upgrades are named first, on
# one line. When every package is installed, apt is not run at all. All
# output goes to stderr. Needs root. Exit status: 0; 2 on usage errors;
# 3 when apt fails (its last lines on stderr).
set -u
prog=${0##*/}
case ${1:--} in
-*) echo "usage: $prog PKG..." >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "$prog: needs root (apt-get install)" >&2; exit 3; }
export DEBIAN_FRONTEND=noninteractive
opts="-y -q --no-install-recommends --no-upgrade"

# Everything installed already: nothing to fetch, no apt-get update.
missing=0
for pkg; do
	dpkg-query -W -f '${Status}\n' "$pkg" 2>/dev/null | grep -q ' installed$' ||
		missing=1
done
[ "$missing" = 1 ] || exit 0
# apt's progress goes to stderr: stdout may be a suite's TAP (make deps run_tests).
apt-get update -q > /dev/null || { echo "$prog: apt-get update failed" >&2; exit 3; }
for pkg; do
	apt-cache show --no-all-versions "$pkg" > /dev/null 2>&1 ||
		{ echo "$prog: package $pkg unknown to apt" >&2; exit 3; }
done
# "Inst pkg [old] (new ...)": an installed package apt has to upgrade.
# shellcheck disable=SC2086 # opts is a word list
up=$(apt-get install -s $opts "$@" 2>&1 | sed -n 's/^Inst \([^ ]*\) \[.*/\1/p' | tr '\n' ' ')
[ -z "$up" ] || echo "$prog: upgraded because a package named needs their exact version: $up" >&2
# shellcheck disable=SC2086
apt-get install $opts "$@" >&2 || { echo "$prog: apt-get install failed" >&2; exit 3; }
