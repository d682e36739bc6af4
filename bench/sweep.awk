# bench/sweep.awk - the size sweep's table, printed by bench/run.sh.
#
# Input: one line per run, as bench/report.awk's, tagged with the sweep's
# label (lat or tput) and the message size in bytes:
#   RESULT lat  IMPL MODE p50_us=X ... round=R label=lat size=S
#   RESULT tput IMPL MODE gbps=X ... round=R label=tput size=S
# where IMPL MODE is "plain blocking" (the baseline of both kinds; for
# tput above 256 KiB "plain whole", each message read whole), "rift
# event-zcopy" (rift_buf_alloc + rift_conn_send_buf on both sides) and
# "rift event" (rift_conn_send, a copy per send; latency only, for
# reference; tput_rift always sends without a copy).
# Output: per size the medians over the rounds and rift's speed relative
# to plain (plain's time / rift's for round trips, rift's GB/s / plain's),
# as the median of the per-round ratios (each round runs both back to
# back), side by side; then every per-round ratio; then the verdicts:
# each size against the goal, and whether rift's round trip grows in
# proportion to the size from 1 MiB up.
# POSIX awk only (Debian's default awk is mawk: no asort).

# median(): bench/median.awk, given first with -f.

function human(b) {
	if (b >= 1048576 && b % 1048576 == 0)
		return (b / 1048576) " MiB"
	if (b >= 1024 && b % 1024 == 0)
		return (b / 1024) " KiB"
	return b " B"
}

# Per-round speed ratios of who against plain at size s, in round order:
# for lat plain's p50 / who's, for tput who's GB/s / plain's.
function ratios(kind, s, who,    r, out, a, b, q) {
	out = ""
	for (r = 1; r <= rounds; r++) {
		a = val[kind, s, who, r]
		b = val[kind, s, "plain", r]
		if (a == "" || b == "" || a + 0 <= 0 || b + 0 <= 0)
			continue
		q = kind == "lat" ? b / a : a / b
		out = out sprintf("%s%.2f", out == "" ? "" : " ", q)
	}
	return out
}

$1 == "RESULT" {
	kind = $2
	# tput_rift always sends without a copy (rift_buf_alloc).
	who = $3 == "plain" ? "plain" : \
	      (kind == "tput" || $4 ~ /zcopy/ ? "rift" : "copy")
	delete kv
	for (i = 5; i <= NF; i++) {
		eq = index($i, "=")
		if (eq)
			kv[substr($i, 1, eq - 1)] = substr($i, eq + 1)
	}
	s = kv["size"] + 0
	v = kind == "lat" ? kv["p50_us"] : kv["gbps"]
	val[kind, s, who, kv["round"]] = v
	all[kind, s, who] = all[kind, s, who] " " v
	if (!(s in seen)) {
		seen[s] = 1
		sizes[++nsizes] = s
	}
}

END {
	# Sizes in increasing order (insertion sort; a dozen of them).
	for (i = 2; i <= nsizes; i++) {
		t = sizes[i]
		for (j = i - 1; j >= 1 && sizes[j] > t; j--)
			sizes[j + 1] = sizes[j]
		sizes[j + 1] = t
	}
	printf("Size sweep: rift over TCP against plain sockets, both " \
	       "processes on CPU %s,\nmedians of %d interleaved rounds " \
	       "(whole sweep: %d s)\n", cpu, rounds, elapsed)
	printf("  round trip: lat_plain (write + read) against lat_rift -Z " \
	       "(rift_buf_alloc +\n    rift_conn_send_buf both ways, " \
	       "nothing copied outside the kernel), p50, us;\n    \"copy\": " \
	       "lat_rift with rift_conn_send (one copy per send), for " \
	       "reference\n")
	printf("  one way: tput_plain (256 KiB reads; above 256 KiB -m: " \
	       "each message read\n    whole into one buffer) against " \
	       "tput_rift, %s per run, GB/s\n", bytes)
	printf("  speed: plain's time / rift's (round trip), rift's GB/s / " \
	       "plain's (one way);\n    median of the per-round ratios\n\n")
	printf("  %-8s %9s %9s %6s %9s %6s | %7s %7s %6s\n", "", "plain",
	       "rift", "speed", "copy", "speed", "plain", "rift", "speed")
	printf("  %-8s %9s %9s %6s %9s %6s | %7s %7s %6s\n", "size",
	       "rt us", "rt us", "", "rt us", "", "GB/s", "GB/s", "")
	for (i = 1; i <= nsizes; i++) {
		s = sizes[i]
		lp = median(all["lat", s, "plain"])
		lr = median(all["lat", s, "rift"])
		lc = median(all["lat", s, "copy"])
		tp = median(all["tput", s, "plain"])
		tr = median(all["tput", s, "rift"])
		sl[s] = median(ratios("lat", s, "rift"))
		sc = median(ratios("lat", s, "copy"))
		st[s] = median(ratios("tput", s, "rift"))
		rt[s] = lr
		pt[s] = lp
		printf("  %-8s %9s %9s %6s %9s %6s | %7s %7s %6s\n", human(s),
		       lp == "" ? "-" : sprintf("%.1f", lp),
		       lr == "" ? "-" : sprintf("%.1f", lr),
		       sl[s] == "" ? "-" : sprintf("%.2fx", sl[s]),
		       lc == "" ? "-" : sprintf("%.1f", lc),
		       sc == "" ? "-" : sprintf("%.2fx", sc),
		       tp == "" ? "-" : sprintf("%.3f", tp),
		       tr == "" ? "-" : sprintf("%.3f", tr),
		       st[s] == "" ? "-" : sprintf("%.2fx", st[s]))
	}
	printf("\n  per-round speed ratios, rift against plain:\n")
	printf("  %-8s %-30s  %s\n", "size", "round trip", "one way")
	for (i = 1; i <= nsizes; i++) {
		s = sizes[i]
		printf("  %-8s %-30s  %s\n", human(s), ratios("lat", s, "rift"),
		       ratios("tput", s, "rift"))
	}

	# Goals: rift at least goal x plain's speed at every size, both ways.
	lmiss = tmiss = ""
	lmin = tmin = ""
	for (i = 1; i <= nsizes; i++) {
		s = sizes[i]
		if (sl[s] != "" && (lmin == "" || sl[s] < lmin))
			lmin = sl[s]
		if (st[s] != "" && (tmin == "" || st[s] < tmin))
			tmin = st[s]
		if (sl[s] != "" && sl[s] < goal)
			lmiss = lmiss " " human(s)
		if (st[s] != "" && st[s] < goal)
			tmiss = tmiss " " human(s)
	}
	printf("\nGoals:\n")
	if (lmin != "")
		printf("  round trip speed >= %.2fx plain at every size: " \
		       "lowest %.2fx  %s\n", goal, lmin,
		       lmiss == "" ? "PASS" : "MISS at" lmiss)
	if (tmin != "")
		printf("  one-way speed    >= %.2fx plain at every size: " \
		       "lowest %.2fx  %s\n", goal, tmin,
		       tmiss == "" ? "PASS" : "MISS at" tmiss)
	# Linear growth: the spread of the round trip's cost per MiB from
	# 1 MiB up (largest / smallest).  Plain's is not 1 either (caches:
	# a 1 MiB echo stays in them, a 64 MiB one does not): rift's may be
	# at most `linear` times plain's.
	rmin = rmax = pmin = pmax = ""
	for (i = 1; i <= nsizes; i++) {
		s = sizes[i]
		if (s < 1048576 || rt[s] == "" || pt[s] == "")
			continue
		r = rt[s] / (s / 1048576)
		p = pt[s] / (s / 1048576)
		if (rmin == "" || r < rmin) rmin = r
		if (rmax == "" || r > rmax) rmax = r
		if (pmin == "" || p < pmin) pmin = p
		if (pmax == "" || p > pmax) pmax = p
	}
	if (rmin != "")
		printf("  round trip linear in size from 1 MiB: rift %.0f-%.0f " \
		       "us/MiB (spread %.2fx),\n    plain %.0f-%.0f us/MiB " \
		       "(spread %.2fx); goal: rift's spread <= %.2fx plain's" \
		       "  %s\n", rmin, rmax, rmax / rmin, pmin, pmax,
		       pmax / pmin, linear,
		       rmax / rmin <= linear * pmax / pmin ? "PASS" : "MISS")
}
