# SPDX-License-Identifier: GPL-2.0
#
# Verdict, figure and bound of each test in a suite's TAP, one line a
# test: "test|ok, FAIL or skip|figure|bound".
#
#   awk -f scripts/tap-figures.awk TAPFILE
#
# A figure line is one the test prints with ", bound N" (not the harness's
# file:line failure lines, not the "suspected:" lines); the figure is its
# "(X each)" value when it has one (pages per run), else the first number
# after the last ": " (major faults, holes). A test that prints several
# (one per access pattern) is shown by the one nearest to or furthest past
# its bound. Used by vm/history.sh and validation/matrix.sh.
/^(# )*#  RUN / { t = $NF == "..." ? $(NF - 1) : $NF; fig[t] = ""; worst[t] = -1; next }
/, bound [0-9]+/ && t != "" && !/\.c:[0-9]+:/ && !/suspected:/ {
	line = $0
	sub(/^(# )+/, "", line)
	b = line
	sub(/.*, bound /, "", b)
	sub(/[^0-9].*/, "", b)
	head = line
	sub(/, bound [0-9]+.*/, "", head)
	sub(/.*: /, "", head)
	f = ""
	if (match(head, /\([0-9.]+ each\)/))
		f = substr(head, RSTART + 1, RLENGTH - 7)
	else if (match(head, /[0-9]+(\.[0-9]+)?/))
		f = substr(head, RSTART, RLENGTH)
	if (f == "" || b == "")
		next
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
