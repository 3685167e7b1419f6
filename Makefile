# Lakestream-C build. `make run` builds and starts a broker on embedded
# defaults; `make test` runs every test (installing what is missing first).
CC ?= gcc
BUILD ?= build
PKGS := libuv jansson sqlite3 libzstd liblz4 zlib libcurl libcrypto
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter -Isrc -g
CFLAGS ?= -O2
SAN_FLAGS :=
ifeq ($(SANITIZE),1)
  BUILD := build-asan
  SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  CFLAGS := -O1
endif
ALL_CFLAGS = $(CFLAGS_BASE) $(CFLAGS) $(SAN_FLAGS) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lsnappy -lpthread -lm
LDFLAGS += $(SAN_FLAGS)

LIB_SRCS := $(sort $(wildcard src/*/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/src/main.o
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all deps run test unit asan asan-test clean format
all: $(BUILD)/lakestream $(UNIT_BINS)

deps:
	@tools/install-deps.sh build

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/liblakestream.a: $(LIB_OBJS)
	ar rcs $@ $^

$(BUILD)/lakestream: $(MAIN_OBJ) $(BUILD)/liblakestream.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h $(BUILD)/liblakestream.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(BUILD)/liblakestream.a $(LDLIBS)

# First command of the README: install what is missing, build, serve.
run: deps
	@$(MAKE) --no-print-directory all
	./$(BUILD)/lakestream serve $(ARGS)

# Unit tests only (fast, in-memory backends).
unit: all
	@tests/run.sh --unit-only $(BUILD)

# Second command of the README: every test, ending "N passed, N failed".
test: deps
	@tools/install-deps.sh test
	@$(MAKE) --no-print-directory all
	@tests/run.sh $(BUILD)

asan:
	@$(MAKE) --no-print-directory SANITIZE=1 all

asan-test: deps
	@tools/install-deps.sh test
	@$(MAKE) --no-print-directory SANITIZE=1 all
	@tests/run.sh build-asan

format:
	clang-format -i src/*/*.c src/*/*.h src/*.c tests/unit/*.c tests/unit/*.h

clean:
	rm -rf build build-asan

-include $(LIB_OBJS:.o=.d) $(MAIN_OBJ:.o=.d)
