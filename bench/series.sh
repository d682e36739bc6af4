# Paired series for the lab's benchmarks (bench/rdma-guest.sh,
# bench/group-guest.sh), sourced: a baseline and a candidate alternate,
# baseline first and last (B C B C ... B), and every candidate run is
# judged against the mean of the two baseline runs either side of it.

# series FILE ROUNDS 'BASELINE CALL' 'CANDIDATE CALL' SCALE [BNAME CNAME]:
# B C B C ... B; each line of FILE is "baseline-before candidate*SCALE
# baseline-after"; the progress lines name them BNAME and CNAME (perftest
# and rift by default).  Calls that print several values (the same
# measures, in the same order, from each side: a run's median, mean and
# p99, say) make one file each: FILE for the first, FILE.2, FILE.3 ...
# for the others (a missing value is nan).
series() {
	file=$1 rounds=$2 pcall=$3 rcall=$4 scale=$5 bname=${6:-perftest} cname=${7:-rift}
	: >"$file"
	before=$(eval "$pcall")
	nv=$(echo "$before" | awk '{ print (NF > 1) ? NF : 1 }')
	for k in $(seq 2 "$nv"); do : >"$file.$k"; done
	for r in $(seq 1 "$rounds"); do
		rv=$(eval "$rcall")
		after=$(eval "$pcall")
		rs=$(echo "$rv" | awk -v s="$scale" -v n="$nv" '{ for (k = 1; k <= n; k++) { x = (k <= NF) ? $k : "nan"; printf "%s%s", (k > 1) ? " " : "", (x == "nan") ? "nan" : sprintf("%.4f", x * s) } print "" }')
		for k in $(seq 1 "$nv"); do
			f=$file
			[ "$k" = 1 ] || f=$file.$k
			echo "$(echo "$before" | awk -v k="$k" '{ print (k <= NF) ? $k : "nan" }') $(echo "$rs" | awk -v k="$k" '{ print $k }') $(echo "$after" | awk -v k="$k" '{ print (k <= NF) ? $k : "nan" }')" >>"$f"
		done
		echo "  round $r: $bname $before  $cname $rs  $bname $after" >&2
		before=$after
	done
}

# stats FILE: "median q1 q3 n ratio-of-medians median-baseline
# median-candidate" of the rounds' candidate / mean(baseline either side).
stats() {
	python3 - "$1" <<'EOF'
import sys, statistics as st
rat, ps, rs = [], [], []
for line in open(sys.argv[1]):
    b, r, a = (float(x) for x in line.split())
    if r == r:
        rs.append(r)
    for p in (b, a):
        if p == p:
            ps.append(p)
    base = [p for p in (b, a) if p == p and p > 0]
    if r == r and base:
        rat.append(r / (sum(base) / len(base)))
if not rat:
    print("nan nan nan 0 nan nan nan")
    sys.exit()
q = sorted(rat)
print("%.3f %.3f %.3f %d %.3f %.3f %.3f" % (st.median(q), q[len(q) // 4],
      q[(3 * len(q)) // 4], len(q), st.median(rs) / st.median(ps),
      st.median(ps), st.median(rs)))
EOF
}

