/*
 * rift-perf --plot: the size sweep (-a) or the latency distribution of
 * one size, drawn by gnuplot into an SVG file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf.h"

bool gnuplot_found(void)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/gnuplot", (int)n,
			 n ? path : ".");
		if (access(buf, X_OK) == 0)
			return true;
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

/*
 * Can path be written?  Asked before the run, so that a typo in a
 * directory or a file without permission fails at once, not after
 * minutes of benchmark.  A file that was not there is made and removed
 * again; one that was is opened for writing and left as it was.
 * 0, or -1 with err = "cannot write PATH: <errno text>".
 */
int plot_writable(const char *path, char *err, size_t len)
{
	bool made = true;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0 && errno == EEXIST) {
		made = false;
		fd = open(path, O_WRONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		snprintf(err, len, "cannot write %s: %s", path,
			 strerror(errno));
		return -1;
	}
	close(fd);
	if (made)
		unlink(path);
	return 0;
}

/* "64", "2K", "8M": a size in powers of 1024, as the options take it. */
static const char *size_label(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (v >= 1024 && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64, v);
	else
		snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
	return buf;
}

/*
 * Latency plots: one way, half the round trip (what perftest reports as
 * latency), on the right-hand axis.  The axes are logarithmic, which
 * gnuplot's `set link` refuses, so both get their range from the data:
 * lo..hi microseconds of round trip on the left, half that on the right
 * (then they have the same scale).  A READ has no one way (ib_read_lat
 * reports its whole round trip): no right-hand axis.
 */
static void one_way_axis(FILE *gp, const struct opts *o, double lo, double hi)
{
	if (o->op == OP_READ)
		return;
	/* whole decades, as gnuplot extends a logarithmic axis itself */
	lo = pow(10, floor(log10(lo > 0.001 ? lo : 0.001)));
	hi = pow(10, ceil(log10(hi > lo ? hi : lo * 10)));
	fprintf(gp,
		"set yrange [%g:%g]\nset logscale y2\nset y2range [%g:%g]\n"
		"set ytics nomirror\nset y2tics\nset format y2 '%%g'\n"
		"set y2label 'one way = half the round trip [us]'\n",
		lo, hi, lo / 2, hi / 2);
}

/* A gnuplot single-quoted string: '' stands for one quote. */
static void gp_str(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

/* Draw; 0, or -1 with the failure in cl (cl_fail). */
int plot_svg(struct client *cl)
{
	const struct opts *o = cl->o;
	char why[200], title[400];
	FILE *gp;
	int status;

	transport_why(cl, why, sizeof(why));
	gp = popen("gnuplot", "w");
	if (!gp) {
		cl_fail(cl, "--plot: cannot run gnuplot: %s", strerror(errno));
		return -1;
	}
	fprintf(gp,
		"set terminal svg size 960,600 dynamic enhanced font 'sans,12' "
		"background rgb 'white'\nset output ");
	gp_str(gp, o->plot);
	snprintf(title, sizeof(title), "rift-perf %s %s, %u connection(s), %s",
		 op_label(o),
		 o->test == TEST_LAT ? "round-trip latency"
				     : "one-way bandwidth",
		 o->conns, why);
	fprintf(gp, "\nset title ");
	gp_str(gp, title);
	fprintf(gp, " noenhanced\nset grid\nset key below\n");
	if (o->n_sizes > 1) {
		fprintf(gp, "$d << EOD\n");
		for (int i = 0; i < cl->n_res; i++) {
			const struct result *r = &cl->res[i];

			if (o->test == TEST_LAT)
				fprintf(gp, "%" PRIu64 " %.3f %.3f %.3f %.3f\n",
					r->size, r->lat.p50, r->lat.p90,
					r->lat.p99, r->lat.p999);
			else
				fprintf(gp, "%" PRIu64 " %.6f %.6f\n", r->size,
					r->gbits, r->mmsgs);
		}
		/* tics at the sizes (every other one in a long sweep), in
		 * the units of -s rather than gnuplot's powers of 1000 */
		fprintf(gp, "EOD\nset logscale x 2\nset xtics (");
		for (int i = 0, every = cl->n_res > 12 ? 2 : 1; i < cl->n_res;
		     i += every) {
			char lbl[32];

			fprintf(gp, "%s'%s' %" PRIu64, i ? ", " : "",
				size_label(cl->res[i].size, lbl, sizeof(lbl)),
				cl->res[i].size);
		}
		fprintf(gp, ")\nset xlabel 'message size [bytes]'\n");
		if (o->test == TEST_LAT) {
			double lo = cl->res[0].lat.p50, hi = 0;

			for (int i = 0; i < cl->n_res; i++) {
				if (cl->res[i].lat.p50 < lo)
					lo = cl->res[i].lat.p50;
				if (cl->res[i].lat.p999 > hi)
					hi = cl->res[i].lat.p999;
			}
			fprintf(gp, "set logscale y\nset format y '%%g'\n"
				    "set ylabel 'round trip [us]'\n");
			one_way_axis(gp, o, lo, hi);
			fprintf(gp,
				"plot $d using 1:2 with linespoints title "
				"'p50', "
				"$d using 1:3 with linespoints title 'p90', "
				"$d using 1:4 with linespoints title 'p99', "
				"$d using 1:5 with linespoints title "
				"'p99.9'\n");
		} else {
			fprintf(gp,
				"set ylabel 'bandwidth [Gb/s]'\nset y2label "
				"'message rate [Mmsg/s]'\nset ytics "
				"nomirror\nset y2tics\n"
				"set yrange [0:*]\nset y2range [0:*]\n"
				"plot $d using 1:2 axes x1y1 with linespoints "
				"title 'Gb/s', "
				"$d using 1:3 axes x1y2 with linespoints title "
				"'Mmsg/s'\n");
		}
	} else {
		/*
		 * One size: the round trip at each percentile, the x axis
		 * stretched as 1/(1 - p) so that the tail (99%, 99.9%,
		 * 99.99%) gets as much room as the median, the way
		 * HdrHistogram draws latency.  Points are spaced evenly on
		 * that axis, so the tail is drawn sample by sample.
		 */
		const struct samples *s = &cl->lat;
		const struct result *r = &cl->res[0];
		size_t last = SIZE_MAX;
		double n = (double)s->n;
		char one_way[64] = "";

		if (o->op != OP_READ)
			snprintf(one_way, sizeof(one_way),
				 "; one way p50 %.1f us", r->lat.p50 / 2);

		fprintf(gp, "$d << EOD\n");
		for (int j = 0; j <= PLOT_POINTS && s->n; j++) {
			double x = pow(n, (double)j / PLOT_POINTS);
			size_t i = (size_t)(n - n / x);

			if (i >= s->n)
				i = s->n - 1;
			if (i == last)
				continue;
			last = i;
			fprintf(gp, "%.6g %.3f\n", 1.0 / (1.0 - (double)i / n),
				(double)s->v[i] / 1e3);
		}
		fprintf(gp,
			"EOD\nset logscale xy\nset format y '%%g'\n"
			/* tic labels are formats to gnuplot: %%%% is one % */
			"set xtics ('0%%%%' 1, '50%%%%' 2, '90%%%%' 10, "
			"'99%%%%' 100, "
			"'99.9%%%%' 1000, '99.99%%%%' 10000, '99.999%%%%' "
			"100000)\n"
			"set xrange [1:%g]\nset xlabel 'percentile'\n"
			"set ylabel 'round trip [us], %" PRIu64 " B messages'\n"
			"set label 1 'round trip p50 %.1f  p99 %.1f  p99.9 %.1f"
			"  max %.1f us%s' "
			"at graph 0.02, graph 0.95\n",
			n > 1 ? n : 2, r->size, r->lat.p50, r->lat.p99,
			r->lat.p999, r->lat.max, one_way);
		one_way_axis(gp, o, r->lat.min, r->lat.max);
		fprintf(gp,
			"plot $d using 1:2 with lines lw 2 title '%zu round "
			"trips'\n",
			s->n);
	}
	status = pclose(gp);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		cl_fail(cl, "--plot: gnuplot failed (status %d) writing %s",
			status, o->plot);
		return -1;
	}
	return 0;
}
