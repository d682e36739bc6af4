# tests/lab/link-cuts.sh - sourced by the lab's scripts (pair topology):
# one link cut after another while traffic runs.
#
#   . tests/lab/link-cuts.sh
#   lab_cut_links PAUSE DOWN LINK...
#
# For each LINK (link0, link1) in turn: PAUSE seconds of traffic, then
# the link down (lab-link down) for DOWN seconds, then up again.  Keep
# DOWN within the session's grace time (session_grace_ms, 10 s by
# default) so that sessions re-attach rather than end.  Calls the
# caller's fail function, with the action, when lab-link fails.
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
