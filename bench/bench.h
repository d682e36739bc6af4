/*
 * bench.h - helpers shared by the benchmark programs (not part of rift).
 *
 * Every benchmark is one program that forks its peer: the parent measures,
 * the child serves, and the two talk over a socketpair only to pass the
 * listening port.  The child dies with the parent (PR_SET_PDEATHSIG) and
 * both arm a watchdog alarm, so no run can leave a process behind.
 *
 * Each program prints exactly one machine-readable line on success:
 *   RESULT lat  <impl> <mode> p50_us=X p99_us=X mean_us=X n=N cpu_us=X cpus=C
 *   RESULT tput <impl> <mode> gbps=X bytes=N secs=X cpu_s_gb=X cpus=C
 * and diagnostics on stderr.  bench/run.sh collects and compares them.
 */
#ifndef RIFT_BENCH_H
#define RIFT_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BENCH_WATCHDOG_S 90 /* a single run never lasts longer, s */

/* Program name for messages; each program defines it. */
extern const char *bench_prog;

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* Print "prog: message" on stderr and exit(1). */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
						     noreturn));

/* Parse a size with optional k/m/g suffix (powers of 1024); dies if bad. */
uint64_t bench_parse_size(const char *opt, const char *s);

/*
 * "-a P,C": pin the measuring process (parent) to CPU P and its peer
 * (child) to CPU C, applied by bench_spawn.  "-a P" pins both to P.
 * Without it the scheduler places them.  Dies on a bad spec.
 */
void bench_set_cpus(const char *spec);
/* What bench_set_cpus was given, for the RESULT line: "P,C" or "-". */
const char *bench_cpus(void);

/*
 * Fork a child that runs child_main(ctl, arg) and _exits with its return
 * value.  *ctl is the parent's end of a socketpair; the child gets the other
 * one.  The child is killed if the parent dies.  Returns the child's pid.
 */
pid_t bench_spawn(int (*child_main)(int ctl, void *arg), void *arg, int *ctl);

/*
 * Wait for the child; kill it if it has not exited after grace_ms.
 * Returns 0 if it exited with status 0, else -1.
 */
int bench_reap(pid_t pid, int grace_ms);

/* Pass a port number over the control socket (0 = the sender failed). */
void bench_ctl_send_port(int ctl, int port);
/* Returns the port, or dies when the peer failed or closed the socket. */
int bench_ctl_recv_port(int ctl);

/* Blocking full write / read; return 0, or -1 (errno set; EOF: errno 0). */
int bench_write_full(int fd, const void *buf, size_t len);
int bench_read_full(int fd, void *buf, size_t len);

/* Plain TCP helpers for the baselines: loopback only, TCP_NODELAY set. */
int bench_tcp_listen(int *port);
int bench_tcp_accept(int lfd);
int bench_tcp_connect(int port);

/*
 * CPU time (user + system) of this process and its reaped children, s.
 * The scheduler's exact runtime, so it does not grow when another tenant
 * takes the CPU away: the steady companion of the wall-clock figures.
 */
double bench_cpu_s(void);

/*
 * Sort the samples (ns) and print the latency RESULT line.  Percentiles use
 * the nearest-rank method.  cpu_us is bench_cpu_s() per round trip over all
 * `total` round trips (warm-up included), both processes together; call it
 * after the peer is reaped.
 */
void bench_report_lat(const char *impl, const char *mode, uint64_t *ns,
		      size_t n, size_t total);

/*
 * Print the throughput RESULT line for bytes received in ns.  cpu_s_gb is
 * bench_cpu_s() per 1e9 bytes of the whole stream (total bytes), both
 * processes together; call it after the peer is reaped.
 */
void bench_report_tput(const char *impl, const char *mode, uint64_t bytes,
		       uint64_t ns, uint64_t total);

#endif
