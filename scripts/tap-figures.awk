# SPDX-License-Identifier: GPL-2.0
#
# Verdict, figure and bound of each test in a suite's TAP, one line a
# test: "test|ok, FAIL or skip|figure|bound".
#
#   awk -f scripts/tap-figures.awk TAPFILE
#
# Figures are the lines lib/ra_cache.c's ra_figure() prints:
#   "figure <what>: <measured> <unit>, bound <bound>, ra_pages ..."
# A test that prints several (one per window) is shown by the one
# nearest to or furthest past its bound. Used by vm/history.sh and
# validation/matrix.sh.
/^(# )*#  RUN / { t = $NF == "..." ? $(NF - 1) : $NF; fig[t] = ""; worst[t] = -1; next }
/^(# )*# figure .*: -?[0-9]+ [^,]+, bound -?[0-9]+, ra_pages / && t != "" {
	line = $0
	sub(/, ra_pages .*/, "", line)
	if (!match(line, /: -?[0-9]+ [^,:]+, bound -?[0-9]+$/))
		next
	seg = substr(line, RSTART + 2)
	split(seg, w, " ")
	f = w[1]
	b = seg
	sub(/.*, bound /, "", b)
	r = b > 0 ? f / b : f
	if (r > worst[t]) { worst[t] = r; fig[t] = f; bound[t] = b }
	next
}
{ sub(/^(# )+/, "") }
/^(not ok|ok) [0-9]+ [a-z0-9_]+\.[a-z0-9_]+\.[a-z0-9_]+/ {
	name = $1 == "not" ? $4 : $3
	v = $1 == "not" ? "FAIL" : ($0 ~ /# SKIP/ ? "skip" : "ok")
	print name "|" v "|" fig[name] "|" bound[name]
}
