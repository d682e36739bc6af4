#!/bin/sh
# man.sh - rift's man pages, generated from the one source of each so
# nothing is written twice: rift-info(1), rift-perf(1) and rift.toml(5)
# from their documents in docs/ (scripts/md2man.awk), rift(3) from the
# reference manual, include/rift.h (scripts/h2man.awk), with a link
# rift_NAME(3) to it for every function and function-like macro it
# declares.  Non-ASCII text becomes groff's escapes (preconv, of
# groff-base), so the pages are ASCII.
#
#   scripts/man.sh VERSION OUTDIR      (run by make; writes OUTDIR/man*/)
set -eu

version=${1:?usage: scripts/man.sh VERSION OUTDIR}
outdir=${2:?usage: scripts/man.sh VERSION OUTDIR}
dir=$(dirname "$0")
all="rift(3), rift-info(1), rift-perf(1), rift.toml(5)"

# "rift(3), rift-info(1), ..." without the page itself.
see_also() {
	printf '%s\n' "$all" | sed "s/$1($2), //; s/, $1($2)\$//"
}

# awk's page in $outdir/page.tmp to $1, in ASCII.
ascii() {
	preconv -e UTF-8 "$outdir/page.tmp" | sed '/^\.lf /d' >"$1"
	rm -f "$outdir/page.tmp"
}

rm -rf "$outdir"
mkdir -p "$outdir/man1" "$outdir/man3" "$outdir/man5"

for doc in docs/rift-info.md docs/rift-perf.md docs/config.md; do
	# shellcheck disable=SC2046
	set -- $(sed -n '1s/^<!-- man: \([^ ]*\) \([1-9]\) .*/\1 \2/p' "$doc")
	[ $# -eq 2 ] || { echo "man.sh: $doc: no <!-- man: --> line" >&2; exit 1; }
	expand "$doc" | awk -v version="$version" -v src="$doc" \
		-v see="$(see_also "$1" "$2")" -f "$dir/md2man.awk" \
		>"$outdir/page.tmp"
	ascii "$outdir/man$2/$1.$2"
done

summary=$(sed -n 's/^Description: //p' rift.pc.in)
expand include/rift.h | awk -v version="$version" -v summary="$summary" \
	-v see="$(see_also rift 3)" -f "$dir/h2man.awk" >"$outdir/page.tmp"
ascii "$outdir/man3/rift.3"
expand include/rift.h | awk -v list=1 -f "$dir/h2man.awk" | sort -u |
	while read -r fn; do
		ln -s rift.3 "$outdir/man3/$fn.3"
	done
