#!/bin/sh
# tests/lab/kv-failover.sh BINDIR - issue 18, item 4: RESP over rift in the
# lab, pair topology, links cut under a benchmark.  rift-kv serves RESP
# over rdma:// on both links; rift-kv-benchmark (SET and GET, 4 clients)
# runs against rdma://A0,A1 while link0 and then link1 go down for 2 s
# each: whichever link a session runs on dies once at least and the
# session moves to the other.  Passes when the benchmark finished with no
# error reply, no connection lost and no request left unanswered (its
# exit status), was still running when the last link came back, its
# sessions saw a path go down, and a key written before the faults reads
# back after them.  Run by make test-lab (pair boot).
set -u
bin=${1:?usage: tests/lab/kv-failover.sh BINDIR}
A0=${RIFT_LAB_SERVER_ADDR0:?run inside the lab, pair topology}
A1=${RIFT_LAB_SERVER_ADDR1:?run inside the lab, pair topology}
url="rdma://$A0:7800,$A1:7800"
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT INT TERM
fail() { lab_fail kv-failover "$*"; }

timeout 180 "$bin/rift-kv" --port 16379 --bind 127.0.0.1 \
	--rift-url rdma://0.0.0.0:7800 >"$T/server.out" 2>&1 &
sp=$!
for i in $(seq 50); do
	grep -q "^rift-kv: ready:" "$T/server.out" && break
	sleep 0.2
done
grep -q "^rift-kv: ready:" "$T/server.out" || fail "rift-kv never said it was ready"
"$bin/rift-kv-cli" -u "$url" set kv-failover before-the-faults \
	>"$T/cli.out" 2>&1 || fail "SET before the faults"

timeout 150 "$bin/rift-kv-benchmark" -u "$url" -c 4 -n 50000 -d 64 \
	-t set,get >"$T/bench.out" 2>"$T/bench.err" &
bp=$!
lab_cut_links 2 2 link0 link1
kill -0 "$bp" 2>/dev/null ||
	fail "the benchmark ended before the links came back: raise -n"
wait "$bp" || fail "rift-kv-benchmark exited $?"
grep -q "^SET: .* requests per second" "$T/bench.out" || fail "no SET result"
grep -q "^GET: .* requests per second" "$T/bench.out" || fail "no GET result"
grep -q "path down" "$T/bench.err" ||
	fail "no session of the benchmark lost its path"
got=$("$bin/rift-kv-cli" -u "$url" get kv-failover 2>"$T/cli.err") ||
	fail "GET after the faults"
[ "$got" = before-the-faults ] || fail "GET after the faults read '$got'"
kill "$sp" 2>/dev/null
wait "$sp" 2>/dev/null
cat "$T/bench.out"
echo "kv-failover: $(grep -c 'path down' "$T/bench.err") path downs in the benchmark's sessions, every request answered: ok"
