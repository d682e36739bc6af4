#!/bin/sh
# tests/lab/valkey-rdma.sh BINDIR CONFORMANCE - issue 18, items 2 and 4:
# Valkey's RDMA protocol in the lab (pair topology).  rift-kv serves RESP
# on --valkey-rdma-port over link0's server address; then
#  1. valkey-rdma-conformance (tests/lab/valkey-rdma-conformance.c, a
#     client written from the protocol's specification with rdma_cm and
#     verbs, nothing of rift) checks control messages, both windows and
#     their re-advertisement, keepalive, and that five malformed peers are
#     each disconnected while its first connection is still served;
#  2. rift-kv's log names each refusal (librift's warning and rift-kv's
#     line per client);
#  3. RESP round trips through librift's own byte-stream client
#     (rift_stream_connect, in rift-kv-cli and rift-kv-benchmark): SET and
#     GET, then a benchmark whose 300 kB values cross both sides' 1 MiB
#     buffers again and again.
# rift-kv's TCP port is the same number: Valkey serves TCP and RDMA on one
# port, and rdma_cm's port space is not TCP's.  Run by make test-lab.
set -u
bin=${1:?usage: tests/lab/valkey-rdma.sh BINDIR CONFORMANCE}
conf=${2:?usage: tests/lab/valkey-rdma.sh BINDIR CONFORMANCE}
A0=${RIFT_LAB_SERVER_ADDR0:?run inside the lab, pair topology}
port=6390
url="valkey-rdma://$A0:$port"
T=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT INT TERM
fail() {
	echo "valkey-rdma: FAILED: $*" >&2
	for f in "$T"/*.out "$T"/*.err; do
		[ -s "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }
	done
	exit 1
}

timeout 300 "$bin/rift-kv" --port $port --bind 127.0.0.1 \
	--valkey-rdma-port $port --valkey-rdma-bind "$A0" \
	>"$T/server.out" 2>"$T/server.err" &
sp=$!
for i in $(seq 50); do
	grep -q "rift-kv: ready:" "$T/server.out" && break
	sleep 0.2
done
grep -q "rift-kv: ready:.*valkey-rdma on $url" "$T/server.out" ||
	fail "rift-kv never said it serves $url"

timeout 120 "$conf" "$A0" $port >"$T/conformance.out" 2>&1 ||
	fail "valkey-rdma-conformance exited $?"
cat "$T/conformance.out"
n=$(grep -c "valkey-rdma .*control message with unknown opcode 30583\|RegisterXferMemory advertises a receive buffer of 0 bytes\|control message of 16 bytes\|SetClientFeature asks for features 0x1\|past the 1048576-byte receive buffer" "$T/server.err")
[ "$n" -ge 10 ] ||
	fail "rift-kv logged $n of the 10 lines the five refusals make (librift's warning and rift-kv's own, each)"
kill -0 $sp 2>/dev/null || fail "rift-kv died"

"$bin/rift-kv-cli" -u "$url" set vr-key "over valkey rdma" >"$T/cli.out" 2>&1 ||
	fail "rift-kv-cli SET over $url"
got=$("$bin/rift-kv-cli" -u "$url" get vr-key 2>"$T/cli.err") ||
	fail "rift-kv-cli GET over $url"
[ "$got" = "over valkey rdma" ] || fail "GET read '$got'"
info=$("$bin/rift-kv-cli" -u "$url" --info client list 2>&1) ||
	fail "CLIENT LIST over $url"
echo "$info" | grep -q "valkey-rdma" || fail "CLIENT LIST: $info"
timeout 200 "$bin/rift-kv-benchmark" -u "$url" -c 4 -n 400 -d 300000 \
	-t set,get >"$T/bench.out" 2>"$T/bench.err" ||
	fail "rift-kv-benchmark (300 kB values) over $url exited $?"
grep -q "^GET: .* requests per second" "$T/bench.out" || fail "no GET result"
timeout 200 "$bin/rift-kv-benchmark" -u "$url" -c 8 -n 20000 -P 16 -d 64 \
	-t set,get >>"$T/bench.out" 2>>"$T/bench.err" ||
	fail "rift-kv-benchmark (pipelined) over $url exited $?"
cat "$T/bench.out"
kill "$sp" 2>/dev/null
wait "$sp" 2>/dev/null
echo "valkey-rdma: conformance passed, refusals logged, RESP over rift_stream: ok"
