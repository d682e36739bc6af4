# tests/lab/lib.sh - sourced by the lab's example scripts (pair topology:
# rma-example.sh, kv-failover.sh, kv-repl.sh).
#
#   . "$(dirname "$0")/lib.sh"
#   T=$(mktemp -d)
#   fail() { lab_fail NAME "$*"; }
#   lab_cut_links PAUSE DOWN LINK...

# One link cut after another while traffic runs: for each LINK (link0,
# link1) in turn, PAUSE seconds of traffic, then the link down (lab-link
# down) for DOWN seconds, then up again.  Keep DOWN within the session's
# grace time (session_grace_ms, 10 s by default) so that sessions
# re-attach rather than end.  Calls the caller's fail function, with the
# action, when lab-link fails.
lab_cut_links() {
	_pause=$1
	_down=$2
	shift 2
	for _link in "$@"; do
		sleep "$_pause"
		lab-link down "$_link" >/dev/null || fail "lab-link down $_link"
		sleep "$_down"
		lab-link up "$_link" >/dev/null || fail "lab-link up $_link"
	done
}

# NAME: FAILED: MESSAGE on stderr, the end of every non-empty *.out,
# *.err and *.log in $T, those logs kept in $RIFT_LAB_RESULTS (lab run
# --results), and exit 1.
lab_fail() {
	echo "$1: FAILED: $2" >&2
	for _f in "$T"/*.out "$T"/*.err "$T"/*.log; do
		[ -s "$_f" ] && { echo "--- $_f" >&2; tail -n 30 "$_f" >&2; }
	done
	[ -d "${RIFT_LAB_RESULTS:-}" ] && cp "$T"/*.log "$T"/*.err "$RIFT_LAB_RESULTS"/ 2>/dev/null
	exit 1
}
