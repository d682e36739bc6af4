# Paired series for the lab's benchmarks (bench/rdma-guest.sh,
# bench/group-guest.sh), sourced: a baseline and a candidate alternate,
# baseline first and last (B C B C ... B), and every candidate run is
# judged against the mean of the two baseline runs either side of it.

# series FILE ROUNDS 'BASELINE CALL' 'CANDIDATE CALL' SCALE [BNAME CNAME]:
# B C B C ... B; each line of FILE is "baseline-before candidate*SCALE
# baseline-after"; the progress lines name them BNAME and CNAME (perftest
# and rift by default).
series() {
	file=$1 rounds=$2 pcall=$3 rcall=$4 scale=$5 bname=${6:-perftest} cname=${7:-rift}
	: >"$file"
	before=$(eval "$pcall")
	for r in $(seq 1 "$rounds"); do
		rv=$(eval "$rcall")
		after=$(eval "$pcall")
		rs=$(awk -v x="$rv" -v s="$scale" 'BEGIN { if (x == "nan") print "nan"; else printf "%.4f", x * s }')
		echo "$before $rs $after" >>"$file"
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

