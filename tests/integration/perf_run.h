/*
 * perf_run.h - running build/bin/rift-perf as a user does, for the tests
 * of the tool (test_rift_perf.c, test_rift_perf_report.c): its exit
 * status, stdout and stderr, and the numbers of its JSON.
 */
#ifndef RIFT_TESTS_PERF_RUN_H
#define RIFT_TESTS_PERF_RUN_H

#include <sys/types.h>

#include "harness.h"

#define OUT_MAX	      (256 * 1024)
#define RUN_TIMEOUT_S 90

struct run {
	int status; /* exit status, or -1 if killed */
	char out[OUT_MAX];
	char err[OUT_MAX];
};

struct run *new_run(void);
/* An unlinked temporary file, for a child's stdout or stderr. */
int tmpfile_fd(void);
/* All of fd from its start into buf (OUT_MAX bytes), then close fd. */
void slurp(int fd, char *buf);
/* Start rift-perf with args and the environment variables env ("K=V";
 * both NULL-terminated, env may be NULL), stdout to out, stderr to err. */
pid_t perf_start(const char *const *args, const char *const *env, int out,
		 int err);
/* Wait for it, at most RUN_TIMEOUT_S; its exit status, -1 if killed. */
int perf_wait(pid_t pid);
/* Run it to the end into *r, printing what it did; env: one "K=V" or
 * NULL (perf_run), or a NULL-terminated list (perf_run_env). */
void perf_run(struct run *r, const char *env, const char *const *args);
void perf_run_env(struct run *r, const char *const *env,
		  const char *const *args);

/* The number after "key": in json, the first one after the text from
 * (or from the start when from is NULL); fails the test if none. */
double jnum_from(const char *json, const char *from, const char *key);
double jnum(const char *json, const char *key);
/* How often needle occurs in hay. */
int count(const char *hay, const char *needle);
/* Checks of a rift-perf JSON result: a latency one's percentiles in
 * order, min <= mean <= max, per-side CPU figures present; a bandwidth
 * one's rates positive, Gb/s eight times GB/s. */
void perf_check_lat(const char *json);
void perf_check_bw(const char *json);

#endif
