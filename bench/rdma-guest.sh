#!/bin/sh
# rift over verbs against perftest on the same soft-RoCE device, in the same
# lab guest, alternating, BENCH_ROUNDS rounds (default 5); prints each
# round, the medians, and the median of the rounds' rift/perftest ratios.
# Run it with `make bench-rdma` (which boots the lab), not by hand.
#
# Baselines (perftest, rdma_cm mode, one process per side like rift-perf):
#   latency   ib_send_lat -s 32        t_typical      vs rift-perf lat p50 / 2
#   bandwidth ib_send_bw -s 65536      BW average     vs rift-perf bw GB/s
#             ib_write_bw -s 65536     (shown, not judged)
#   msg rate  ib_send_bw -s 64         MsgRate        vs rift-perf bw Mmsg/s
# perftest busy-polls its CQ and reports half a round trip as latency, so
# rift runs with --poll busy and its round-trip p50 is halved.  rift in
# event mode is shown too (not judged): in this guest every completion
# event costs milliseconds (ibv_rc_pingpong -e: about 3 ms per iteration).
# Absolute numbers under QEMU TCG mean little; the ratios are the point.
set -u
A=${RIFT_LAB_SERVER_ADDR0:?run inside the lab (make bench-rdma)}
ROUNDS=${BENCH_ROUNDS:-5}
LAT_N=${BENCH_LAT_ITERS:-2000}
BW_N=${BENCH_BW_ITERS:-2000}
RATE_N=${BENCH_RATE_ITERS:-20000}
PERF=build/bin/rift-perf
T=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT INT TERM

# perftest: server in the background, client in front; prints the client's
# table line.  $1 = tool, rest = options.  Debian's perftest 4.5 with -R
# races its second rdma_cm connection and now and then gets REJECTED and
# crashes (tests/lab/README.md): up to 3 tries, then an empty line.
pt() {
	tool=$1
	shift
	for try in 1 2 3; do
		timeout 120 "$tool" -R "$@" >"$T/s" 2>&1 &
		sp=$!
		sleep 1
		timeout 120 "$tool" -R "$@" "$A" >"$T/c" 2>&1
		kill "$sp" 2>/dev/null
		wait "$sp" 2>/dev/null
		line=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { line = $0 } END { print line }' "$T/c")
		[ -n "$line" ] && break
		echo "($tool try $try printed no result)" >&2
	done
	echo "$line"
}

# A value or nan, so a missing result never shifts the columns (perftest
# prints inf for a latency it could not time: no result either).
v() { case $1 in '' | inf | -inf) echo nan ;; *) echo "$1" ;; esac; }

# rift-perf: same shape, JSON from the client.
rp() {
	timeout 120 "$PERF" -S --transport rdma -p 18600 "$@" "$A" >"$T/rs" 2>&1 &
	sp=$!
	sleep 1
	timeout 120 "$PERF" --transport rdma -p 18600 --json "$@" "$A" >"$T/rc" 2>"$T/re"
	wait "$sp" 2>/dev/null
	cat "$T/rc"
}

json() { # file key-path
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))["results"][0]
for k in sys.argv[2].split("."): d = d[k]
print(d)' "$1" "$2" 2>/dev/null || echo nan
}

# Median of the numbers read (nan lines, from failed runs, left out).
med() { grep -v -i -e nan -e inf | sort -g | awk '{ v[NR] = $1 } END { print NR ? ((NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : "nan" }'; }

: >"$T/lat"
: >"$T/bw"
: >"$T/rate"
for r in $(seq 1 "$ROUNDS"); do
	pl=$(pt ib_send_lat -s 32 -n "$LAT_N" | awk '{ print $5 }')
	rp --test lat --poll busy -s 32 -n "$LAT_N" >"$T/j"
	rl=$(json "$T/j" lat_us.p50 | awk '{ print $1 / 2 }')
	rp --test lat --poll event -s 32 -n "$LAT_N" >"$T/j"
	re=$(json "$T/j" lat_us.p50 | awk '{ print $1 / 2 }')
	pb=$(pt ib_send_bw -s 65536 -n "$BW_N" | awk '{ print $4 }')
	pw=$(pt ib_write_bw -s 65536 -n "$BW_N" | awk '{ print $4 }')
	rp --test bw --poll busy -s 65536 -n "$BW_N" >"$T/j"
	rb=$(json "$T/j" bw.gbytes_per_s)
	pm=$(pt ib_send_bw -s 64 -n "$RATE_N" | awk '{ print $5 }')
	rp --test bw --poll busy -s 64 -n "$RATE_N" >"$T/j"
	rm_=$(json "$T/j" bw.mmsg_per_s)
	echo "round $r: lat us perftest $pl rift $rl ($(awk -v a="$rl" -v b="$pl" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "nan" }')) (event $re) | 64K MB/s send $pb write $pw rift $(awk -v g="$rb" 'BEGIN{printf "%.1f", g*1e9/1048576}') | 64B Mmsg/s perftest $pm rift $rm_"
	echo "$(v "$pl") $(v "$rl") $(v "$re")" >>"$T/lat"
	echo "$(v "$pb") $(v "$pw") $(v "$rb")" >>"$T/bw"
	echo "$(v "$pm") $(v "$rm_")" >>"$T/rate"
done

pl=$(awk '{print $1}' "$T/lat" | med)
rl=$(awk '{print $2}' "$T/lat" | med)
re=$(awk '{print $3}' "$T/lat" | med)
pb=$(awk '{print $1}' "$T/bw" | med)
pw=$(awk '{print $2}' "$T/bw" | med)
rb=$(awk '$3 != "nan" {print $3 * 1e9 / 1048576}' "$T/bw" | med)
pm=$(awk '{print $1}' "$T/rate" | med)
rm_=$(awk '{print $2}' "$T/rate" | med)
# The judged figure is the median of the rounds' own ratios: each pairs
# rift with perftest run seconds before it, so a round where the shared
# host was slow (the guest then swings between two speeds, for perftest
# as for rift) compares like with like.  The ratio of the two medians
# mixes rounds and is shown next to it.
ratio() { # file, column of rift, column of perftest, scale of rift
	awk -v a="$2" -v b="$3" -v s="$4" '$a != "nan" && $b != "nan" && $b > 0 { print $a * s / $b }' "$1" | med
}
xl=$(ratio "$T/lat" 2 1 1)
xb=$(ratio "$T/bw" 3 1 953.67431640625) # GB/s to MB/s (2^20)
xw=$(ratio "$T/bw" 3 2 953.67431640625)
xm=$(ratio "$T/rate" 2 1 1)
echo
echo "rift/perftest: median of the $ROUNDS rounds' ratios (ratio of the medians in brackets)"
echo "medians of the values (perftest MB/sec = 2^20 bytes/s)"
awk -v pl="$pl" -v rl="$rl" -v re="$re" -v pb="$pb" -v pw="$pw" -v rb="$rb" -v pm="$pm" -v rm="$rm_" \
    -v xl="$xl" -v xb="$xb" -v xw="$xw" -v xm="$xm" 'BEGIN {
	printf "  latency 32 B    perftest %8.2f us    rift %8.2f us    rift/perftest %5.2fx (%.2fx)  goal <= 1.10x  %s\n", pl, rl, xl, rl / pl, (xl <= 1.10) ? "PASS" : "MISS"
	printf "                  (one way; rift busy polling; event mode %.2f us = %.0fx, not judged)\n", re, re / pl
	printf "  bandwidth 64K   ib_send_bw %6.1f MB/s rift %8.1f MB/s  rift/perftest %5.2fx (%.2fx)  goal >= 0.95x  %s\n", pb, rb, xb, rb / pb, (xb >= 0.95) ? "PASS" : "MISS"
	printf "                  ib_write_bw %5.1f MB/s                      rift/write    %5.2fx (%.2fx)  (not judged)\n", pw, xw, rb / pw
	printf "  msg rate 64 B   perftest %8.3f Mpps  rift %8.3f Mmsg/s rift/perftest %5.2fx (%.2fx)  goal >= 0.90x  %s\n", pm, rm, xm, rm / pm, (xm >= 0.90) ? "PASS" : "MISS"
}'
