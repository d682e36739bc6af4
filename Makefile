# rift - build, test, bench, demo, install.
#
#   make demo     install what is missing, build, run the demo
#   make test     install what is missing, build, run the whole suite
#   make bench    rift over TCP against plain C sockets, printed as ratios
#   make install  PREFIX=/usr/local DESTDIR=
.DEFAULT_GOAL := all

CC      ?= cc
# Where `make install` puts things (DESTDIR=STAGE stages them under STAGE).
# Each may be set on its own, as the GNU conventions name them.
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR  ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BUILD   := build
VERSION := 0.1.0
SOVER   := 0

WARN    := -Wall -Wextra -Werror -Wno-format-truncation -Wno-override-init \
           -Wshadow -Wstrict-prototypes -Wmissing-prototypes
BASE    := -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -g -fPIC $(WARN)
# The release library is built for link-time optimization: the hot path
# crosses files (verbs transport -> session -> API), and under QEMU TCG,
# where the lab benchmarks run, a call and return costs about as much as
# twenty other instructions.  Fat objects keep librift.a usable by a
# link without -flto; -fno-semantic-interposition lets GCC inline rift's
# own exported functions inside the library.
LTO     := -flto=auto
REL_CF  := $(BASE) -O2 -fno-semantic-interposition $(LTO) -ffat-lto-objects
TST_CF  := $(BASE) -O2 -DRIFT_FAULT_INJECTION
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer \
           -fno-sanitize-recover=undefined
ASAN_CF := $(BASE) -O1 -DRIFT_FAULT_INJECTION $(SAN)
LIBS    := -lrdmacm -libverbs -lpthread

LIB_SRCS  := $(sort $(wildcard src/*/*.c src/*/*/*.c))
# Example code the unit tests cover (rift-kv's RESP codec): built into the
# test binaries only, its objects under build/<flavour>/examples, away
# from the library's that check-layers reads.
EX_TEST_SRCS := examples/rift-kv/resp.c examples/rift-kv/store.c \
                examples/rift-kv/glob.c examples/rift-kv/config.c \
                examples/rift-kv/http.c examples/rift-kv/client/reply.c
TEST_SRCS := tests/runner.c $(sort $(wildcard tests/unit/*.c tests/integration/*.c)) \
             $(EX_TEST_SRCS)
TOOL_SRCS := $(filter-out tools/metrics_http.c,$(sort $(wildcard tools/*.c)))
INFO_SRCS := $(sort $(wildcard tools/rift-info/*.c))
PERF_SRCS := $(sort $(wildcard tools/rift-perf/*.c)) tools/metrics_http.c

rel_objs  = $(LIB_SRCS:%.c=$(BUILD)/rel/%.o)
tst_objs  = $(LIB_SRCS:%.c=$(BUILD)/tst/%.o) $(TEST_SRCS:%.c=$(BUILD)/tst/%.o)
asan_objs = $(LIB_SRCS:%.c=$(BUILD)/asan/%.o) $(TEST_SRCS:%.c=$(BUILD)/asan/%.o)

.PHONY: all deps lib tools man kv test-kv test check-layers test-unit test-asan test-install test-lab fuzz fuzz-corpus fuzz-seeds fuzz-seeds-check demo bench bench-rdma bench-rma bench-failover install clean FORCE

all: lib tools man

deps:
	@sh scripts/setup.sh

lib: $(BUILD)/lib/librift.a $(BUILD)/lib/librift.so $(BUILD)/lib/rift.pc

$(BUILD)/rel/%.o: %.c | deps
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(REL_CF) -MMD -MP -c $< -o $@
$(BUILD)/tst/%.o: %.c | deps
	@mkdir -p $(dir $@)
	@echo "  CC [t]  $<"
	@$(CC) $(TST_CF) -MMD -MP -c $< -o $@
$(BUILD)/asan/%.o: %.c | deps
	@mkdir -p $(dir $@)
	@echo "  CC [s]  $<"
	@$(CC) $(ASAN_CF) -MMD -MP -c $< -o $@

$(BUILD)/lib/librift.a: $(rel_objs)
	@mkdir -p $(dir $@)
	rm -f $@ && gcc-ar rcs $@ $^
$(BUILD)/lib/librift.so: $(rel_objs) src/rift.map
	@mkdir -p $(dir $@)
	$(CC) -O2 $(LTO) -shared -Wl,-soname,librift.so.$(SOVER) -Wl,--version-script=src/rift.map \
	  -o $@.$(VERSION) $(filter %.o,$^) $(LIBS)
	ln -sf librift.so.$(VERSION) $@.$(SOVER)
	ln -sf librift.so.$(VERSION) $@
# rift.pc names where it is installed, so it is made again whenever the
# directories differ from the ones it was made for: they are kept in a
# file that changes only then.  Paths under PREFIX are written relative to
# ${prefix}, as pkg-config's --define-prefix expects.
PC_DIRS := $(PREFIX)|$(LIBDIR)|$(INCLUDEDIR)
$(BUILD)/lib/rift.pc.dirs: FORCE
	@mkdir -p $(dir $@)
	@echo '$(PC_DIRS)' | cmp -s - $@ || echo '$(PC_DIRS)' > $@
pc_rel = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
$(BUILD)/lib/rift.pc: rift.pc.in Makefile $(BUILD)/lib/rift.pc.dirs
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@VERSION@|$(VERSION)|' \
	  -e 's|@LIBDIR@|$(call pc_rel,$(LIBDIR))|; s|@INCLUDEDIR@|$(call pc_rel,$(INCLUDEDIR))|' $< > $@

# Tools use only rift.h, like any user, and link the static library.  A
# tool is tools/NAME.c, or the files of tools/NAME/ (rift-info,
# rift-perf); the ones serving metrics over HTTP link tools/metrics_http.c
# as well.
TOOL_CF   := -std=c11 -D_GNU_SOURCE -Iinclude -O2 -g $(LTO) $(WARN)
TOOL_LIBS  = $(BUILD)/lib/librift.a $(LIBS) -lm $$(pkg-config --libs libmicrohttpd)
tools: $(TOOL_SRCS:tools/%.c=$(BUILD)/bin/%) $(BUILD)/bin/rift-info $(BUILD)/bin/rift-perf
$(BUILD)/bin/%: tools/%.c $(wildcard tools/*.h) $(BUILD)/lib/librift.a
	@mkdir -p $(dir $@)
	$(CC) $(TOOL_CF) $< -o $@ $(TOOL_LIBS)
$(BUILD)/bin/rift-info: $(INFO_SRCS) $(wildcard tools/rift-info/*.h) $(BUILD)/lib/librift.a
	@mkdir -p $(dir $@)
	$(CC) $(TOOL_CF) $(INFO_SRCS) -o $@ $(TOOL_LIBS)
$(BUILD)/bin/rift-perf: $(PERF_SRCS) $(wildcard tools/rift-perf/*.h tools/*.h) $(BUILD)/lib/librift.a
	@mkdir -p $(dir $@)
	$(CC) $(TOOL_CF) $(PERF_SRCS) -o $@ $(TOOL_LIBS)

# ---- rift-kv (examples/rift-kv, issue 18) -------------------------------
# The example key-value server, built as the tools are (rift.h only, the
# static library), its client tools rift-kv-cli and rift-kv-benchmark
# (examples/rift-kv/client: NAME.c, the client's shared files and the
# RESP codec), and ASan/UBSan builds of all three over the sanitized
# library for the end-to-end test.  tests/kv/kvprobe sends raw bytes or
# RESP over rift.  make test-kv (docs/rift-kv.md): redis-cli and
# redis-benchmark (Debian's redis-tools) against it, and its own tools
# over rift, about a minute.  Not installed (an example).
KV_SRCS := $(sort $(wildcard examples/rift-kv/*.c))
KV_HDRS := $(wildcard examples/rift-kv/*.h)
KVC_SRCS := $(filter-out %/cli.c %/benchmark.c,$(sort $(wildcard examples/rift-kv/client/*.c))) \
            examples/rift-kv/resp.c
KVC_HDRS := $(wildcard examples/rift-kv/client/*.h) examples/rift-kv/resp.h
KV_BINS := rift-kv rift-kv-cli rift-kv-benchmark
kv: $(KV_BINS:%=$(BUILD)/bin/%)
all: kv
$(BUILD)/bin/rift-kv: $(KV_SRCS) $(KV_HDRS) $(BUILD)/lib/librift.a
	@mkdir -p $(dir $@)
	$(CC) $(TOOL_CF) $(KV_SRCS) -o $@ $(TOOL_LIBS)
$(BUILD)/asan/rift-kv: $(KV_SRCS) $(KV_HDRS) $(LIB_SRCS:%.c=$(BUILD)/asan/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CF) $(KV_SRCS) $(LIB_SRCS:%.c=$(BUILD)/asan/%.o) -o $@ $(LIBS) -lm
$(BUILD)/bin/rift-kv-%: examples/rift-kv/client/%.c $(KVC_SRCS) $(KVC_HDRS) $(BUILD)/lib/librift.a
	@mkdir -p $(dir $@)
	$(CC) $(TOOL_CF) $< $(KVC_SRCS) -o $@ $(TOOL_LIBS)
$(BUILD)/asan/rift-kv-%: examples/rift-kv/client/%.c $(KVC_SRCS) $(KVC_HDRS) $(LIB_SRCS:%.c=$(BUILD)/asan/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CF) $< $(KVC_SRCS) $(LIB_SRCS:%.c=$(BUILD)/asan/%.o) -o $@ $(LIBS) -lm
$(BUILD)/kv/kvprobe: tests/kv/kvprobe.c $(BUILD)/lib/librift.a
	@mkdir -p $(dir $@)
	$(CC) $(TOOL_CF) $< -o $@ $(TOOL_LIBS)
test-kv: $(KV_BINS:%=$(BUILD)/bin/%) $(KV_BINS:%=$(BUILD)/asan/%) $(BUILD)/kv/kvprobe
	@sh scripts/setup.sh
	sh tests/kv/run.sh $(BUILD)/bin $(BUILD)/kv/kvprobe
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  sh tests/kv/run.sh --quick $(BUILD)/asan $(BUILD)/kv/kvprobe
# ---- end of rift-kv -------------------------------------------------------

# Man pages, each generated from the one source of its text
# (scripts/man.sh): the tools' and the config file's from docs/, the
# API's from include/rift.h.
man: $(BUILD)/man/.stamp
$(BUILD)/man/.stamp: include/rift.h rift.pc.in docs/rift-info.md docs/rift-perf.md \
  docs/config.md scripts/man.sh scripts/md2man.awk scripts/h2man.awk Makefile | deps
	sh scripts/man.sh $(VERSION) $(BUILD)/man
	@touch $@

$(BUILD)/tst/rift-tests: $(tst_objs)
	$(CC) -o $@ $^ $(LIBS) -lm
$(BUILD)/asan/rift-tests: $(asan_objs)
	$(CC) $(SAN) -o $@ $^ $(LIBS) -lm

# libFuzzer targets (clang only), one per decoder or handshake a peer or a
# user can feed bytes: tests/fuzz/fuzz_NAME.c is build/fuzz/fuzz-NAME,
# linked with the library built for fuzzing (coverage, ASan, UBSan, fault
# points), and seeded from tests/fuzz/corpus/NAME (tests/fuzz/README.md).
FUZZ_TARGETS := frame handshake hostile cm_tcp rdma_hello url config resp
FUZZ_CF   := -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -g -O1 -DRIFT_FAULT_INJECTION \
             -Wall -Wextra -Werror -Wno-initializer-overrides -Wshadow \
             -Wstrict-prototypes -Wmissing-prototypes -fno-omit-frame-pointer \
             -fsanitize=address,undefined -fno-sanitize-recover=undefined
fuzz_objs  = $(LIB_SRCS:%.c=$(BUILD)/fuzz/obj/%.o)
$(BUILD)/fuzz/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	@echo "  CC [f]  $<"
	@clang $(FUZZ_CF) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(BUILD)/fuzz/librift-fuzz.a: $(fuzz_objs)
	rm -f $@ && ar rcs $@ $^
# The targets that play a peer over TCP share tests/fuzz/peer.c; resp
# is rift-kv's RESP request parser (examples/rift-kv/resp.c).
$(BUILD)/fuzz/fuzz-handshake $(BUILD)/fuzz/fuzz-hostile: tests/fuzz/peer.c
$(BUILD)/fuzz/fuzz-resp: examples/rift-kv/resp.c examples/rift-kv/resp.h
$(BUILD)/fuzz/fuzz-%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(BUILD)/fuzz/librift-fuzz.a
	@mkdir -p $(dir $@)
	clang $(FUZZ_CF) -fsanitize=fuzzer $(filter %.c,$^) $(filter %.a,$^) $(LIBS) -o $@

# `make fuzz` runs each target for its time below (about 3 minutes in
# all; FUZZ_SECONDS=N gives every target N), its corpus first: a regression
# run of every input kept in tests/fuzz/corpus/NAME, crashes found before
# included.  New inputs go to build/fuzz/corpus/NAME, a crash to
# build/fuzz/NAME-crash-*.  The output is in build/fuzz/NAME.log; the end
# of it is shown when a target fails.
FUZZ_TIME_frame      ?= 60
FUZZ_TIME_handshake  ?= 25
FUZZ_TIME_hostile    ?= 25
FUZZ_TIME_config     ?= 20
FUZZ_TIME_resp       ?= 20
FUZZ_TIME_url        ?= 10
FUZZ_TIME_cm_tcp     ?= 5
FUZZ_TIME_rdma_hello ?= 5
fuzz_time = $(or $(FUZZ_SECONDS),$(FUZZ_TIME_$(1)))
fuzz_dict = $(if $(wildcard tests/fuzz/$(1).dict),-dict=tests/fuzz/$(1).dict)
fuzz: fuzz-seeds-check $(FUZZ_TARGETS:%=fuzz-run-%)
fuzz-run-%: $(BUILD)/fuzz/fuzz-%
	@mkdir -p $(BUILD)/fuzz/corpus/$*
	@echo "  FUZZ    $* for $(call fuzz_time,$*) s"
	@$< -max_total_time=$(call fuzz_time,$*) -timeout=10 -print_final_stats=1 \
	  -artifact_prefix=$(BUILD)/fuzz/$*- $(call fuzz_dict,$*) \
	  $(BUILD)/fuzz/corpus/$* tests/fuzz/corpus/$* >$(BUILD)/fuzz/$*.log 2>&1 || \
	  { tail -n 40 $(BUILD)/fuzz/$*.log; echo "fuzz: $* FAILED (log: $(BUILD)/fuzz/$*.log)"; exit 1; }
	@awk '/^stat::number_of_executed_units/ { r = $$2 } /^stat::new_units_added/ { n = $$2 } \
	  END { printf "  ok      %s: %s runs, %s new inputs\n", "$*", r, n }' $(BUILD)/fuzz/$*.log

# The seeds and the config dictionary, made again from valid inputs
# (tests/fuzz/mkseeds.c); crashes kept in the corpus stay.
$(BUILD)/fuzz/mkseeds: tests/fuzz/mkseeds.c $(LIB_SRCS:%.c=$(BUILD)/tst/%.o) \
  $(BUILD)/tst/examples/rift-kv/resp.o
	@mkdir -p $(dir $@)
	$(CC) $(TST_CF) $^ -o $@ $(LIBS) -lm
fuzz-seeds: $(BUILD)/fuzz/mkseeds
	$< tests/fuzz
# make fuzz (so make test) makes them again in a scratch directory first,
# so that they cannot rot unnoticed: it fails when mkseeds does (a seed
# no longer fits what the target does with it) or when a kept seed is not
# what mkseeds makes now (an encoder changed: make fuzz-seeds).
fuzz-seeds-check: $(BUILD)/fuzz/mkseeds
	@echo "  SEEDS   check"
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && $< "$$d" && \
	  (cd "$$d" && find . -type f | sort) | while read -r f; do \
	    cmp -s "$$d/$$f" "tests/fuzz/$$f" || { echo \
	      "fuzz-seeds: tests/fuzz/$${f#./} is not what mkseeds makes: make fuzz-seeds"; \
	      exit 1; }; \
	  done

# Only the inputs kept in the repository, once each: a quick regression.
fuzz-corpus: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz-%)
	@for t in $(FUZZ_TARGETS); do \
	  echo "  FUZZ    $$t: corpus"; \
	  $(BUILD)/fuzz/fuzz-$$t -runs=0 tests/fuzz/corpus/$$t >$(BUILD)/fuzz/$$t.log 2>&1 || \
	  { tail -n 40 $(BUILD)/fuzz/$$t.log; exit 1; }; \
	done

# Dependencies point down only (api > session > transports > core >
# memory > util; docs/architecture.md): the library's objects' symbols,
# and no backend named above the transports.
check-layers: $(LIB_SRCS:%.c=$(BUILD)/tst/%.o)
	sh scripts/check-layers.sh $(BUILD)/tst

test-unit: $(BUILD)/tst/rift-tests
	$(BUILD)/tst/rift-tests

test-asan: $(BUILD)/asan/rift-tests
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(BUILD)/asan/rift-tests

# The soft-RoCE lab (tests/lab/README.md): its Debian packages (QEMU, the
# kernel, perftest...; `lab setup` installs only what is missing, and costs
# a fraction of a second when all is there), the perftest/rping smoke and the
# failure drill in every topology, then the data-path suite over real
# verbs in one guest boot.  A machine where the lab cannot run fails here.
LAB_MEM_MB ?= 4096
# The data-path tests again over QPs brought up by rdma.cm = tcp, in the
# same boot (about 2 minutes more).  Left out: tests that pin their own cm
# or do not touch connection setup (test_cm_tcp.c runs in both modes'
# place already, rift-perf/rift-info use their own config), the long
# stream test and the rift tools.  The 1000-connection test is in: with
# keepalives that fit a loaded host it takes about 4 s over cm=tcp.
CM_TCP_TESTS := path_cut echo_ single_64mib zero_byte close_tells \
  connect_refused multi_address external_event retained backpressure \
  metrics_count metrics_reattach reg_mr_failure registered_buffers \
  configured_device memlock held large_messages rendezvous thousand \
  shared_cq overflowing_shared_cq a_reply bare_frame sender_teardown \
  credits_beyond close_ abort_ sends_before send_before send_cb sendv_
# Issue 12's causes one at a time, in the pair topology, each cm: a dead
# link's teardown never blocks the loop, a down link says so, a broken
# TCP path is noticed by its socket, a failover finds its device ready,
# a path bound by group.local uses its address's device; one-sided
# writes and reads checked byte for byte while links flap; then the
# acceptance workload (tests/integration/test_soak.c): 60 s of
# mixed traffic both ways with no fault (no PATH_DOWN, no stall over
# 1 s), then 60 s of random single-link faults (the session lives, every
# message once and in order; stalls reported per fault), event and busy
# polling, cm=tcp first: the rdma_cm fault soaks can leave rdma_cm silent
# on a device for the rest of the boot (rxe 6.1), which sessions survive
# through the listener's side channel.  Then 60 s of
# the same traffic with each fault aimed at the link the session runs
# on, the other link working: one re-attach per fault, whose times it
# prints (p50/p99, and those after the pool's first growth); then 60 s
# of random faults with group.policy = active-active (both links carry
# data both ways, the receiver reorders).  100 000 messages each way in
# the random-fault soaks of either policy (issue 16), 30 000 in the
# busy-polling and aimed ones, 40 s.  Over rdma_cm the busy-polling
# and the aimed fault soaks, and over cm=tcp the healthy busy-polling
# one, are left out to keep the suite near 30 minutes (50-100 s each):
# polling is no cm matter, and re-attach over rdma_cm is what its
# random-fault soak and the single faults above do.  The aimed soak
# with one path (soak_aimed_faults_one_path: every fault a new
# connection) is make bench-failover's, not the suite's: the single
# faults with group.max_paths = 1 (one_path_with) re-attach that way.
# RIFT_SOAK_SECONDS and RIFT_SOAK_SEED (printed) replay one.  A boot of
# its own: a client whose rdma_cm gets no answer attaches and re-attaches
# through the side channel (it makes rdma_cm silent on purpose).
PAIR_TESTS := link_cut port_down loop_never connect_over tcp_path_break \
  failover_finds configured_device_chooses standby_path standby_that one_path_with \
  local_address_picks local_device_picks conn_paths failback a_failback a_standby_begun a_resumed a_ping a_server_whose silent_loss auto_returns a_flapping \
  active_active_carries soak_healthy_links_event a_removed_device a_listener_on a_port_back without_uevents \
  a_lossy_link rma_keeps rma_reads_stay
# examples/rma.c as a user runs it, in the pair boot: two processes,
# links going down under it (tests/lab/rma-example.sh); so does
# rift-kv-benchmark against rift-kv over rdma:// (tests/lab/kv-failover.sh),
# and rift-kv replication by RDMA WRITE across link cuts and a killed
# replica (tests/lab/kv-repl.sh); the three share tests/lab/lib.sh.
$(BUILD)/examples/rma: examples/rma.c include/rift.h $(BUILD)/lib/librift.a
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -Werror -Iinclude $< -o $@ $(BUILD)/lib/librift.a $(LIBS) -lm
# A client of Valkey's RDMA protocol written from its specification, with
# rdma_cm and verbs directly (tests/lab/valkey-rdma.sh, pair boot).
$(BUILD)/tst/valkey-rdma-conformance: tests/lab/valkey-rdma-conformance.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 $< -o $@ -lrdmacm -libverbs
test-lab: $(BUILD)/tst/rift-tests $(BUILD)/examples/rma $(KV_BINS:%=$(BUILD)/bin/%) $(BUILD)/tst/valkey-rdma-conformance
	tests/lab/lab setup
	tests/lab/lab smoke
	RIFT_LAB_MEM_MB=$(LAB_MEM_MB) tests/lab/lab run --topo loop --timeout 1200 -- \
	  sh -c 'build/tst/rift-tests --transport rdma --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 200 && \
	    build/tst/rift-tests --transport rdma --cm tcp --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 200 $(CM_TCP_TESTS)'
	tests/lab/lab run --topo pair --timeout 2700 -- \
	  sh -c 'export RIFT_SOAK_SECONDS=30 RIFT_SOAK_MESSAGES=50000; \
	    build/tst/rift-tests --transport rdma --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 200 $(PAIR_TESTS) soak_healthy_links_busy && \
	    sh tests/lab/rma-example.sh $(BUILD)/examples/rma && \
	    sh tests/lab/kv-failover.sh $(BUILD)/bin && \
	    sh tests/lab/kv-repl.sh $(BUILD)/bin && \
	    sh tests/lab/valkey-rdma.sh $(BUILD)/bin $(BUILD)/tst/valkey-rdma-conformance && \
	    build/tst/rift-tests --transport rdma --cm tcp --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 200 $(PAIR_TESTS) && \
	    RIFT_SOAK_SECONDS=50 RIFT_SOAK_MESSAGES=100000 build/tst/rift-tests -v --transport rdma --cm tcp --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 200 soak_link_faults_event soak_active_active && \
	    RIFT_SOAK_SECONDS=40 RIFT_SOAK_MESSAGES=30000 build/tst/rift-tests -v --transport rdma --cm tcp --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 200 soak_link_faults_busy soak_aimed_faults_with && \
	    RIFT_SOAK_SECONDS=50 RIFT_SOAK_MESSAGES=100000 build/tst/rift-tests -v --transport rdma --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 200 soak_link_faults_event soak_active_active'
	tests/lab/lab run --topo pair --timeout 600 -- \
	  sh -c 'build/tst/rift-tests --transport rdma --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 200 silent_rdma_cm'
	tests/lab/lab run --topo two-hosts --timeout 900 -- \
	  sh -c 'RIFT_SOAK_SECONDS=40 build/tst/rift-tests -v --transport rdma --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 300 soak_two_hosts && \
	    RIFT_SOAK_SECONDS=40 RIFT_SOAK_POLICY=active-active build/tst/rift-tests -v --transport rdma --cm tcp --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 300 soak_two_hosts'

# Install into staging dirs, twice with two prefixes, and build every
# example the way users will: pkg-config and the shared library, nothing
# from the source tree (tests/install.sh).
STAGE := $(abspath $(BUILD)/stage)
test-install: all
	MAKE='$(MAKE)' sh tests/install.sh $(STAGE)

# The whole suite: the layering check, install check, plain build,
# sanitizer build, bounded fuzzing, and the soft-RoCE lab.
test: all
	$(MAKE) --no-print-directory check-layers
	$(MAKE) --no-print-directory test-install
	$(MAKE) --no-print-directory test-unit
	$(MAKE) --no-print-directory test-asan
	$(MAKE) --no-print-directory test-kv
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory test-lab

demo: all
	$(BUILD)/bin/rift-perf --transport auto --loopback --test lat -n 20000
	$(BUILD)/bin/rift-perf --transport auto --loopback --test bw -D 2

bench: all
	sh bench/run.sh

# rift over verbs against perftest on the same rxe device, in one lab boot:
# series of short runs, perftest and rift alternating (bench/rdma-guest.sh).
# BENCH_LAT_ROUNDS=41 BENCH_ROUNDS=11 make bench-rdma: more rounds (the lab
# passes only its own variables into the guest, so they go on the command).
BENCH_LAT_ROUNDS ?= 25
BENCH_ROUNDS ?= 11
bench-rdma: all
	tests/lab/lab setup
	tests/lab/lab run --topo loop --timeout 2400 -- \
	  env BENCH_LAT_ROUNDS=$(BENCH_LAT_ROUNDS) BENCH_ROUNDS=$(BENCH_ROUNDS) sh bench/rdma-guest.sh

# One-sided access against perftest's write and read tools, the same way
# (issue 17: bandwidth >= 0.95x, latency <= 1.10x).
bench-rma: all
	tests/lab/lab setup
	tests/lab/lab run --topo loop --timeout 2400 -- \
	  env BENCH_SET=rma BENCH_LAT_ROUNDS=$(BENCH_LAT_ROUNDS) BENCH_ROUNDS=$(BENCH_ROUNDS) sh bench/rdma-guest.sh

# Port groups, timed in the pair topology.  Failover, each cm mode: a
# 60 s stream both ways with faults aimed at the session's link (down,
# carrier loss, 100% loss); per kind of fault, when the port said it was
# down, PATH_DOWN, and the stall per failover on each side, against the
# port's detection (tests/integration/test_soak.c, bench_failover_stalls);
# over rdma_cm also the re-attach times with one path (every fault a new
# connection: soak_aimed_faults_one_path).  Then the steady state: latency with a standby path against one path,
# and active-active bandwidth over both links against two ib_send_bw at
# once (bench/group-guest.sh; BENCH_GROUP_ROUNDS=21 for more rounds).
BENCH_GROUP_ROUNDS ?= 11
bench-failover: all $(BUILD)/tst/rift-tests
	tests/lab/lab setup
	tests/lab/lab run --topo pair --timeout 1800 -- \
	  sh -c 'export RIFT_BENCH_FAILOVER=1; \
	    build/tst/rift-tests -v --transport rdma --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 300 bench_failover soak_aimed_faults_one_path && \
	    build/tst/rift-tests -v --transport rdma --cm tcp --host "$$RIFT_LAB_SERVER_ADDR0" --timeout 300 bench_failover && \
	    BENCH_GROUP_ROUNDS=$(BENCH_GROUP_ROUNDS) sh bench/group-guest.sh'

# The library, its header and rift.pc, the tools users run (rift-info,
# rift-perf; rift-demo is the demo's), and the man pages.
INSTALL_TOOLS := rift-info rift-perf
install: lib tools man
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	  $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man5
	install -m 644 include/rift.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(BUILD)/lib/librift.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(BUILD)/lib/librift.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf librift.so.$(VERSION) $(DESTDIR)$(LIBDIR)/librift.so.$(SOVER)
	ln -sf librift.so.$(VERSION) $(DESTDIR)$(LIBDIR)/librift.so
	install -m 644 $(BUILD)/lib/rift.pc $(DESTDIR)$(PKGCONFIGDIR)/
	install -m 755 $(INSTALL_TOOLS:%=$(BUILD)/bin/%) $(DESTDIR)$(BINDIR)/
	install -m 644 $(BUILD)/man/man1/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(BUILD)/man/man5/*.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 644 $(BUILD)/man/man3/rift.3 $(DESTDIR)$(MANDIR)/man3/
	cp -P $$(find $(BUILD)/man/man3 -type l) $(DESTDIR)$(MANDIR)/man3/

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
