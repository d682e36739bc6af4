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
#
# Then active-active bandwidth: rift-perf --test bw, 64 KiB, to both
# addresses with group.policy = active-active (RIFT_GROUP_POLICY), both
# links carrying the data, against two ib_send_bw runs at once, one per
# link (each on its own pair of devices), their BW averages summed.
# Judged: the median of the rounds' paired ratios; goal >= 0.9x.
# BENCH_GROUP_BW_ONLY=1: this part alone.
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

# The RoCE v2 GID index of address $2 on device $1 (perftest -x).
gid_index() {
	# shellcheck disable=SC2046,SC2183 # the address split into its bytes
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' $(echo "$2" | tr . ' '))
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		[ "$(cat "$f")" = "$want" ] || continue
		[ "$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/${f##*/}" 2>/dev/null)" = "RoCE v2" ] || continue
		echo "${f##*/}"
		return 0
	done
	echo "bench: no RoCE v2 GID for $2 on $1" >&2
	return 1
}
SD0=${RIFT_LAB_SERVER_DEV0:?} SD1=${RIFT_LAB_SERVER_DEV1:?}
CD0=${RIFT_LAB_CLIENT_DEV0:?} CD1=${RIFT_LAB_CLIENT_DEV1:?}
C0=${RIFT_LAB_CLIENT_ADDR0:?} C1=${RIFT_LAB_CLIENT_ADDR1:?}
SG0=$(gid_index "$SD0" "$A0") && SG1=$(gid_index "$SD1" "$A1") &&
	CG0=$(gid_index "$CD0" "$C0") && CG1=$(gid_index "$CD1" "$C1") || exit 1
BW_SECS=${BENCH_GROUP_BW_SECS:-5}

# Two ib_send_bw at once, link0 and link1, 64 KiB: the sum of their BW
# average (MB/s), nan if either gave none.  -z: one rdma_cm rendezvous.
# link L: its server device, GID and address, the client's (sd sg sa cd cg ca).
link() {
	case $1 in
	0) sd=$SD0 sg=$SG0 sa=$A0 cd=$CD0 cg=$CG0 ca=$C0 ;;
	*) sd=$SD1 sg=$SG1 sa=$A1 cd=$CD1 cg=$CG1 ca=$C1 ;;
	esac
}
# Two ib_send_bw at once, link0 and link1, 64 KiB for BW_SECS seconds
# (-D: a run that lags does not hold the other): the sum of their BW
# averages (MB/s), nan if either gave none.  Fresh ports per run (a
# counter in $T: series calls this in a subshell).  -z: one rdma_cm
# rendezvous.
pt2() {
	for try in 1 2 3; do
		port=$(($(cat "$T/port" 2>/dev/null || echo 18720) + 2))
		echo "$port" >"$T/port"
		for L in 0 1; do
			link $L
			timeout $((BW_SECS + 30)) ib_send_bw -z -s 65536 -D "$BW_SECS" \
				-p $((port + L)) -d "$sd" -x "$sg" --source_ip "$sa" \
				>"$T/ps$L" 2>&1 &
		done
		sleep 0.5
		for L in 0 1; do
			link $L
			timeout $((BW_SECS + 30)) ib_send_bw -z -s 65536 -D "$BW_SECS" \
				-p $((port + L)) -d "$cd" -x "$cg" --source_ip "$ca" "$sa" \
				>"$T/pc$L" 2>&1 &
		done
		wait
		val=$(for L in 0 1; do
			awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { x = $4 } END { print (x == "") ? "nan" : x }' "$T/pc$L"
		done | awk '{ if ($1 == "nan") bad = 1; s += $1 } END { print bad ? "nan" : s }')
		[ "$val" != nan ] && break
		echo "(two ib_send_bw, try $try, gave no result: $(grep -v '^ *$' "$T/pc0" | tail -1) / $(grep -v '^ *$' "$T/pc1" | tail -1))" >&2
	done
	echo "$val"
}

# rift-perf bw, 64 KiB, to both addresses, active-active: MB/s (2^20),
# nan unless both paths carried data.
rbw() {
	# shellcheck disable=SC2086 # PIN1: a command and its arguments, or none
	timeout 120 $PIN1 "$PERF" -S --transport rdma -p 18611 0.0.0.0 >"$T/rs" 2>&1 &
	sp=$!
	sleep 0.5
	# shellcheck disable=SC2086 # PIN0: as PIN1
	RIFT_GROUP_POLICY=active-active timeout 120 $PIN0 "$PERF" --transport rdma \
		-p 18611 --json --test bw --poll busy -s 65536 -D "$BW_SECS" \
		"$A0,$A1" >"$T/rc" 2>"$T/re"
	wait "$sp" 2>/dev/null
	val=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
if d.get("active_paths") != 2:
    print("nan"); sys.exit()
print(d["results"][0]["bw"]["gbytes_per_s"] * 953.67431640625)' "$T/rc" 2>/dev/null)
	[ "$(v "$val")" = nan ] && echo "(rift-perf active-active gave no result: $(tail -1 "$T/re"))" >&2
	v "$val"
}

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

if [ -z "${BENCH_GROUP_BW_ONLY:-}" ]; then
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
fi

echo "bandwidth, 64 KiB, $ROUNDS rounds of $BW_SECS s (MB/s): two ib_send_bw at once, one per link, then rift active-active over both" >&2
series "$T/aa" "$ROUNDS" pt2 rbw 1 'ib_send_bw x2' active-active
# shellcheck disable=SC2046 # its seven fields
set -- $(stats "$T/aa")
awk -v x="$1" -v q1="$2" -v q3="$3" -v n="$4" -v m="$5" -v b="$6" -v c="$7" 'BEGIN {
	printf "  bandwidth 64K  two ib_send_bw %8.1f MB/s  active-active %8.1f MB/s  %5.3fx [%.3f-%.3f, %d rounds] (%.3fx)  goal >= 0.90x  %s\n",
	    b, c, x, q1, q3, n, m, (x != "nan" && x >= 0.90) ? "PASS" : "MISS"
}'
