# Lakestream-C build. `make run` builds and starts a broker on embedded
# defaults; `make test` runs every test (installing what is missing first).
CC ?= gcc
BUILD ?= build
PKGS := libuv jansson sqlite3 libzstd liblz4 zlib libcurl libssl libcrypto libmicrohttpd libpcre2-8 gnutls
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter -Isrc -g
CFLAGS ?= -O2
SAN_FLAGS :=
ifeq ($(SANITIZE),1)
  BUILD := build-asan
  SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  CFLAGS := -O1 -DLS_CHECK_INVARIANTS_DEFAULT=1
endif
# libpq (the PostgreSQL metadata backend, src/meta/meta_pg.c): its headers
# live under pg_config's include dir, not on pkg-config's path everywhere.
PQ_CFLAGS := -I$(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)
ALL_CFLAGS = $(CFLAGS_BASE) $(CFLAGS) $(SAN_FLAGS) $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(PQ_CFLAGS)
LDLIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpq -lsnappy -lpthread -lm
LDFLAGS += $(SAN_FLAGS)

LIB_SRCS := $(sort $(wildcard src/*/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/src/main.o
# tests/unit mirrors src/: tests/unit/<folder>/test_<x>.c tests src/<folder>/;
# the binaries stay flat, $(BUILD)/tests/test_<x>, so names must be unique.
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c tests/unit/*/test_*.c))
UNIT_BINS := $(addprefix $(BUILD)/tests/,$(basename $(notdir $(UNIT_SRCS))))
UNIT_HDRS := $(wildcard tests/unit/*.h tests/unit/*/*.h)

.PHONY: all deps run client-tools test unit asan asan-test tsan clean format gen
all: $(BUILD)/lakestream $(UNIT_BINS) $(BUILD)/tools/kgen $(BUILD)/bench/cold_read_bench

deps:
	@tools/install-deps.sh build

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# The REST API's OpenAPI document is built into the binary (src/api/openapi.c
# includes it with .incbin, which -MMD does not see).
$(BUILD)/src/api/openapi.o: docs/api/openapi.json
# So are the web console's files (src/console/console.c).
$(BUILD)/src/console/console.o: $(wildcard console/*)

# Rebuilt from scratch: `ar r` would keep members of deleted sources.
$(BUILD)/liblakestream.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/lakestream: $(MAIN_OBJ) $(BUILD)/liblakestream.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

define unit_test_rule
$(BUILD)/tests/$(basename $(notdir $(1))): $(1) $(UNIT_HDRS) $(BUILD)/liblakestream.a
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_CFLAGS) -Itests/unit $$(LDFLAGS) -o $$@ $$< $(BUILD)/liblakestream.a $$(LDLIBS)
endef
$(foreach t,$(UNIT_SRCS),$(eval $(call unit_test_rule,$(t))))

# The Kafka message codec generator (docs/ARCHITECTURE.md "Kafka messages").
# Its output, src/kafka/msg_gen.{h,c} (codecs) and src/kafka/api_gen.h (the
# dispatch rows and handler declarations), is committed: `make gen` rewrites
# it from src/kafka/messages/*.msg, and `make test` fails when it is stale.
KGEN_OUT := src/kafka/msg_gen.h src/kafka/msg_gen.c src/kafka/api_gen.h
$(BUILD)/tools/kgen: tools/kgen/kgen.c tools/kgen/serve.c tools/kgen/kgen.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) $(SAN_FLAGS) $(LDFLAGS) -o $@ $(filter %.c,$^)

# Cold-read rebuild throughput (bench/cold/cold_read_bench.c; built by all so it keeps
# compiling as the library changes, run by hand).
$(BUILD)/bench/cold_read_bench: bench/cold/cold_read_bench.c $(BUILD)/liblakestream.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

gen: $(BUILD)/tools/kgen
	$(BUILD)/tools/kgen src/kafka/messages $(KGEN_OUT)

# First command of the README: install what is missing (and kcat, which the
# README's first examples use), build the broker alone, one job per core, serve.
# The unit tests, the generator and the bench tool are `make all`'s.
NPROC := $(shell nproc 2>/dev/null || echo 2)
run:
	@tools/install-deps.sh run
	@$(MAKE) --no-print-directory -j$(NPROC) $(BUILD)/lakestream
	./$(BUILD)/lakestream serve $(ARGS)

# The clients the README's examples use: kcat and the Python venv .venv
# (confluent-kafka, pyiceberg; pinned in tests/integration/requirements.txt).
client-tools:
	@tools/install-deps.sh client

# Unit tests only (fast, in-memory backends). T=test_<binary> runs one binary,
# T=test_<binary>:<name> one test of it (tests/unit/unit.h, LS_UNIT_TEST).
unit: all
ifeq ($(T),)
	@tests/run.sh --unit-only $(BUILD)
else
	@env -u LAKESTREAM_BIN LS_UNIT_TEST=$(word 2,$(subst :, ,$(T))) $(BUILD)/tests/$(word 1,$(subst :, ,$(T)))
endif

# Second command of the README: every test, ending "N passed, N failed".
# The three trees build with 2 jobs unless make was given -j itself (a plain
# `make test` used to build them one file at a time: ~2.5 min of its time).
TEST_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j2)
test: deps
	@tools/install-deps.sh test
	@$(MAKE) --no-print-directory $(TEST_JOBS) all
	@$(MAKE) --no-print-directory $(TEST_JOBS) SANITIZE=1 all
	@$(MAKE) --no-print-directory $(TEST_JOBS) tsan
	@LS_TEST_ASAN_BUILD=build-asan LS_TEST_TSAN_BUILD=build-tsan tests/run.sh $(BUILD)

# ThreadSanitizer build of the unit tests whose modules use threads (libuv
# worker pool, metadata watch/lease threads, a followed record's resync
# thread, S3 connection pool, the compacted-object and data-file write
# threads, read-ahead of ranged reads, reads of in-table ranges on the worker
# pool, also after unfolding).
TSAN_TESTS := test_workpool test_logstore test_meta test_meta_follow test_compactor test_retention test_objstore test_s3 test_cluster test_registry test_co_read test_file_rewrite test_cold_source test_cold_table test_unfold
tsan:
	@$(MAKE) --no-print-directory BUILD=build-tsan CFLAGS="-O1 -DLS_CHECK_INVARIANTS_DEFAULT=1" SAN_FLAGS=-fsanitize=thread \
	    $(TSAN_TESTS:%=build-tsan/tests/%)

asan:
	@$(MAKE) --no-print-directory SANITIZE=1 all

asan-test: deps
	@tools/install-deps.sh test
	@$(MAKE) --no-print-directory SANITIZE=1 all
	@tests/run.sh build-asan

format:
	find src tests/unit tools bench -name '*.[ch]' -not -path '*/corpus/*' | xargs clang-format -i --style=file

clean:
	rm -rf build build-asan build-fuzz build-tsan

-include $(LIB_OBJS:.o=.d) $(MAIN_OBJ:.o=.d)

# Fuzzing (libFuzzer, clang): every tools/fuzz/fuzz_*.c against the library
# built with coverage. FUZZ_TIME seconds per harness; corpora under
# tools/fuzz/corpus/<harness>/ (committed seeds; new finds are kept in
# build-fuzz/corpus/). Crashes are left as build-fuzz/crash-* and fail the run.
FUZZ_TIME ?= 60
FUZZ_SRCS := $(sort $(wildcard tools/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_SRCS:tools/fuzz/%.c=build-fuzz/%)
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=build-fuzz/%.o)
FUZZ_CFLAGS = -g -O1 -std=c11 -D_GNU_SOURCE -Isrc -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(PQ_CFLAGS)

# -MMD: a header change rebuilds the objects that include it (a stale object
# once read past a backend table that had grown a field)
build-fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
-include $(FUZZ_LIB_OBJS:.o=.d)

build-fuzz/fuzz_%: tools/fuzz/fuzz_%.c $(FUZZ_LIB_OBJS)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJS) $(LDLIBS)

.PHONY: fuzz
.SECONDARY: $(FUZZ_LIB_OBJS)
fuzz: deps $(FUZZ_BINS)
	@for h in $(FUZZ_BINS); do n=$$(basename $$h); \
	  mkdir -p build-fuzz/corpus/$$n tools/fuzz/corpus/$$n; \
	  echo "== $$n ($(FUZZ_TIME) s)"; \
	  (cd build-fuzz && ./$$n -max_total_time=$(FUZZ_TIME) -max_len=65536 -rss_limit_mb=2048 \
	     -print_final_stats=1 corpus/$$n ../tools/fuzz/corpus/$$n > $$n.log 2>&1); rc=$$?; \
	  grep -E "stat::number_of_executed_units|ERROR|SUMMARY|Test unit written" build-fuzz/$$n.log; \
	  if [ $$rc -ne 0 ]; then echo "FAIL fuzz.$$n: crash or sanitizer report (see build-fuzz/$$n.log)"; exit 1; fi; \
	  echo "PASS fuzz.$$n"; \
	done

# Long crash-consistency run: CYCLES kill -9/restart cycles under idempotent
# load with fault-injecting stores; report in build/chaos-report.json.
# CLUSTER=N: N brokers over a throwaway etcd, a random one killed per cycle.
# TXN=1: transactional producers and the transaction checker (3 brokers
# unless CLUSTER says otherwise). META=postgresql: the cluster's metadata on
# a throwaway PostgreSQL instead of etcd.
CYCLES ?= 20
CLUSTER ?= 0
TXN ?=
META ?=
.PHONY: chaos
chaos: deps
	@tools/install-deps.sh test
	@$(MAKE) --no-print-directory all
	.venv/bin/python tests/chaos/chaos.py --cycles $(CYCLES) --faults --cluster $(CLUSTER) $(if $(TXN),--txn) $(if $(META),--meta $(META)) --json build/chaos-report.json

# Minutes of steady load on tables, plain and compacted topics with a consumer
# group: table = log, nothing lost, bounded WAL objects / metadata, no stall.
# Report in build/soak-report.json (docs/RELIABILITY.md has figures).
SOAK_SECONDS ?= 300
SOAK_RATE ?= 500
.PHONY: soak
soak: deps
	@tools/install-deps.sh test
	@$(MAKE) --no-print-directory all
	.venv/bin/python tests/soak/soak.py --seconds $(SOAK_SECONDS) --rate $(SOAK_RATE) --json build/soak-report.json --plot build/soak-plot.svg

# The 3-broker S3 cluster under load and a nemesis (tests/soak/cluster_soak.py):
# a throwaway etcd and Ceph radosgw, three brokers with default settings, one
# 16-partition table topic (commit interval 1 s) fed at SOAK_RATE records/s for
# SOAK_SECONDS by an idempotent producer, a consumer group; a kill -9, a 20 s
# SIGSTOP and a 15 s store outage at 1/4, 1/2 and 3/4 of the run. Checks: log
# exact, table = log, group complete, table lag <= 5 s and each broker's loop
# lag < 100 ms outside the fault windows (docs/RELIABILITY.md). Defaults here:
# 600 s at 2 000 records/s (runs shorter than ~240 s leave no sample outside
# the fault windows). Report in build/soak-cluster-report.json.
# SOAK_SECONDS / SOAK_RATE given on the command line or in the environment
# apply here too (CLUSTER_SOAK_SECONDS / CLUSTER_SOAK_RATE, if given, first).
CLUSTER_SOAK_SECONDS ?= $(if $(filter file,$(origin SOAK_SECONDS)),600,$(SOAK_SECONDS))
CLUSTER_SOAK_RATE ?= $(if $(filter file,$(origin SOAK_RATE)),2000,$(SOAK_RATE))
.PHONY: soak-cluster
soak-cluster: deps
	@tools/install-deps.sh test
	@$(MAKE) --no-print-directory all
	.venv/bin/python tests/soak/cluster_soak.py --seconds $(CLUSTER_SOAK_SECONDS) --rate $(CLUSTER_SOAK_RATE) --json build/soak-cluster-report.json

# The cluster tests (tests/integration/test_cluster.py: three brokers, fail-over,
# coordinators, fencing) with PostgreSQL as the metadata store instead of etcd:
# a throwaway server from tools/pg/pg.sh, one database per cluster.
.PHONY: test-cluster-postgres
test-cluster-postgres: deps
	@tools/install-deps.sh test
	@$(MAKE) --no-print-directory all
	LS_TEST_CLUSTER_META=postgresql .venv/bin/python -m pytest -q -p no:cacheprovider tests/integration/test_cluster.py

# Benchmarks side by side with Apache Kafka (never part of `make test`); see
# bench/README.md. Pass options through BENCH_ARGS, e.g. BENCH_ARGS="-n 5".
.PHONY: bench
bench:
	@BENCH_BUILD=$(BUILD) bench/run.sh $(BENCH_ARGS)

# What partitions cost one broker, three over etcd, and Kafka at 1 000, 10 000
# and 50 000 partitions (bench/partitions.py; results and plot under bench/results/).
.PHONY: bench-partitions
bench-partitions: deps
	@tools/install-deps.sh test
	@bench/setup.sh
	@$(MAKE) --no-print-directory all
	.venv/bin/python bench/partitions.py $(BENCH_ARGS)
