#!/bin/sh
# Install what building and testing rift needs, from Debian's packages only.
# Idempotent: asks apt only for what is missing, and does nothing when all
# is there; waits for another apt-get's lock (scripts/apt-install.sh).
# Usage: scripts/setup.sh [extra-package...]
set -eu

# groff-base (preconv) makes the man pages ASCII; man-db checks them
# (make test-install).  redis-tools: redis-cli and redis-benchmark against
# rift-kv, curl: its /metrics (make test-kv).
pkgs="gcc make pkg-config clang libclang-rt-14-dev libibverbs-dev librdmacm-dev rdma-core ibverbs-providers libmicrohttpd-dev gnuplot-nox groff-base man-db redis-tools curl $*"
missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "setup: missing packages:$missing" >&2
	echo "setup: run as root (or: sudo apt-get install$missing)" >&2
	exit 1
fi
echo "setup: installing$missing"
# shellcheck disable=SC2086
sh "$(dirname "$0")/apt-install.sh" $missing >/dev/null
