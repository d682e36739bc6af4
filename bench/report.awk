# bench/report.awk - the table printed by bench/run.sh.
#
# Input: one line per run,
#   RESULT lat  IMPL MODE p50_us=X p99_us=X mean_us=X n=N cpu_us=X cpus=C
#               round=R label=L
#   RESULT tput IMPL MODE gbps=X bytes=N secs=X cpu_s_gb=X cpus=C round=R
#               label=L
# (one line each).
# Output: per case the median over the rounds, the ratio of rift's median to
# the baseline's median in the same placement, every per-round ratio, and
# the verdict against the goals for the main rows (event mode, one CPU).
# POSIX awk only (Debian's default awk is mawk: no asort).

# median(): bench/median.awk, given first with -f.

# Ratios rift/baseline for each round both sides completed, in round order.
function per_round(label, impl, mode, metric,    r, out, a, b) {
	out = ""
	for (r = 1; r <= rounds; r++) {
		a = val[label, impl, mode, metric, r]
		b = val[label, "plain", "blocking", metric, r]
		if (a != "" && b != "" && b + 0 > 0)
			out = out sprintf("%s%.2f", out == "" ? "" : " ", a / b)
	}
	return out
}

function med(label, impl, mode, metric) {
	return median(all[label, impl, mode, metric])
}

function lat_row(label, place, impl, mode,    p50, p99, mean, cpu, b50, bmean,
		 r, rounds_r, b) {
	p50 = med(label, impl, mode, "p50_us")
	if (p50 == "")
		return
	p99 = med(label, impl, mode, "p99_us")
	mean = med(label, impl, mode, "mean_us")
	cpu = med(label, impl, mode, "cpu_us")
	printf("  %-9s %-5s %-9s %7.2f %7.2f %7.2f %7.2f", place, impl, mode,
	       p50, p99, mean, cpu)
	b50 = med(label, "plain", "blocking", "p50_us")
	bmean = med(label, "plain", "blocking", "mean_us")
	if (mode != "blocking" && b50 != "" && b50 > 0) {
		r = p50 / b50
		rounds_r = per_round(label, impl, mode, "p50_us")
		printf("   %5.2fx  %5.2fx  %5.2fx  %s", r, median(rounds_r),
		       mean / bmean, rounds_r)
		ratio[label, impl, mode] = r
		paired[label, impl, mode] = median(rounds_r)
		rmean[label, impl, mode] = mean / bmean
		b = med(label, "plain", "blocking", "cpu_us")
		rcpu[label, impl, mode] = cpu / b
	}
	printf("\n")
}

function tput_row(label, place, impl, mode,    g, cpu, b, r, rounds_r) {
	g = med(label, impl, mode, "gbps")
	if (g == "")
		return
	cpu = med(label, impl, mode, "cpu_s_gb")
	printf("  %-9s %-5s %-9s %7.3f %8.3f", place, impl, mode, g, cpu)
	b = med(label, "plain", "blocking", "gbps")
	if (mode != "blocking" && b != "" && b > 0) {
		r = g / b
		rounds_r = per_round(label, impl, mode, "gbps")
		printf("   %5.2fx  %5.2fx  %s", r, median(rounds_r), rounds_r)
		ratio[label, impl, mode] = r
		paired[label, impl, mode] = median(rounds_r)
		b = med(label, "plain", "blocking", "cpu_s_gb")
		rcpu[label, impl, mode] = cpu / b
	}
	printf("\n")
}

# One goal line: rift event against the baseline in one placement.  With
# op "" the line is for reference only.
function verdict(what, label, metric, op, goal,    p, ok, cpuw) {
	p = paired[label, "rift", "event"]
	if (p == "")
		return
	ok = metric == "p50" ? p <= goal : p >= goal
	cpuw = metric == "p50" ? "cpu/rt" : "cpu/GB"
	printf("  %s %-9s rift/plain %-4s paired %5.2fx  (of medians %5.2fx, " \
	       "%s %5.2fx)  ", what, label == "lat-2cpu" || \
	       label == "tput-2cpu" ? two : one, metric, p,
	       ratio[label, "rift", "event"], cpuw, rcpu[label, "rift", "event"])
	if (op == "")
		printf("%s\n", ok ? "(would pass)" : "(would miss)")
	else
		printf("goal %s %.2fx  %s\n", op, goal, ok ? "PASS" : "MISS")
}

$1 == "RESULT" {
	kind = $2; impl = $3; mode = $4
	delete kv
	for (i = 5; i <= NF; i++) {
		eq = index($i, "=")
		if (eq)
			kv[substr($i, 1, eq - 1)] = substr($i, eq + 1)
	}
	label = kv["label"]; round = kv["round"]
	split(kind == "lat" ? "p50_us p99_us mean_us cpu_us" : "gbps cpu_s_gb",
	      metrics, " ")
	for (m in metrics) {
		k = metrics[m]
		val[label, impl, mode, k, round] = kv[k]
		all[label, impl, mode, k] = all[label, impl, mode, k] " " kv[k]
	}
	cpus[label] = kv["cpus"]
}

END {
	one = "CPU " cpu
	two = "CPUs " pair_cpus
	printf("rift bench results: medians of %d interleaved rounds\n", rounds)
	printf("baseline \"plain blocking\": plain C, blocking sockets, " \
	       "TCP_NODELAY, TCP loopback,\n")
	printf("  two processes (bench/lat_plain.c, bench/tput_plain.c)\n")
	printf("reference \"plain epoll\": the same plus one epoll_wait before " \
	       "each read, the floor\n")
	printf("  for any event-loop library (not judged)\n")
	printf("rift: tcp://127.0.0.1, two processes, rift.h only " \
	       "(bench/lat_rift.c, bench/tput_rift.c)\n")
	printf("cpu: user+system time of both processes per round trip / per " \
	       "GB; unlike wall\n")
	printf("  time it does not grow when another tenant takes the CPU\n\n")

	printf("Latency: %d-byte message round trip, %d round trips after " \
	       "%d warm-up, microseconds\n", size, iters, warmup)
	printf("  %-9s %-5s %-9s %7s %7s %7s %7s   %-6s  %-6s  %-6s  %s\n",
	       "placement", "impl", "mode", "p50", "p99", "mean", "cpu/rt",
	       "p50", "p50", "mean", "p50 ratio per round")
	printf("  %-9s %-5s %-9s %7s %7s %7s %7s   %-6s  %-6s  %-6s\n", "", "",
	       "", "", "", "", "", "/plain", "paired", "/plain")
	lat_row("lat-1cpu", one, "plain", "blocking")
	lat_row("lat-1cpu", one, "plain", "epoll")
	lat_row("lat-1cpu", one, "rift", "event")
	lat_row("lat-2cpu", two, "plain", "blocking")
	lat_row("lat-2cpu", two, "plain", "epoll")
	lat_row("lat-2cpu", two, "rift", "event")
	lat_row("lat-2cpu", two, "rift", "busy")
	lat_row("lat-2cpu", two, "rift", "adaptive")

	printf("\nThroughput: %s of 64 KiB messages one way, at the receiver, " \
	       "GB/s (1e9 bytes/s)\n", bytes)
	printf("  %-9s %-5s %-9s %7s %8s   %-6s  %-6s  %s\n", "placement",
	       "impl", "mode", "GB/s", "cpu s/GB", "/plain", "paired",
	       "ratio per round")
	tput_row("tput-1cpu", one, "plain", "blocking")
	tput_row("tput-1cpu", one, "rift", "event")
	tput_row("tput-2cpu", two, "plain", "blocking")
	tput_row("tput-2cpu", two, "rift", "event")

	printf("\n/plain: ratio of the medians; paired: median of the " \
	       "per-round ratios (each\nround runs both sides back to back, so " \
	       "this cancels slow drift in the\nmachine's load); the verdict " \
	       "uses paired.\n")
	printf("\nGoals (main rows: rift in its default event mode, both " \
	       "processes on %s):\n", one)
	verdict("latency   ", "lat-1cpu", "p50", "<=", 1.10)
	verdict("throughput", "tput-1cpu", "GB/s", ">=", 0.95)
	printf("Other placements, for reference (not judged):\n")
	verdict("latency   ", "lat-2cpu", "p50", "", 1.10)
	verdict("throughput", "tput-2cpu", "GB/s", "", 0.95)
	printf("(whole run: %d s)\n", elapsed)
}
