#!/bin/sh
# apt-install.sh - install Debian packages for rift's setup steps
# (scripts/setup.sh, `tests/lab/lab setup`), waiting for another apt-get
# (unattended-upgrades, a parallel build's setup) to finish instead of
# failing on its lock ("Could not get lock /var/lib/dpkg/lock-frontend").
#
#   scripts/apt-install.sh PACKAGE...       as root
#
# apt-get waits for the dpkg lock itself under DPkg::Lock::Timeout, but
# has no such wait for the lock of the package lists (apt-get update) or of
# the downloaded archives: a call that failed on a lock is made again,
# every RIFT_APT_RETRY_S seconds (5), until RIFT_APT_LOCK_WAIT seconds
# (600) have passed.  The package lists are updated only when installing
# fails (they may be missing or stale), so a machine that has them
# installs without the network round.
set -eu

wait_s=${RIFT_APT_LOCK_WAIT:-600}
every_s=${RIFT_APT_RETRY_S:-5}
export DEBIAN_FRONTEND=noninteractive
err=$(mktemp)
trap 'rm -f "$err"' EXIT

apt() {
	start=$(date +%s)
	while :; do
		if apt-get -o DPkg::Lock::Timeout="$wait_s" "$@" 2>"$err"; then
			cat "$err" >&2
			return 0
		fi
		cat "$err" >&2
		grep -q "Could not get lock" "$err" || return 1
		[ $(($(date +%s) - start)) -lt "$wait_s" ] || return 1
		echo "apt-install: another apt-get holds a lock;" \
		     "again in $every_s s" >&2
		sleep "$every_s"
	done
}

apt install -y -qq --no-install-recommends "$@" || {
	apt update -qq
	apt install -y -qq --no-install-recommends "$@"
}
