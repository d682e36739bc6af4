#!/bin/sh
# Port groups' cost in the steady state: round-trip latency of a
# connection with a standby path (active-backup, the URL listing both of
# the server's addresses) against the same connection with one path (one
# address), in the lab's pair topology, both ends busy polling.  Run it
# with `make bench-failover` (which boots the lab), not by hand.
#
# Baseline: rift-perf to the server's first address (one path).
# Candidate: rift-perf to both addresses (the data path through the
# first, a standby through the second: its keepalives, and the data
# path's 100 ms progress check while a standby is joined).
# Judged: p50 and mean of 32-byte round trips, each as the median of the
# rounds' paired ratios (bench/series.sh); goal <= 1.02x (issue 16).
set -u
A0=${RIFT_LAB_SERVER_ADDR0:?run inside the lab (make bench-failover)}
A1=${RIFT_LAB_SERVER_ADDR1:?run inside the lab, pair topology}
ROUNDS=${BENCH_GROUP_ROUNDS:-11}
N=${BENCH_GROUP_ITERS:-5000}
PERF=${RIFT_PERF:-build/bin/rift-perf}
T=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT INT TERM

# Each end on a CPU of its own: two spinning processes sharing one (the
# scheduler's choice, run by run) made a round trip 3.7x slower, and the
# series bimodal.
PIN0='' PIN1=''
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
	PIN0="taskset -c 0" PIN1="taskset -c 1"
fi

v() { case $1 in '' | inf | -inf | nan) echo nan ;; *) echo "$1" ;; esac; }

# rp KEY HOST: a rift-perf latency run to HOST (one address or a list);
# prints the client's lat_us KEY, or nan.  A list whose standby did not
# join says so: its figure would be a one-path one.
rp() {
	key=$1 host=$2
	# shellcheck disable=SC2086 # PIN1: a command and its arguments, or none
	timeout 120 $PIN1 "$PERF" -S --transport rdma -p 18610 0.0.0.0 >"$T/rs" 2>&1 &
	sp=$!
	sleep 0.5
	# shellcheck disable=SC2086 # PIN0: as PIN1
	timeout 120 $PIN0 "$PERF" --transport rdma -p 18610 --json --test lat \
		--poll busy -s 32 -n "$N" "$host" >"$T/rc" 2>"$T/re"
	wait "$sp" 2>/dev/null
	val=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
if "," in sys.argv[3] and d["standby_paths"] != 1:
    print("nan"); sys.exit()
print(d["results"][0]["lat_us"][sys.argv[2]])' "$T/rc" "$key" "$host" 2>/dev/null)
	[ "$(v "$val")" = nan ] && echo "(rift-perf to $host gave no result: $(tail -1 "$T/re"))" >&2
	v "$val"
}

# shellcheck source=bench/series.sh
. bench/series.sh

echo "round trip, 32 B, $ROUNDS rounds of $N (us): one path, then with a standby" >&2
series "$T/p50" "$ROUNDS" "rp p50 $A0" "rp p50 $A0,$A1" 1 one-path standby
series "$T/mean" "$ROUNDS" "rp mean $A0" "rp mean $A0,$A1" 1 one-path standby

echo
echo "active-backup (a standby joined) / one path: median of the rounds' paired"
echo "ratios [quartiles] (ratio of the medians in brackets)"
for k in p50 mean; do
	# shellcheck disable=SC2046 # its seven fields
	set -- $(stats "$T/$k")
	awk -v k="$k" -v x="$1" -v q1="$2" -v q3="$3" -v n="$4" -v m="$5" \
	    -v b="$6" -v c="$7" 'BEGIN {
		printf "  latency %-4s  one path %7.2f us  standby %7.2f us  %5.3fx [%.3f-%.3f, %d rounds] (%.3fx)  goal <= 1.02x  %s\n",
		    k, b, c, x, q1, q3, n, m, (x != "nan" && x <= 1.02) ? "PASS" : "MISS"
	}'
done
