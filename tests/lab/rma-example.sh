#!/bin/sh
# tests/lab/rma-example.sh EXAMPLE - issue 17, item 7: examples/rma.c as a
# user runs it, two processes over rdma:// in the lab's pair topology,
# surviving port loss.  The client writes and reads back a buffer of the
# server's every second for ROUNDS rounds over both links
# (rdma://A0,A1); meanwhile link0 goes down and up, then link1: whichever
# the session runs on dies once at least, and it moves to the other.
# Passes when the client checked every round and both ends exited 0, and
# the client saw its path change.  Run by make test-lab (pair boot).
set -u
ex=${1:?usage: tests/lab/rma-example.sh EXAMPLE-BINARY}
A0=${RIFT_LAB_SERVER_ADDR0:?run inside the lab, pair topology}
A1=${RIFT_LAB_SERVER_ADDR1:?run inside the lab, pair topology}
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT INT TERM
fail() { lab_fail rma-example "$*"; }

timeout 60 "$ex" server rdma://0.0.0.0:7790 >"$T/server.out" 2>&1 &
sp=$!
sleep 1
timeout 60 "$ex" client "rdma://$A0:7790,$A1:7790" 16 >"$T/client.out" 2>&1 &
cp=$!
# Each link down for 2 s (within the session's 10 s grace), in turn.
lab_cut_links 3 2 link0 link1
wait "$cp" || fail "the client exited $?"
wait "$sp" || fail "the server exited $?"
rounds=$(grep -c "read them back: identical" "$T/client.out")
[ "$rounds" -eq 16 ] || fail "$rounds rounds of 16 checked"
grep -q "path changed" "$T/client.out" ||
	fail "the client's session never moved (no path changed)"
grep "path down\|path changed" "$T/client.out"
echo "rma-example: 16 rounds written and read back across link0 and link1 going down: ok"
