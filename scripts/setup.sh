#!/bin/sh
# Install what building and testing rift needs, from Debian's packages only.
# Idempotent: asks apt only for what is missing, and does nothing when all
# is there.  Usage: scripts/setup.sh [extra-package...]
set -eu

pkgs="gcc make pkg-config clang libclang-rt-14-dev libibverbs-dev librdmacm-dev rdma-core ibverbs-providers libmicrohttpd-dev gnuplot-nox $*"
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
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
