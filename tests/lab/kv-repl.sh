#!/bin/sh
# tests/lab/kv-repl.sh BINDIR - issue 18, item 4: rift-kv replication in
# the lab, pair topology.  A primary listens for rift on both links; a
# replica follows it over rdma://A0,A1 with use_rdma_write (the log by
# one-sided RDMA WRITE into the replica's ring) and a replica_file.
#
#  1. A writer sends SET k:N N then WAIT 1 5000 to the primary (over
#     loopback TCP, untouched by the faults), one pair after another,
#     while link0 and then link1 go down for 2 s each: whichever link the
#     replication session runs on dies once at least and the session
#     re-attaches on the other.  Every key whose WAIT said 1 must read
#     back from the replica with its value, the WAITs after the last
#     fault must say 1 (replication survived), the replica's log must
#     show a path down, and the log must have gone by one-sided writes:
#     the replica applied ring writes, and the primary's rift moved
#     pieces by RDMA WRITE alone (INFO rdma: rdma_rma_direct).
#  2. The replica is killed (SIGKILL), keys are written meanwhile, and it
#     is started again on its file: it resumes by a partial resync
#     (INFO: repl_partial_syncs:1, repl_loaded_offset > 0), and every key,
#     those written while it was dead too, reads back.
# Run by make test-lab (pair boot).
set -u
bin=${1:?usage: tests/lab/kv-repl.sh BINDIR}
A0=${RIFT_LAB_SERVER_ADDR0:?run inside the lab, pair topology}
A1=${RIFT_LAB_SERVER_ADDR1:?run inside the lab, pair topology}
. "$(dirname "$0")/lib.sh"
url="rdma://$A0:7810,$A1:7810"
T=$(mktemp -d)
pp= rp= wp=
trap 'kill $pp $rp $wp 2>/dev/null; rm -rf "$T"' EXIT INT TERM
fail() { lab_fail kv-repl "$*"; }
t0=$(date +%s)
say() { echo "kv-repl: [$(($(date +%s) - t0)) s] $*"; }
P="redis-cli -p 16379"
R="redis-cli -p 16380"
ready() { # log file, pid
	for i in $(seq 100); do
		grep -q "^rift-kv: ready:" "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
replica_start() { # log name; not under timeout: $rp is rift-kv's pid
	"$bin/rift-kv" --port 16380 --bind 127.0.0.1 \
		--replicaof "$url" --replica-file "$T/replica.aof" \
		>"$T/$1.log" 2>&1 &
	rp=$!
	ready "$T/$1.log" $rp || fail "the replica never said it was ready"
}
# Wait until the replica's link is up (bounded: a TCG guest is slow).
link_up() {
	for i in $(seq 300); do
		$R info replication 2>/dev/null | tr -d '\r' |
			grep -q '^master_link_status:up$' && return 0
		sleep 0.2
	done
	fail "the replica's link never came up: $($R info replication | tr -d '\r' | grep -E 'master_link|repl_last_error')"
}
field() { # cli, section, field: its value
	$1 info "$2" | tr -d '\r' | sed -n "s/^$3://p"
}

timeout 300 "$bin/rift-kv" --port 16379 --bind 127.0.0.1 \
	--rift-url rdma://0.0.0.0:7810 >"$T/primary.log" 2>&1 &
pp=$!
ready "$T/primary.log" $pp || fail "the primary never said it was ready"
replica_start replica
link_up
[ "$(field "$R" replication repl_transport)" = rdma-write ] ||
	fail "the replica does not offer its ring: $(field "$R" replication repl_transport)"

# ---- 1. writes acknowledged by WAIT across link cuts ---------------------
# (paced by a sleep a pair, forks being slow in a TCG guest; until the
# stop file is there, 3 s after the last link came back)
(
	i=0
	while [ ! -e "$T/stop" ]; do
		echo "SET k:$i $i"
		echo "WAIT 1 5000"
		i=$((i + 1))
		sleep 0.1
	done
) | $P >"$T/writer.out" 2>&1 &
wp=$!
start=$(date +%s)
say "writer started; cutting link0, then link1"
lab_cut_links 2 2 link0 link1
sleep 3
kill -0 $wp 2>/dev/null || fail "the writer ended before the links came back"
touch "$T/stop"
wait $wp || fail "the writer (redis-cli) exited $?"
secs=$(($(date +%s) - start))
# writer.out: OK, then the WAIT's count, per key
awk 'NR % 2 == 0 { print (NR / 2 - 1), $0 }' "$T/writer.out" >"$T/acks.out"
total=$(wc -l <"$T/acks.out")
acked=$(awk '$2 == 1' "$T/acks.out" | wc -l)
[ "$(grep -vc '^OK$\|^[01]$' "$T/writer.out")" = 0 ] ||
	fail "the writer got other replies: $(grep -v '^OK$\|^[01]$' "$T/writer.out" | head -n 3)"
[ "$total" -ge 20 ] || fail "only $total writes in $secs s"
tail -n 5 "$T/acks.out" | awk '$2 != 1 { bad = 1 } END { exit bad }' ||
	fail "the last WAITs did not say 1: replication did not survive the cuts"
awk '$2 == 1 { print "GET k:" $1 }' "$T/acks.out" | $R >"$T/got.out" 2>&1
awk '$2 == 1 { print $1 }' "$T/acks.out" | cmp -s - "$T/got.out" || {
	awk '$2 == 1 { print $1 }' "$T/acks.out" | diff - "$T/got.out" | head -n 10 >&2
	fail "an acknowledged write is missing or wrong on the replica"
}
grep -q "path to .* down" "$T/replica.log" ||
	fail "the replication session never lost its path"
writes=$(field "$R" replication repl_ring_writes)
direct=$(field "$P" rdma rdma_rma_direct)
[ "${writes:-0}" -gt 0 ] || fail "the replica applied no ring write"
[ "${direct:-0}" -gt 0 ] ||
	fail "the primary's rift moved no piece by RDMA WRITE (rdma_rma_direct $direct)"
echo "kv-repl: $acked of $total writes in $secs s acknowledged by WAIT across link0 and link1 going down, all read back from the replica; $writes ring writes, $direct by RDMA WRITE alone"
grep "path to" "$T/replica.log"

# ---- 2. a killed replica resumes from its file ---------------------------
say "killing the replica"
kill -KILL $rp
# A killed process's RDMA resources go in the kernel's exit, slowly
# under TCG; its RESP port is free again once it is gone.
for i in $(seq 600); do
	kill -0 $rp 2>/dev/null || break
	sleep 0.1
done
kill -0 $rp 2>/dev/null && fail "the killed replica is still there 60 s later"
wait $rp 2>/dev/null
say "the replica is gone"
i=0
while [ $i -lt 20 ]; do
	echo "SET dead:$i $i"
	i=$((i + 1))
done | $P >/dev/null
[ "$($P wait 1 100)" = 0 ] || fail "WAIT counted the killed replica"
off=$(field "$P" replication master_repl_offset)
replica_start restarted
say "the replica restarted"
link_up
say "its link is up"
[ "$($P wait 1 10000)" = 1 ] || fail "the restarted replica never caught up"
[ "$(field "$R" replication repl_partial_syncs)" = 1 ] ||
	fail "the restarted replica did not resume by a partial resync: $(grep -i 'resync\|loaded' "$T/restarted.log" | tail -n 3)"
[ "$(field "$R" replication repl_loaded_offset)" -gt 0 ] ||
	fail "the restarted replica loaded nothing from its file"
[ "$(field "$R" replication slave_repl_offset)" -ge "$off" ] ||
	fail "the restarted replica's offset is behind $off"
i=0
while [ $i -lt 20 ]; do
	echo "GET dead:$i"
	i=$((i + 1))
done | $R >"$T/dead.out"
seq 0 19 | cmp -s - "$T/dead.out" || fail "keys written while the replica was dead are missing"
awk '$2 == 1 { print "GET k:" $1 }' "$T/acks.out" | $R >"$T/got.out" 2>&1
awk '$2 == 1 { print $1 }' "$T/acks.out" | cmp -s - "$T/got.out" ||
	fail "after the restart, an acknowledged write is missing on the replica"
echo "kv-repl: the killed replica resumed from its file by a partial resync at offset $(field "$R" replication repl_loaded_offset), caught up to $off: ok"
kill $rp $pp 2>/dev/null
wait 2>/dev/null
exit 0
