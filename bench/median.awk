# median.awk - the median of a space-separated list of numbers, for the
# benchmark reports (bench/report.awk, bench/sweep.awk: awk -f
# bench/median.awk -f REPORT).  POSIX awk only (Debian's default awk is
# mawk: no asort), so an insertion sort.
function median(list,    n, v, i, j, t) {
	n = split(list, v, " ")
	if (n == 0)
		return ""
	for (i = 2; i <= n; i++) {
		t = v[i] + 0
		for (j = i - 1; j >= 1 && v[j] + 0 > t; j--)
			v[j + 1] = v[j]
		v[j + 1] = t
	}
	if (n % 2)
		return v[(n + 1) / 2] + 0
	return (v[n / 2] + v[n / 2 + 1]) / 2
}
