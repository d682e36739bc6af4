#!/bin/sh
# rift over verbs against perftest on the same soft-RoCE device, in the same
# lab guest.  Run it with `make bench-rdma` (which boots the lab), not by
# hand.
#
# Baselines (perftest over one rdma_cm rendezvous, -z, one process a side
# like rift-perf):
#   latency   ib_send_lat -s 32        t_typical      vs rift-perf lat p50 / 2
#   bandwidth ib_send_bw -s 65536      BW average     vs rift-perf bw MB/s
#             ib_write_bw -s 65536     (shown, not judged)
#   msg rate  ib_send_bw -s 64         MsgRate        vs rift-perf bw Mmsg/s
# perftest busy-polls its CQ and reports half a round trip as latency, so
# rift runs with --poll busy and its round-trip p50 is halved.  rift in
# event mode is shown too (not judged): in this guest every completion
# event costs milliseconds (ibv_rc_pingpong -e: about 3 ms per iteration).
#
# How it is judged.  The shared host makes the guest swing between speeds
# from one run to the next, for perftest as for rift: the same perftest
# latency run gives 13 us or 28 us.  One pair of runs therefore says
# little, so each measure is a series of short runs, perftest and rift
# alternating and perftest first and last (P R P R ... P), and every rift
# run is compared with the mean of the two perftest runs on either side of
# it, seconds away.  The judged figure is the median of those ratios; the
# quartiles and the ratio of the two medians are printed beside it.
# Rounds: BENCH_LAT_ROUNDS (default 25), BENCH_ROUNDS for bandwidth and
# message rate (default 7).  Absolute numbers under QEMU TCG mean little.
set -u
A=${RIFT_LAB_SERVER_ADDR0:?run inside the lab (make bench-rdma)}
DEV=${RIFT_LAB_SERVER_DEV0:?run inside the lab (make bench-rdma)}
LAT_ROUNDS=${BENCH_LAT_ROUNDS:-25}
ROUNDS=${BENCH_ROUNDS:-7}
LAT_N=${BENCH_LAT_ITERS:-2000}
BW_N=${BENCH_BW_ITERS:-1000}
RATE_N=${BENCH_RATE_ITERS:-20000}
PERF=${RIFT_PERF:-build/bin/rift-perf} # RIFT_PERF: another build, for A/B runs
T=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT INT TERM

# The RoCE v2 GID index of address $A on $DEV (perftest -x).
gid_index() {
	# shellcheck disable=SC2086 # split the address into its bytes
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' $(echo "$A" | tr . ' '))
	for f in /sys/class/infiniband/"$DEV"/ports/1/gids/*; do
		[ "$(cat "$f")" = "$want" ] || continue
		[ "$(cat "/sys/class/infiniband/$DEV/ports/1/gid_attrs/types/${f##*/}" 2>/dev/null)" = "RoCE v2" ] || continue
		echo "${f##*/}"
		return 0
	done
	return 1
}
GID=$(gid_index) || { echo "bench: no RoCE v2 GID for $A on $DEV" >&2; exit 1; }

# A value or nan, so a missing result never shifts the columns (perftest
# prints inf for a latency it could not time: no result either).
v() { case $1 in '' | inf | -inf | nan) echo nan ;; *) echo "$1" ;; esac; }

# perftest COLUMN TOOL ARGS...: server in the background, client in front;
# prints COLUMN of the client's result line, or nan after 3 tries.  -z (one
# rdma_cm rendezvous), not -R, whose second rendezvous races
# (tests/lab/README.md).
pt() {
	col=$1
	shift
	for try in 1 2 3; do
		timeout 120 "$@" -z -d "$DEV" -x "$GID" --source_ip "$A" >"$T/s" 2>&1 &
		sp=$!
		sleep 0.5
		timeout 120 "$@" -z -d "$DEV" -x "$GID" --source_ip "$A" "$A" >"$T/c" 2>&1
		wait "$sp" 2>/dev/null
		val=$(awk -v c="$col" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { x = $c } END { print x }' "$T/c")
		val=$(v "$val")
		[ "$val" != nan ] && break
		echo "($1 try $try gave no result)" >&2
	done
	echo "$val"
}

# rift KEY ARGS...: rift-perf server and client over rdma; prints the
# client's JSON result KEY (a dotted path), or nan.
rp() {
	key=$1
	shift
	timeout 120 "$PERF" -S --transport rdma -p 18600 "$@" "$A" >"$T/rs" 2>&1 &
	sp=$!
	sleep 0.5
	timeout 120 "$PERF" --transport rdma -p 18600 --json "$@" "$A" >"$T/rc" 2>"$T/re"
	wait "$sp" 2>/dev/null
	val=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))["results"][0]
for k in sys.argv[2].split("."): d = d[k]
print(d)' "$T/rc" "$key" 2>/dev/null)
	v "$val"
}

. bench/series.sh

echo "latency, 32 B, $LAT_ROUNDS rounds of $LAT_N round trips (us, one way):" >&2
series "$T/lat" "$LAT_ROUNDS" 'pt 5 ib_send_lat -s 32 -n $LAT_N' \
	'rp lat_us.p50 --test lat --poll busy -s 32 -n $LAT_N' 0.5
echo "bandwidth, 64 KiB, $ROUNDS rounds of $BW_N messages (MB/s, 2^20 bytes):" >&2
series "$T/bw" "$ROUNDS" 'pt 4 ib_send_bw -s 65536 -n $BW_N' \
	'rp bw.gbytes_per_s --test bw --poll busy -s 65536 -n $BW_N' 953.67431640625
echo "message rate, 64 B, $ROUNDS rounds of $RATE_N messages (M/s):" >&2
series "$T/rate" "$ROUNDS" 'pt 5 ib_send_bw -s 64 -n $RATE_N' \
	'rp bw.mmsg_per_s --test bw --poll busy -s 64 -n $RATE_N' 1
echo "shown, not judged: ib_write_bw 64 KiB and rift in event mode, 3 runs" >&2
: >"$T/w"
: >"$T/e"
for r in 1 2 3; do
	pt 4 ib_write_bw -s 65536 -n "$BW_N" >>"$T/w"
	rp lat_us.p50 --test lat --poll event -s 32 -n "$LAT_N" >>"$T/e"
done
med() { grep -v nan | sort -g | awk '{ x[NR] = $1 } END { if (!NR) print "nan"; else print (NR % 2) ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2 }'; }
pw=$(med <"$T/w")
ev=$(med <"$T/e")

set -- $(stats "$T/lat")
xl=$1 l1=$2 l3=$3 nl=$4 ml=$5 pl=$6 rl=$7
set -- $(stats "$T/bw")
xb=$1 b1=$2 b3=$3 nb=$4 mb=$5 pb=$6 rb=$7
set -- $(stats "$T/rate")
xm=$1 m1=$2 m3=$3 nm=$4 mm=$5 pm=$6 rm_=$7

echo
echo "rift/perftest: median of the rounds' ratios, each rift run against the perftest"
echo "runs either side of it [quartiles] (ratio of the medians in brackets)"
awk -v xl="$xl" -v l1="$l1" -v l3="$l3" -v nl="$nl" -v ml="$ml" -v pl="$pl" -v rl="$rl" \
    -v xb="$xb" -v b1="$b1" -v b3="$b3" -v nb="$nb" -v mb="$mb" -v pb="$pb" -v rb="$rb" \
    -v xm="$xm" -v m1="$m1" -v m3="$m3" -v nm="$nm" -v mm="$mm" -v pm="$pm" -v rm="$rm_" \
    -v pw="$pw" -v ev="$ev" 'BEGIN {
	printf "  latency 32 B    perftest %8.2f us    rift %8.2f us    %5.2fx [%.2f-%.2f, %d rounds] (%.2fx)  goal <= 1.10x  %s\n", pl, rl, xl, l1, l3, nl, ml, (xl != "nan" && xl <= 1.10) ? "PASS" : "MISS"
	printf "                  (one way; rift busy polling; event mode %.2f us, not judged)\n", ev / 2
	printf "  bandwidth 64K   ib_send_bw %6.1f MB/s rift %8.1f MB/s  %5.2fx [%.2f-%.2f, %d rounds] (%.2fx)  goal >= 0.95x  %s\n", pb, rb, xb, b1, b3, nb, mb, (xb != "nan" && xb >= 0.95) ? "PASS" : "MISS"
	printf "                  ib_write_bw %5.1f MB/s: rift/write %.2fx (not judged)\n", pw, (pw > 0) ? rb / pw : 0
	printf "  msg rate 64 B   perftest %8.3f Mpps  rift %8.3f Mmsg/s %5.2fx [%.2f-%.2f, %d rounds] (%.2fx)  goal >= 0.90x  %s\n", pm, rm, xm, m1, m3, nm, mm, (xm != "nan" && xm >= 0.90) ? "PASS" : "MISS"
}'
