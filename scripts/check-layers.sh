#!/bin/sh
# check-layers.sh - dependencies point down only (issue 13).
#
#   sh scripts/check-layers.sh [OBJDIR]     OBJDIR: default build/tst
#
# The layers, highest first, are the folders of src/:
#
#   api > session > transports > core > memory > util
#
# Rule 1, from the objects' symbols (nm): every rift symbol an object of
# src/<layer>/ uses must be defined in its own layer or a lower one.  The
# one exception is the session's interface to the transports, listed in
# UPCALLS below: a transport may call those session functions, no other.
#
# Rule 2, from the text with comments taken out: no file of src/api or
# src/session, nor src/internal.h which every layer includes, names a
# backend (TCP's or verbs' internals, libibverbs or librdmacm) or
# includes a header of src/transports: they reach the transports through
# the registry (src/transports/transport.c) and the ops tables.
#
# Run by `make check-layers`, the first step of `make test`; needs the
# objects of OBJDIR (make builds them first).  Prints every violation,
# naming the file, the symbol and the rule, and exits 1 if there is one.
set -eu

objdir=${1:-build/tst}
cd "$(dirname "$0")/.."

# The session's interface to the transports (shell patterns), which they
# may call although the session sits above them; each group says why.
UPCALLS='
rift__path_connected rift__path_failed rift__path_failed_why rift__path_on_frame
rift__sess_control rift__sess_error_frame
rift__spread_next rift__spread_written rift__spread_peek rift__spread_release
rift__path_init rift__path_destroy
rift__stream_*
rift__hdr_encode rift__hdr_decode rift__error_encode rift__frame_name
rift__conn_emit rift__conn_confirm rift__buf_release_slow rift__spare_put
rift__metrics_acked rift__spread_acked rift__spread_kick
rift__metrics_recv rift__spread_ooo_has
rift__rma_frame rift__rma_kick rift__rma_wr_done
rift__metrics_wc_error rift__metrics_credit_stall
rift__group_links_changed
'
# Line by line, the groups above are:
#  - the upcalls of internal.h: a path connected, failed, or brought a frame
#  - the data pull: control frames owed (rift__sess_next/written: inline)
#  - and its out-of-line half with active-active (session/spread.c), which
#    those inline calls and rift__sess_peek, rift__sess_after_flush reach
#  - the paths' generic life cycle (internal.h), which backends embed
#  - the frame parser of byte-stream transports (session/stream.h): bytes
#    in, rift__path_on_frame out
#  - the frame codec (session/wire.h): transports write headers of their
#    own (control batches, bare frames, rendezvous descriptors)
#  - (four lines) what the session's per-message half, inline in
#    session/session.h (rift__path_on_data, rift__conn_ack_apply,
#    rift__conn_deliver), calls out of line when a transport delivers a
#    frame; and whether a message waits in the reorder buffer already
#    (verbs drops a rendezvous descriptor seen before, with no READ);
#    an RMA frame delivered, one-sided operations waiting for the
#    window an ack opened, and a one-sided piece's completion
#    (session/rma.c)
#  - counters of transport events (session/stats.c): failed completions,
#    credit stalls

rank() {
	case $1 in
	api) echo 6 ;;
	session) echo 5 ;;
	transports) echo 4 ;;
	core) echo 3 ;;
	memory) echo 2 ;;
	util) echo 1 ;;
	*) echo 0 ;;
	esac
}

fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- rule 1: symbols ----
# Sources, not whatever lies in OBJDIR: a stale object of a file that
# moved must not count.
find src -name '*.c' | LC_ALL=C sort >"$tmp/srcs"
: >"$tmp/defs"
: >"$tmp/uses"
while read -r src; do
	layer=$(echo "$src" | cut -d/ -f2)
	obj=$objdir/${src%.c}.o
	if [ "$(rank "$layer")" -eq 0 ]; then
		echo "check-layers: $src: not in a layer folder (src/api, src/session, src/transports, src/core, src/memory, src/util)"
		fail=1
		continue
	fi
	if [ ! -f "$obj" ]; then
		echo "check-layers: $obj is missing: build the objects first (make check-layers does)" >&2
		exit 2
	fi
	nm --defined-only "$obj" | awk -v src="$src" -v layer="$layer" \
		'NF == 3 && $2 ~ /^[A-Z]$/ && $3 ~ /^rift_/ { print $3, layer, src }' >>"$tmp/defs"
	nm -u "$obj" | awk -v src="$src" -v layer="$layer" \
		'$NF ~ /^rift_/ { print $NF, layer, src }' >>"$tmp/uses"
done <"$tmp/srcs"

# "symbol user-layer user-file defining-layer defining-file", for every
# use of a symbol that a higher layer defines.
awk -v ranks="api:6 session:5 transports:4 core:3 memory:2 util:1" '
	BEGIN {
		n = split(ranks, r, " ")
		for (i = 1; i <= n; i++) {
			split(r[i], kv, ":")
			rank[kv[1]] = kv[2]
		}
	}
	FNR == NR { def_layer[$1] = $2; def_src[$1] = $3; next }
	($1 in def_layer) && rank[def_layer[$1]] > rank[$2] {
		print $1, $2, $3, def_layer[$1], def_src[$1]
	}' "$tmp/defs" "$tmp/uses" >"$tmp/up"

while read -r sym layer src dlayer dsrc; do
	ok=0
	if [ "$layer" = transports ] && [ "$dlayer" = session ]; then
		for pat in $UPCALLS; do
			# shellcheck disable=SC2254
			case $sym in $pat) ok=1 ;; esac
		done
		if [ $ok -eq 0 ]; then
			echo "check-layers: $src calls $sym (defined in $dsrc): a transport reaches the session only through its upcalls (UPCALLS in scripts/check-layers.sh)"
			fail=1
		fi
		continue
	fi
	echo "check-layers: $src calls $sym (defined in $dsrc): $layer may not call up into $dlayer (api > session > transports > core > memory > util)"
	fail=1
done <"$tmp/up"

# ---- rule 2: names of backends above the transports ----
# Comments, strings and character literals become blanks (line numbers
# stay), so that only code is searched.
strip_comments() {
	awk '
	BEGIN { incom = 0 }
	{
		line = $0; out = ""; i = 1; n = length(line); instr = ""
		while (i <= n) {
			c = substr(line, i, 1); c2 = substr(line, i, 2)
			if (incom) {
				if (c2 == "*/") { incom = 0; out = out "  "; i += 2 }
				else { out = out " "; i++ }
			} else if (instr != "") {
				if (c == "\\") { out = out "  "; i += 2 }
				else if (c == instr) { out = out c; instr = ""; i++ }
				else { out = out " "; i++ }
			} else if (c2 == "/*") {
				incom = 1; out = out "  "; i += 2
			} else if (c2 == "//") {
				break
			} else if (c == "\"" || c == "'\''") {
				instr = c; out = out c; i++
			} else {
				out = out c; i++
			}
		}
		print out
	}' "$1"
}

backend='(^|[^A-Za-z0-9_])(rift__(rdma|tcp|vb|boot|cmtcp|rej)_[A-Za-z0-9_]*|ibv_[A-Za-z0-9_]*|IBV_[A-Za-z0-9_]*|rdma_[a-z_]+[[:space:]]*\(|struct[[:space:]]+rdma_[a-z_]+)'
for f in $(find src/api src/session -name '*.[ch]' | LC_ALL=C sort) src/internal.h; do
	strip_comments "$f" >"$tmp/code"
	grep -nE "$backend" "$tmp/code" | while IFS=: read -r line text; do
		name=$(echo "$text" | grep -oE "$backend" | head -n 1 |
			sed -E 's/^[^A-Za-z_]+//; s/[[:space:]]*\($//')
		echo "check-layers: $f:$line names $name: api, session and internal.h reach a transport through the registry (src/transports/transport.c), never by a backend's name"
	done >>"$tmp/names"
	grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<](transports/|infiniband/|rdma/)' "$f" |
		while IFS=: read -r line text; do
			echo "check-layers: $f:$line includes $(echo "$text" | grep -oE '["<][^">]*[">]' | head -n 1): api, session and internal.h include no transport's header"
		done >>"$tmp/names"
done
if [ -s "$tmp/names" ]; then
	cat "$tmp/names"
	fail=1
fi

if [ $fail -ne 0 ]; then
	echo "check-layers: FAILED (see docs/architecture.md, \"Layers\")"
	exit 1
fi
echo "check-layers: ok ($(wc -l <"$tmp/srcs") objects; api > session > transports > core > memory > util)"
