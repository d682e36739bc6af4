#!/bin/sh
# bench/run.sh - rift over TCP loopback against plain C sockets, side by side.
#
# Builds the programs in bench/ into build/bench/ and runs, in each of
# BENCH_ROUNDS rounds, every case below one after the other (odd rounds run
# the baseline first, even rounds rift first, so neither side always gets
# the warmer or quieter slot).  The table shows the median of the rounds,
# the ratio of the medians, and every per-round ratio.
#
#   latency     32-byte messages echoed back, round trip measured by the
#               client: lat_plain (blocking sockets, TCP_NODELAY, write +
#               read) against lat_rift (rift_conn_send, echo from on_recv);
#               plus "lat_plain -E" (epoll_wait before each read) as a
#               reference for what any event loop pays
#   throughput  64 KiB messages streamed one way, measured at the receiver:
#               tput_plain (write() of 64 KiB, read() into 256 KiB) against
#               tput_rift (rift_buf_alloc + rift_conn_send_buf)
#
# Before the rounds, once: what keeping metrics costs per message
# (bench/hist_cost.c: rift__hist_record and the per-ack hook, against the
# release library, in ns; docs/metrics.md quotes it).
#
# Then a size sweep (bench/sweep.awk), from 4 KiB to 64 MiB, both
# processes on one CPU, each size in each of BENCH_SWEEP_ROUNDS rounds:
#
#   round trip  lat_plain against lat_rift -Z (rift_buf_alloc +
#               rift_conn_send_buf both ways: like the plain echo, nothing
#               is copied outside the kernel), and lat_rift with
#               rift_conn_send (a copy per send) for reference
#   one way     tput_plain against tput_rift; up to 256 KiB the plain
#               reader reads 256 KiB at a time (a burst of messages per
#               read, as rift does), above it with -m: each message whole
#               into one buffer, as a message library must deliver it
#
# printed as rift's speed relative to plain per size (the median of the
# per-round ratios), with the goal (>= 0.90x at every size) and whether
# rift's round trip grows in proportion to the size from 1 MiB up.
#
# Placement: the main rows pin both processes to one CPU.  On this kind of
# small shared VM that is the steady case: a round trip is the CPU work of
# both sides plus two context switches, which is exactly the cost rift adds
# to.  The "two CPUs" rows put each process on its own CPU, like two hosts;
# there a round trip also pays two cross-CPU wake-ups, which are slow and
# noisy in a VM.  Busy and adaptive polling only make sense with a CPU per
# process, so they run only in that placement.
#
# A benchmark, not a test: missing a goal still exits 0.  It exits 1 only
# if the programs cannot be built or a run fails outright (crash, error,
# timeout); the other runs still go on and are reported.
#
# Environment: BENCH_ROUNDS (5), BENCH_LAT_ITERS (20000), BENCH_LAT_WARMUP
# (2000), BENCH_TPUT_BYTES (2g), BENCH_CPU (0), BENCH_CPUS_SPLIT (0,1),
# BENCH_BUDGET_S (150: no round starts that would likely end later), CC (cc);
# the sweep: BENCH_SWEEP_SIZES ("4k 16k 64k 256k 1m 2m 4m 8m 16m 32m 64m";
# "" skips it), BENCH_SWEEP_ROUNDS (7), BENCH_SWEEP_BYTES (1g per one-way
# run), BENCH_SWEEP_BUDGET_S (300).
set -u

cd "$(dirname "$0")/.." || exit 1

ROUNDS=${BENCH_ROUNDS:-5}
LAT_ITERS=${BENCH_LAT_ITERS:-20000}
LAT_WARMUP=${BENCH_LAT_WARMUP:-2000}
LAT_SIZE=32
TPUT_BYTES=${BENCH_TPUT_BYTES:-2g}
TPUT_MSG=64k
CPU=${BENCH_CPU:-0}
SPLIT=${BENCH_CPUS_SPLIT:-0,1}
CC=${CC:-cc}
OUT=build/bench
BUDGET=${BENCH_BUDGET_S:-150} # no new round once it would end later, s
SWEEP_SIZES=${BENCH_SWEEP_SIZES-4k 16k 64k 256k 1m 2m 4m 8m 16m 32m 64m}
SWEEP_ROUNDS=${BENCH_SWEEP_ROUNDS:-7}
SWEEP_BYTES=${BENCH_SWEEP_BYTES:-1g}
SWEEP_BUDGET=${BENCH_SWEEP_BUDGET_S:-300}
SWEEP_GOAL=0.90   # rift's speed / plain's, at every size
SWEEP_LINEAR=1.25 # rift's spread of round trip per MiB from 1 MiB up,
                  # largest / smallest, over plain's
RUN_LIMIT=120 # seconds one program may take before it is killed

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rift-bench.XXXXXX") || exit 1
pid=""
failures=0

cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		pid=""
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "bench: interrupted" >&2; exit 130' INT TERM HUP

# ---- build ----------------------------------------------------------------

if [ ! -f build/lib/librift.a ]; then
	echo "bench: build/lib/librift.a is missing: run 'make lib' first" >&2
	exit 1
fi
mkdir -p "$OUT" || exit 1
CFLAGS="-std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Wshadow \
-Wstrict-prototypes -Wmissing-prototypes -Iinclude"
# What the static library needs besides itself, as its pkg-config file
# says (e.g. -lrdmacm -libverbs when the verbs transport is built in).
LIBS=$(sed -n 's/^Libs.private: *//p' build/lib/rift.pc 2>/dev/null)
[ -n "$LIBS" ] || LIBS=-lpthread
for prog in lat_plain lat_rift tput_plain tput_rift; do
	# shellcheck disable=SC2086
	$CC $CFLAGS "bench/$prog.c" bench/bench.c -o "$OUT/$prog" \
		build/lib/librift.a $LIBS || {
		echo "bench: building $prog failed" >&2
		exit 1
	}
done
# The metrics hooks are internal: this one program sees src/ as well.
# shellcheck disable=SC2086
$CC $CFLAGS -Isrc bench/hist_cost.c bench/bench.c -o "$OUT/hist_cost" \
	build/lib/librift.a $LIBS || {
	echo "bench: building hist_cost failed" >&2
	exit 1
}

ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
if [ "$ncpu" -lt 2 ]; then
	echo "bench: one CPU only: skipping the two-CPU rows" >&2
	SPLIT=""
fi

# ---- run ------------------------------------------------------------------

# run ROUND LABEL PROGRAM ARGS...: one program in the background (so the
# traps can stop it), its RESULT line tagged with the round and label
# (which may carry more fields: "lat size=4096"), appended to $RESULTS.
RESULTS="$tmp/results"
run() {
	round=$1 label=$2
	shift 2
	timeout -k 5 "$RUN_LIMIT" "$@" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	wait "$pid"
	rc=$?
	pid=""
	line=$(grep '^RESULT ' "$tmp/out")
	if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
		echo "bench: round $round $label: '$*' failed (exit $rc):" >&2
		cat "$tmp/err" >&2
		failures=$((failures + 1))
		return
	fi
	echo "$line round=$round label=$label" >>"$RESULTS"
	printf '  %-9s %s\n' "$label" "$(echo "$line" | cut -d' ' -f3- |
		sed 's/ n=[0-9]*//; s/ bytes=[0-9]*//')"
}

# pair ROUND LABEL "PLAIN CMD" "RIFT CMD": the two sides, order by round.
pair() {
	if [ $(($1 % 2)) -eq 1 ]; then
		run "$1" "$2" $3
		run "$1" "$2" $4
	else
		run "$1" "$2" $4
		run "$1" "$2" $3
	fi
}

LAT="-s $LAT_SIZE -n $LAT_ITERS -w $LAT_WARMUP"
TPUT="-s $TPUT_MSG -b $TPUT_BYTES"
start=$(date +%s)
: >"$tmp/results"
rev=$(git log -1 --format=%h 2>/dev/null || echo '?')
if [ -n "$(git status --porcelain -- src include 2>/dev/null)" ]; then
	rev="$rev + uncommitted changes in src/ or include/"
fi
echo "rift bench: $ROUNDS rounds, interleaved; build/lib/librift.a from $rev"
if line=$(timeout -k 5 "$RUN_LIMIT" "$OUT/hist_cost" | grep '^RESULT hist '); then
	echo "$line" | awk '{
		for (i = 4; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "metrics cost (median of %s x %s calls): rift__hist_record %s ns per record, rift__metrics_acked %s ns per acknowledged message\n", v["rounds"], v["n"], v["record_ns"], v["acked_ns"] }'
else
	echo "bench: hist_cost failed" >&2
	failures=$((failures + 1))
fi
done_rounds=0
for r in $(seq 1 "$ROUNDS"); do
	# Stay within the time budget on a machine that is slower than
	# expected: skip a round that would likely end past it.
	now=$(date +%s)
	if [ "$done_rounds" -gt 0 ] && [ $((now - start + (now - start) / \
		done_rounds)) -gt "$BUDGET" ]; then
		echo "bench: stopping after $done_rounds rounds:" \
			"the next would pass BENCH_BUDGET_S=$BUDGET s" >&2
		break
	fi
	echo "round $r/$ROUNDS"
	pair "$r" lat-1cpu "$OUT/lat_plain -a $CPU $LAT" \
		"$OUT/lat_rift -a $CPU $LAT -P event"
	run "$r" lat-1cpu "$OUT/lat_plain" -a "$CPU" $LAT -E
	pair "$r" tput-1cpu "$OUT/tput_plain -a $CPU $TPUT" \
		"$OUT/tput_rift -a $CPU $TPUT -P event"
	if [ -n "$SPLIT" ]; then
		pair "$r" lat-2cpu "$OUT/lat_plain -a $SPLIT $LAT" \
			"$OUT/lat_rift -a $SPLIT $LAT -P event"
		run "$r" lat-2cpu "$OUT/lat_plain" -a "$SPLIT" $LAT -E
		run "$r" lat-2cpu "$OUT/lat_rift" -a "$SPLIT" $LAT -P busy
		run "$r" lat-2cpu "$OUT/lat_rift" -a "$SPLIT" $LAT -P adaptive
		pair "$r" tput-2cpu "$OUT/tput_plain -a $SPLIT $TPUT" \
			"$OUT/tput_rift -a $SPLIT $TPUT -P event"
	fi
	done_rounds=$r
done
elapsed=$(($(date +%s) - start))

# ---- report ---------------------------------------------------------------

echo
awk -v rounds="$done_rounds" -v iters="$LAT_ITERS" -v warmup="$LAT_WARMUP" \
	-v size="$LAT_SIZE" -v bytes="$TPUT_BYTES" -v cpu="$CPU" \
	-v pair_cpus="$SPLIT" -v elapsed="$elapsed" \
	-f bench/median.awk -f bench/report.awk "$tmp/results"

# ---- size sweep -----------------------------------------------------------

# bytes SIZE: "64k" -> 65536 (k, m, g: powers of 1024).
bytes() {
	case $1 in
	*[kK]) echo $((${1%?} * 1024)) ;;
	*[mM]) echo $((${1%?} * 1048576)) ;;
	*[gG]) echo $((${1%?} * 1073741824)) ;;
	*) echo "$1" ;;
	esac
}

if [ -n "$SWEEP_SIZES" ]; then
	echo
	echo "size sweep: $SWEEP_SIZES; $SWEEP_ROUNDS rounds, interleaved"
	RESULTS="$tmp/sweep"
	: >"$RESULTS"
	start=$(date +%s)
	done_rounds=0
	for r in $(seq 1 "$SWEEP_ROUNDS"); do
		now=$(date +%s)
		if [ "$done_rounds" -gt 0 ] && [ $((now - start + (now - \
			start) / done_rounds)) -gt "$SWEEP_BUDGET" ]; then
			echo "bench: sweep stopping after $done_rounds rounds:" \
				"the next would pass BENCH_SWEEP_BUDGET_S=$SWEEP_BUDGET s" >&2
			break
		fi
		echo "sweep round $r/$SWEEP_ROUNDS"
		for size in $SWEEP_SIZES; do
			b=$(bytes "$size")
			# About 512 MiB of round trips: 10 to 20000 of them.
			n=$((536870912 / b))
			[ "$n" -gt 20000 ] && n=20000
			[ "$n" -lt 10 ] && n=10
			w=$((n / 10 > 2 ? n / 10 : 2))
			whole=""
			[ "$b" -gt 262144 ] && whole=-m
			L="-a $CPU -s $size -n $n -w $w"
			pair "$r" "lat size=$b" "$OUT/lat_plain $L" \
				"$OUT/lat_rift $L -P event -Z"
			run "$r" "lat size=$b" "$OUT/lat_rift" $L -P event
			T="-a $CPU -s $size -b $SWEEP_BYTES"
			pair "$r" "tput size=$b" "$OUT/tput_plain $T $whole" \
				"$OUT/tput_rift $T -P event"
		done
		done_rounds=$r
	done
	elapsed=$(($(date +%s) - start))
	echo
	awk -v rounds="$done_rounds" -v cpu="$CPU" -v bytes="$SWEEP_BYTES" \
		-v goal="$SWEEP_GOAL" -v linear="$SWEEP_LINEAR" \
		-v elapsed="$elapsed" -f bench/median.awk -f bench/sweep.awk "$RESULTS"
fi

if [ "$failures" -ne 0 ]; then
	echo "bench: $failures runs failed; their rows use the other rounds" >&2
	exit 1
fi
exit 0
