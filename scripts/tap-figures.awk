# SPDX-License-Identifier: GPL-2.0
#
# The project's one TAP reader: verdict, figure and bound of each test in
# a suite's TAP, one line a test, "test|verdict|figure|bound|reason":
# verdict ok, FAIL or skip, reason the text after "# SKIP" of a skip,
# or "harness timeout" for a FAIL the harness killed at its timeout.
#
#   awk -f scripts/tap-figures.awk TAPFILE
#
# The TAP is the harness's as a test binary prints it ("ok 3 f.v.t", or
# "ok 3 f.t" for a fixture without variants) or as the kselftest runner
# nests it ("# ok 3 f.v.t"). Figures are the lines lib/ra_cache.h's
# RA_EXPECT_FIGURE() prints:
#   "figure <what>: <measured> <unit>, bound <bound>, ra_pages ..."
# A test that prints several (one per window) is shown by the one
# nearest to or furthest past its bound.
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
/Test terminated by timeout/ && t != "" { timeout[t] = 1 }
{ sub(/^(# )+/, "") }
/^(not ok|ok) [0-9]+ [a-z0-9_]+\.[a-z0-9_]+(\.[a-z0-9_]+)?( |$)/ {
	name = $1 == "not" ? $4 : $3
	v = $1 == "not" ? "FAIL" : ($0 ~ /# SKIP/ ? "skip" : "ok")
	why = ""
	if (v == "skip") { why = $0; sub(/.*# SKIP */, "", why) }
	if (v == "FAIL" && timeout[name]) why = "harness timeout"
	print name "|" v "|" fig[name] "|" bound[name] "|" why
}
