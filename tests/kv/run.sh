#!/bin/sh
# tests/kv/run.sh - rift-kv end to end, with stock Redis clients and its
# own.
#
#   sh tests/kv/run.sh [--quick] BINDIR KVPROBE_BINARY
#
# BINDIR holds rift-kv, rift-kv-cli and rift-kv-benchmark.
#
# Starts the server on a free port (RESP over TCP, and RESP over rift on
# tcp://127.0.0.1:0), then: every command of commands.txt through
# redis-cli against expected.txt (Redis 7.0.15's own replies, but for
# SELECT 1 and CONFIG GET databases: rift-kv has one database); KEYS
# patterns; expiry, lazy and active; protocol errors that close;
# pipelining and backpressure (kvprobe); RESP over rift; /metrics; INFO;
# rift-kv-cli (commands.txt again, against redis-cli's output) and
# rift-kv-benchmark over rift; config errors; redis-benchmark (skipped
# with --quick, which the ASan build runs); and a clean exit on SIGTERM
# (ASan's leak check runs then).
# Fails if any check fails or the server died.
set -u

quick=0
if [ "${1:-}" = "--quick" ]; then
	quick=1
	shift
fi
[ $# -eq 2 ] || { echo "usage: run.sh [--quick] BINDIR KVPROBE" >&2; exit 2; }
BIN=$1/rift-kv
KVCLI=$1/rift-kv-cli
KVBENCH=$1/rift-kv-benchmark
PROBE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
PID=
failures=0
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$T"' EXIT

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}
mark=0
ok() { # at the end of a group of checks: said only if none failed
	[ $failures -eq $mark ] && echo "  ok    $*"
	mark=$failures
}

# ---- start -------------------------------------------------------------
start() {
	for try in 1 2 3 4 5 6 7 8 9 10; do
		PORT=$(( $(od -An -N2 -tu2 /dev/urandom) % 30000 + 20000 ))
		: > "$T/log"
		"$BIN" --port "$PORT" --rift-url tcp://127.0.0.1:0 \
			--metrics-port 0 --proto-max-bulk-len 2097152 \
			--client-query-buffer-limit 4194304 >"$T/log" 2>&1 &
		PID=$!
		i=0
		while [ $i -lt 100 ]; do
			grep -q "rift-kv: ready:" "$T/log" && break
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.05
			i=$((i + 1))
		done
		if grep -q "rift-kv: ready:" "$T/log"; then
			RIFT_URL=$(sed -n 's/.*rift on \([^ ,]*\)[ ,].*/\1/p' "$T/log")
			MURL=$(sed -n 's/.*metrics on \(http:[^ ,]*\)[ ,].*/\1/p' "$T/log")
			MADDR=$(echo "$MURL" | sed 's|http://\([^/]*\)/.*|\1|')
			return 0
		fi
		kill "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
		PID=
		grep -q "in use" "$T/log" || break
	done
	cat "$T/log"
	echo "FAIL: rift-kv did not start"
	exit 1
}
start
CLI="redis-cli -p $PORT"
echo "rift-kv on $PORT (pid $PID), rift on $RIFT_URL, metrics on $MURL"

alive() {
	kill -0 "$PID" 2>/dev/null && [ "$($CLI ping 2>&1)" = "PONG" ]
}

# ---- the command table -------------------------------------------------
$CLI --no-raw < "$HERE/commands.txt" > "$T/out" 2>&1
if diff -u "$HERE/expected.txt" "$T/out" > "$T/diff"; then
	ok "commands.txt: $(wc -l < "$HERE/commands.txt") commands, replies as Redis 7.0"
else
	head -n 60 "$T/diff"
	fail "commands.txt: replies differ from expected.txt"
fi

# ---- KEYS patterns (Redis lists keys in no order: sorted here) ---------
$CLI flushall >/dev/null
$CLI mset hello 1 hallo 2 hxllo 3 hllo 4 heeeello 5 'h[e]llo' 6 'h*llo' 7 'h\llo' 8 >/dev/null
keys() { # pattern, expected keys blank-separated (sorted)
	got=$($CLI --raw keys "$1" | sort | tr '\n' ' ' | sed 's/ $//')
	[ "$got" = "$2" ] || fail "KEYS '$1': got '$got', expected '$2'"
}
keys 'h?llo' 'h*llo h\llo hallo hello hxllo'
keys 'h*llo' 'h*llo h[e]llo h\llo hallo heeeello hello hllo hxllo'
keys 'h[ae]llo' 'hallo hello'
keys 'h[^e]llo' 'h*llo h\llo hallo hxllo'
keys 'h[a-b]llo' 'hallo'
keys 'h[b-a]llo' 'hallo'
keys 'h\*llo' 'h*llo'
keys 'h\[e]llo' 'h[e]llo'
keys 'h\\llo' 'h\llo'
keys '*' 'h*llo h[e]llo h\llo hallo heeeello hello hllo hxllo'
keys 'x*' ''
ok "KEYS patterns"

# ---- expiry ------------------------------------------------------------
$CLI flushall >/dev/null
$CLI set lazy v px 100 >/dev/null
sleep 0.3
[ "$($CLI --no-raw get lazy)" = "(nil)" ] || fail "a key past its PX is still there"
[ "$($CLI ttl lazy)" = "-2" ] || fail "TTL of an expired key is not -2"
# Active expiry: 300 keys that nobody reads again go within a second or
# two (the periodic cycle samples them), 10 without a time stay.
i=0
while [ $i -lt 300 ]; do
	echo "SET vol:$i v PX 100"
	i=$((i + 1))
done > "$T/vol"
i=0
while [ $i -lt 10 ]; do
	echo "SET keep:$i v"
	i=$((i + 1))
done >> "$T/vol"
$CLI < "$T/vol" >/dev/null
n=$($CLI dbsize)
[ "$n" -ge 300 ] || fail "DBSIZE after 310 SETs: $n"
i=0
while [ $i -lt 40 ] && [ "$($CLI dbsize)" != 10 ]; do
	sleep 0.1
	i=$((i + 1))
done
n=$($CLI dbsize)
[ "$n" = 10 ] || fail "active expiry: DBSIZE $n 4 s later, expected 10"
exp=$($CLI info stats | tr -d '\r' | sed -n 's/^expired_keys://p')
[ "$exp" -ge 300 ] || fail "INFO expired_keys $exp, expected >= 300"
ok "expiry: lazy, and active (expired_keys $exp)"

# ---- protocol errors close the connection ------------------------------
answers() { # kvprobe address, bytes (printf format), expected first line
	got=$(printf "$2" | "$PROBE" -w 2000 "$1")
	rc=$?
	first=$(printf '%s' "$got" | head -n 1 | tr -d '\r')
	[ "$first" = "$3" ] || fail "'$2' to $1: got '$first', expected '$3'"
	[ $rc -eq 0 ] || fail "'$2' to $1: the connection stayed open"
}
proto() { # bytes, the error that closes
	answers "tcp:127.0.0.1:$PORT" "$1" "$2"
}
proto '*1\r\n$x\r\n' '-ERR Protocol error: invalid bulk length'
proto '*x\r\n' '-ERR Protocol error: invalid multibulk length'
proto '*1\r\n+PING\r\n' "-ERR Protocol error: expected '\$', got '+'"
proto 'SET a "b\r\n' '-ERR Protocol error: unbalanced quotes in request'
proto 'PING\r\n*1\r\n$-5\r\n' '+PONG'
# The request limits it was started with: an argument of 2 MiB, a
# command of 4 MiB, refused at the length line that passes them (or at
# the count whose arguments cannot fit even empty), before their bytes.
proto '*2\r\n$3\r\nGET\r\n$2097153\r\n' '-ERR Protocol error: invalid bulk length'
proto '*1000000\r\n' '-ERR Protocol error: too big command: more than 4194304 bytes'
{
	printf '*5\r\n$4\r\nMSET\r\n$1\r\na\r\n$2097152\r\n'
	head -c 2097152 /dev/zero | tr '\0' v
	printf '\r\n$1\r\nb\r\n$2097152\r\n'
} > "$T/toobig"
got=$("$PROBE" -w 2000 "tcp:127.0.0.1:$PORT" < "$T/toobig")
rc=$?
[ "$(printf '%s' "$got" | tr -d '\r')" = "-ERR Protocol error: too big command: more than 4194304 bytes" ] && [ $rc -eq 0 ] ||
	fail "MSET of two 2 MiB values: got '$got' (kvprobe $rc), expected the limit's error and a close"
[ "$($CLI exists a)" = 0 ] || fail "the refused MSET ran"
[ "$($CLI config get proto-max-bulk-len client-query-buffer-limit | tr '\n' ' ')" = "proto-max-bulk-len 2097152 client-query-buffer-limit 4194304 " ] ||
	fail "CONFIG GET of the limits: $($CLI config get proto-max-bulk-len client-query-buffer-limit | tr '\n' ' ')"
# QUIT replies, then closes; what follows it is not run.
got=$(printf 'SET q 1\r\nQUIT\r\nSET q 2\r\n' | "$PROBE" -w 2000 "tcp:127.0.0.1:$PORT" | tr -d '\r' | tr '\n' ' ')
[ "$got" = "+OK +OK " ] || fail "QUIT: got '$got'"
[ "$($CLI get q)" = "1" ] || fail "a command after QUIT ran"
ok "protocol errors, request limits and QUIT close the connection"

# ---- pipelining: many commands in one write, replies in order ----------
i=0
while [ $i -lt 2000 ]; do
	printf 'SET p:%d %d\r\n*2\r\n$3\r\nGET\r\n$%d\r\np:%d\r\n' $i $i $((${#i} + 2)) $i
	i=$((i + 1))
done > "$T/pipe"
printf 'PING\r\n' >> "$T/pipe"
"$PROBE" -w 1000 "tcp:127.0.0.1:$PORT" < "$T/pipe" | tr -d '\r' > "$T/pipe.out"
i=0
while [ $i -lt 2000 ]; do
	printf '+OK\n$%d\n%d\n' ${#i} $i
	i=$((i + 1))
done > "$T/pipe.want"
echo "+PONG" >> "$T/pipe.want"
cmp -s "$T/pipe.want" "$T/pipe.out" || fail "pipelined SET/GET: replies differ or out of order"
ok "pipelining: 4001 commands in one write, replies in order"

# ---- backpressure: a reader that stalls holds ~1 MiB, not 64 MiB -------
$CLI flushall >/dev/null
head -c 1048576 /dev/zero | tr '\0' 'x' > "$T/big"
redis-cli -p "$PORT" -x set big < "$T/big" >/dev/null
i=0
while [ $i -lt 64 ]; do
	printf 'GET big\r\n'
	i=$((i + 1))
done > "$T/gets"
"$PROBE" -c -d 1500 -w 2000 "tcp:127.0.0.1:$PORT" < "$T/gets" > "$T/bp.count" &
BP=$!
sleep 0.7
omem=$($CLI client list | grep -v 'cmd=client|list' | sed -n 's/.* obl=\([0-9]*\).*/\1/p' | sort -n | tail -n 1)
wait $BP
total=$(cat "$T/bp.count")
want=$((64 * (1048576 + 12)))
[ "$total" = "$want" ] || fail "backpressure: the stalled reader got $total bytes, expected $want"
[ -n "$omem" ] && [ "$omem" -le 3145728 ] || fail "backpressure: ${omem:-?} bytes of replies waiting while the reader stalled (limit: 1 MiB + one reply)"
ok "backpressure: stalled reader had ${omem} bytes of replies waiting, all $total bytes delivered"
$CLI flushall >/dev/null

# ---- RESP over rift ----------------------------------------------------
got=$(printf 'SET r 1\r\nGET r\r\n*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n' | "$PROBE" -w 500 "$RIFT_URL" | tr -d '\r' | tr '\n' ' ')
[ "$got" = '+OK $1 1 $5 hello ' ] || fail "RESP over rift: got '$got'"
# a command cut across messages of 3 bytes each
got=$(printf '*3\r\n$3\r\nSET\r\n$2\r\nr2\r\n$10\r\n0123456789\r\nGET r2\r\nQUIT\r\n' | "$PROBE" -m 3 -w 2000 "$RIFT_URL" | tr -d '\r' | tr '\n' ' ')
rc=$?
[ "$got" = '+OK $10 0123456789 +OK ' ] || fail "RESP over rift in 3-byte messages: got '$got'"
[ "$($CLI get r2)" = "0123456789" ] || fail "a key set over rift is not seen over TCP"
# A one-sided read by a token rift-kv never gave: its rift refuses it,
# and INFO rdma counts the refusal (rift's rma_refused).
got=$("$PROBE" -R -w 2000 "$RIFT_URL" < /dev/null)
[ "$got" = "one-sided read: RIFT_EACCES" ] || fail "a forged one-sided read: got '$got'"
info=$($CLI info rdma | tr -d '\r')
echo "$info" | grep -q '^rdma_enabled:1$' || fail "INFO rdma: rdma_enabled is not 1"
for f in rdma_connections rdma_send_ops rdma_recv_ops rdma_read_ops rdma_write_ops \
	rdma_bytes_sent rdma_bytes_received rdma_read_bytes rdma_write_bytes \
	rdma_completion_errors rdma_retry_exceeded rdma_rma_served rdma_rma_refused \
	rdma_rma_direct rdma_rndv_reads rdma_rndv_read_bytes; do
	echo "$info" | grep -q "^$f:[0-9][0-9]*\$" || fail "INFO rdma: no $f"
done
echo "$info" | grep -q '^rdma_rma_refused:1$' ||
	fail "INFO rdma: the refused one-sided read is not counted: $(echo "$info" | grep rma_refused)"
ok "RESP over rift ($RIFT_URL), INFO rdma (a refused one-sided read counted)"

# ---- GET /metrics over HTTP ------------------------------------------
scrape() { # into $T/m
	curl -sf --max-time 5 "$MURL" > "$T/m" || fail "GET $MURL failed"
}
metric() { # a series of the last scrape ("name{labels}"): its value
	awk -v n="$1" '$1 == n { print $2 }' "$T/m"
}
moved() { # series, value before, least rise
	now=$(metric "$1")
	[ -n "$now" ] && [ "$now" -ge $(($2 + $3)) ] ||
		fail "/metrics: $1 went from $2 to '${now}', expected a rise of $3 or more"
}
scrape
set0=$(metric 'riftkv_commands_total{cmd="set"}')
tcp0=$(metric 'riftkv_connections_received_total{way="resp-tcp"}')
n0=$(metric riftkv_command_duration_seconds_count)
hit0=$(metric riftkv_keyspace_hits_total)
miss0=$(metric riftkv_keyspace_misses_total)
for i in 1 2 3 4 5; do
	$CLI set "m:$i" v > /dev/null
done
$CLI get m:1 > /dev/null
$CLI get m:nosuch > /dev/null
scrape
[ "$(metric 'riftkv_commands_total{cmd="set"}')" = $((set0 + 5)) ] ||
	fail "/metrics: SET went from $set0 to $(metric 'riftkv_commands_total{cmd="set"}') after 5 SETs"
moved 'riftkv_connections_received_total{way="resp-tcp"}' "$tcp0" 7
moved riftkv_command_duration_seconds_count "$n0" 7
moved riftkv_keyspace_hits_total "$hit0" 1
moved riftkv_keyspace_misses_total "$miss0" 1
[ "$(metric riftkv_keys)" -ge 5 ] || fail "/metrics: riftkv_keys $(metric riftkv_keys)"
[ "$(metric 'riftkv_connections_received_total{way="rift"}')" -ge 2 ] ||
	fail "/metrics: no rift connections counted"
# INFO rdma's figures, the refused one-sided read above among them
[ "$(metric riftkv_rdma_rma_refused_total)" = 1 ] ||
	fail "/metrics: riftkv_rdma_rma_refused_total is '$(metric riftkv_rdma_rma_refused_total)', INFO says 1"
# rift's own, for rift-kv's context
[ "$(metric rift_listeners_active)" = 1 ] || fail "/metrics: rift's metrics missing (rift_listeners_active)"
# The text format: a TYPE for every sample's family, each family in one
# block, valid names, numeric values, no series twice.
awk '
/^# TYPE / { type[$3] = $4; next }
/^#/ { next }
{
	name = $1; sub(/\{.*/, "", name)
	fam = name
	if (!(fam in type)) sub(/_(bucket|sum|count)$/, "", fam)
	if (!(fam in type)) { print "no TYPE for " $1; bad = 1 }
	if (fam != last && (fam in done)) { print "family " fam " split"; bad = 1 }
	done[last] = 1; last = fam
	if (name !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) { print "bad name " $1; bad = 1 }
	if (NF != 2 || $2 !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) { print "bad sample: " $0; bad = 1 }
	if (seen[$1]++) { print "twice: " $1; bad = 1 }
}
END { exit bad }' "$T/m" > "$T/fmt" || fail "/metrics text format: $(head -n 5 "$T/fmt")"
$CLI del m:1 m:2 m:3 m:4 m:5 > /dev/null
ok "GET /metrics: counters move with commands, INFO rdma's and rift's figures in, valid text format"

http_code() { # curl arguments: the status
	curl -s -o /dev/null --max-time 5 -w '%{http_code}' "$@"
}
[ "$(http_code "http://$MADDR/nope")" = 404 ] || fail "/nope is not 404"
[ "$(http_code "$MURL?x=1")" = 200 ] || fail "/metrics?x=1 is not 200"
[ "$(http_code -X POST -d x "$MURL")" = 405 ] || fail "POST /metrics is not 405"
curl -s -D - -X DELETE --max-time 5 "$MURL" | tr -d '\r' | grep -q '^Allow: GET, HEAD$' ||
	fail "405 without Allow: GET, HEAD"
head=$(curl -sI --max-time 5 "$MURL" | tr -d '\r')
echo "$head" | grep -q '^HTTP/1.1 200 OK$' || fail "HEAD /metrics: $head"
echo "$head" | grep -q '^Content-Type: text/plain; version=0.0.4' || fail "HEAD /metrics: no Prometheus content type"
maddr_probe="tcp:$MADDR"
http_raw() { # request bytes, the status line that closes
	answers "$maddr_probe" "$1" "$2"
}
http_raw 'GARBAGE\r\n\r\n' 'HTTP/1.1 400 Bad Request'
http_raw 'GET /metrics HTTP/1.1\r\nno colon\r\n\r\n' 'HTTP/1.1 400 Bad Request'
http_raw '\026\003\001\002\000\001\000' 'HTTP/1.1 400 Bad Request'
http_raw 'GET /metrics HTTP/2.0\r\n\r\n' 'HTTP/1.1 505 HTTP Version Not Supported'
head -c 9000 /dev/zero | tr '\0' 'A' > "$T/big-head"
first=$("$PROBE" -w 2000 "$maddr_probe" < "$T/big-head" | head -n 1 | tr -d '\r')
[ "$first" = "HTTP/1.1 431 Request Header Fields Too Large" ] || fail "a 9000-byte head: got '$first'"
# A request that never ends gets 408 after 5 s; meanwhile the server
# serves RESP and /metrics as usual.
printf 'GET /metr' | "$PROBE" -w 8000 "$maddr_probe" > "$T/idle" &
IDLE=$!
sleep 0.5
[ "$(http_code "$MURL")" = 200 ] || fail "/metrics not served beside an idle HTTP connection"
alive || fail "RESP not served beside an idle HTTP connection"
wait $IDLE
rc=$?
[ "$(head -n 1 "$T/idle" | tr -d '\r')" = "HTTP/1.1 408 Request Timeout" ] && [ $rc -eq 0 ] ||
	fail "an unfinished request: got '$(head -n 1 "$T/idle")' (kvprobe $rc), expected 408 and a close"
alive || fail "rift-kv is not answering after the HTTP checks"
ok "HTTP: 404, 405 with Allow, HEAD; malformed, binary, oversized and unfinished requests answered and closed"

# ---- INFO sections -----------------------------------------------------
info=$($CLI info | tr -d '\r')
for s in Server Clients Memory Stats Keyspace rdma; do
	echo "$info" | grep -q "^# $s\$" || fail "INFO: no section $s"
done
[ "$($CLI info keyspace | tr -d '\r' | grep -c '^db0:keys=2,expires=0')" = 1 ] || fail "INFO keyspace: db0 line"
[ "$($CLI info nosuchsection)" = "" ] || fail "INFO nosuchsection is not empty"
$CLI client list | grep -q "^id=[0-9]* addr=127.0.0.1:" || fail "CLIENT LIST"
ok "INFO sections, CLIENT LIST"

# ---- rift-kv-cli and rift-kv-benchmark over rift -----------------------
RCLI="$KVCLI -u $RIFT_URL"
# commands.txt again, through rift-kv-cli: redis-cli's replies, formatted
# (expected.txt) and raw (redis-cli's own output now, byte for byte),
# but for the line that redis-cli reads as a repeat count
grep -v '^"" a$' "$HERE/commands.txt" > "$T/cmds"
$RCLI --no-raw < "$T/cmds" > "$T/cli.out" 2>&1
grep -v '^Invalid redis-cli repeat' "$HERE/expected.txt" | diff -u - "$T/cli.out" > "$T/diff" || {
	head -n 40 "$T/diff"
	fail "rift-kv-cli --no-raw < commands.txt: replies differ from expected.txt"
}
$CLI < "$T/cmds" > "$T/raw.redis" 2>&1
$RCLI < "$T/cmds" > "$T/raw.rift" 2>&1
cmp -s "$T/raw.redis" "$T/raw.rift" || {
	diff -u "$T/raw.redis" "$T/raw.rift" | head -n 40
	fail "rift-kv-cli < commands.txt: raw output differs from redis-cli's"
}
# one command from the command line; --info says the transport
got=$($RCLI --info set cli:k 'a b' 2> "$T/cli.err")
[ "$got" = OK ] || fail "rift-kv-cli set: '$got'"
grep -qx "rift-kv-cli: $RIFT_URL: connected over tcp" "$T/cli.err" ||
	fail "rift-kv-cli --info: '$(cat "$T/cli.err")'"
[ "$($RCLI get cli:k)" = "a b" ] || fail "rift-kv-cli get: '$($RCLI get cli:k)'"
[ "$($RCLI --no-raw incr cli:k)" = "(error) ERR value is not an integer or out of range" ] ||
	fail "rift-kv-cli incr: '$($RCLI --no-raw incr cli:k)'"
[ "$($RCLI --no-raw set cli:k -5 get)" = '"a b"' ] && [ "$($RCLI get cli:k)" = -5 ] ||
	fail "rift-kv-cli: an argument starting with '-'"
$KVCLI -u tcp://127.0.0.1:1 ping > /dev/null 2> "$T/cli.err" && fail "rift-kv-cli to a closed port exited 0"
grep -q '^rift-kv-cli: tcp://127.0.0.1:1: .*refused' "$T/cli.err" || fail "rift-kv-cli to a closed port: '$(cat "$T/cli.err")'"
ok "rift-kv-cli over $RIFT_URL: commands.txt as redis-cli prints it (formatted and raw), --info"

"$KVBENCH" -u "$RIFT_URL" -c 4 -n 4000 -P 8 -d 16 -t set,get > "$T/kvb" 2>&1 ||
	fail "rift-kv-benchmark exited $?: $(cat "$T/kvb")"
grep -qx "rift-kv-benchmark: $RIFT_URL: 4 connections over tcp" "$T/kvb" ||
	fail "rift-kv-benchmark does not say its transport: $(head -n 1 "$T/kvb")"
for t in SET GET; do
	grep -Eq "^$t: [0-9]+\.[0-9]+ requests per second, p50=[0-9.]+ msec, p99=[0-9.]+ msec\$" "$T/kvb" &&
		! grep -q "^$t: 0.00 " "$T/kvb" || fail "rift-kv-benchmark: no $t figures: $(cat "$T/kvb")"
done
[ "$($CLI get key:__rand_int__)" = xxxxxxxxxxxxxxxx ] || fail "rift-kv-benchmark's SET did not set its 16-byte value"
grep -E '^(SET|GET):' "$T/kvb" | sed 's/^/  rift-kv-benchmark -c 4 -P 8: /'
"$KVBENCH" -u "$RIFT_URL" -c 2 -n 1000 -t get,incr --csv > "$T/kvb" 2>&1 || fail "rift-kv-benchmark --csv exited $?"
[ "$(head -n 1 "$T/kvb")" = '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms","transport","fallback"' ] ||
	fail "rift-kv-benchmark --csv header: $(head -n 1 "$T/kvb")"
[ "$(grep -cE '^"(GET|INCR)","[0-9.]+",("[0-9.]+",){6}"tcp","none"$' "$T/kvb")" = 2 ] ||
	fail "rift-kv-benchmark --csv rows: $(cat "$T/kvb")"
"$KVBENCH" -u "$RIFT_URL" -t nosuch > "$T/kvb" 2>&1 && fail "rift-kv-benchmark -t nosuch exited 0"
grep -q "no such test" "$T/kvb" || fail "rift-kv-benchmark -t nosuch: $(cat "$T/kvb")"
ok "rift-kv-benchmark over $RIFT_URL: ops/s, p50/p99, transport tcp, --csv"

# ---- configuration errors ----------------------------------------------
cfgerr() { # file content, expected text in the error
	printf "$1" > "$T/bad.toml"
	"$BIN" "$T/bad.toml" > "$T/cfg.out" 2>&1
	rc=$?
	[ $rc -ne 0 ] || fail "config '$1' accepted"
	grep -qF "$2" "$T/cfg.out" || fail "config '$1': '$(cat "$T/cfg.out")' does not say '$2'"
}
cfgerr '[network]\nprot = 6379\n' "bad.toml:2: unknown key 'prot'"
cfgerr '[network]\nport = "6379"\n' "bad.toml:2: port: expected an integer"
cfgerr '[network]\nport = 70000\n' "bad.toml:2: port = '70000' is not an integer in 1..65535"
cfgerr '[network]\nbind = "localhost"\n' "bad.toml:2: bind = 'localhost' is not a numeric"
cfgerr '[server]\n' "bad.toml:1: unknown section [server]"
cfgerr 'port = 1\n' "bad.toml:1: key 'port' before [network]"
cfgerr '[network]\nport = 1\nport = 2\n' "bad.toml:3: port set twice (first by"
cfgerr '[network]\nrdma_queue_depth = 64\n' "bad.toml:2: rdma_queue_depth cannot take effect: RDMA is off"
cfgerr '[network]\nrdma_enabled = true\n' "rdma_enabled = true needs rdma_port"
cfgerr '[network]\nrdma_enabled = true\nrdma_port = 7400\nrdma_fallback = "udp"\n' "bad.toml:4: rdma_fallback = 'udp'"
cfgerr '[network]\nrdma_enabled = yes\n' "bad.toml:2: rdma_enabled = 'yes': expected true or false"
cfgerr '[network]\nproto_max_bulk_len = 4194304\nclient_query_buffer_limit = 4194304\n' \
	"bad.toml:2: proto_max_bulk_len 4194304 cannot take effect: a whole command is at most client_query_buffer_limit"
cfgerr '[network]\nclient_query_buffer_limit = 1000\n' "bad.toml:2: client_query_buffer_limit = '1000' is not an integer in 1048576.."
cfgerr '[network]\nmetrics_bind = "0.0.0.0"\n' "bad.toml:2: metrics_bind cannot take effect: no metrics_port"
"$BIN" --port 1 --nosuch 2 > "$T/cfg.out" 2>&1 && fail "--nosuch accepted"
grep -qF -- "--nosuch: unknown key 'nosuch'" "$T/cfg.out" || fail "--nosuch: $(cat "$T/cfg.out")"
"$BIN" --rift-url tcp://127.0.0.1:0 --rdma-gid-index 1 > "$T/cfg.out" 2>&1 && fail "gid index on tcp:// accepted"
grep -qF "rdma_gid_index cannot take effect" "$T/cfg.out" || fail "--rdma-gid-index with tcp://: $(cat "$T/cfg.out")"
ok "config errors name the file, line and key, and exit non-zero"

# ---- redis-benchmark ---------------------------------------------------
if [ $quick -eq 0 ]; then
	for args in "-P 16" "-c 50"; do
		# shellcheck disable=SC2086
		redis-benchmark -p "$PORT" -q -n 20000 -t set,get $args > "$T/bench" 2>&1
		rc=$?
		tr '\r' '\n' < "$T/bench" | grep -E '^(SET|GET):.*requests per second' | sed "s/^/  bench ($args) /"
		[ $rc -eq 0 ] || fail "redis-benchmark $args exited $rc"
		[ "$(tr '\r' '\n' < "$T/bench" | grep -cE '^(SET|GET):.*requests per second')" = 2 ] ||
			fail "redis-benchmark $args: no SET and GET figures: $(cat "$T/bench")"
		if tr '\r' '\n' < "$T/bench" | grep -qiE 'error|warning'; then
			fail "redis-benchmark $args reported errors: $(cat "$T/bench")"
		fi
		alive || fail "rift-kv died during redis-benchmark $args"
	done
fi

# ---- the end: alive, then a clean exit on SIGTERM ----------------------
alive || fail "rift-kv is not answering at the end"
kill -TERM "$PID"
wait "$PID"
rc=$?
PID=
[ $rc -eq 0 ] || { cat "$T/log"; fail "rift-kv exited $rc on SIGTERM"; }
if [ $failures -ne 0 ]; then
	echo "tests/kv: $failures check(s) FAILED"
	exit 1
fi
echo "tests/kv: all checks passed"
