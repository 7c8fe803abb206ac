# posenc - positional encodings as a service.
#
#   make run        install missing Debian packages, build, start on :8080
#   make test       install missing packages, check the layers and the format,
#                   build, run the whole suite
#   make check      the quick tier (~30 s): build, unit, API, fast HTTP groups
#   make check-layers  includes against the layers' direction, include circles
#   make format-check  files that differ from .clang-format
#   make install PREFIX=DIR  the C library: include/posenc.h, libposenc.a,
#                   posenc.pc (pkg-config)
#   make docs       rewrite the documents' tables generated from the code
#   make check-docs documents against the code (run by make test)
#   make test-alloc every allocation along a request or a model load failed in
#                   turn (ASan), each must end in a clean answer
#   make test-asan  the suite again under AddressSanitizer + UBSan
#   make test-valgrind  the suite with the server under valgrind (memcheck)
#   make test-soak  wrk + fault injection against the ASan server, RSS check,
#                   SIGTERM under load and as the drain ends (tests/soak/run.sh, about 60 s)
#   make test-float-text  float_to_text vs Dragonbox for all 2^32 floats
#   make fuzz       libFuzzer over the request decoding (FUZZ_SECONDS=60)
#   make test-docker  build and run the container images (root, podman)
#   make test-debian13  make test in a Debian 13 root (root, debootstrap)
#   make            build build/posenc-server and build/libposenc.a
#
# SANITIZE=1 builds everything with -fsanitize=address,undefined into
# build-asan/ (make test-asan does that for you); SANITIZE=thread with
# ThreadSanitizer into build-tsan/ (make test-tsan).

CC ?= gcc
ifeq ($(SANITIZE),1)
BUILD ?= build-asan
SANFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
OPT ?= -O1 -g
else ifeq ($(SANITIZE),thread)
BUILD ?= build-tsan
SANFLAGS = -fsanitize=thread
OPT ?= -O1 -g
else
BUILD ?= build
SANFLAGS =
OPT ?= -O2 -g
endif

WARN = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
       -Wformat=2 -Wpointer-arith -Wvla -Wundef -Wcast-qual -Wwrite-strings
PKGS = libmicrohttpd jansson
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CPPFLAGS += -D_DEFAULT_SOURCE -Iinclude -Ilib -Iapi -I$(BUILD)/gen
CFLAGS += -std=c11 $(OPT) $(WARN) -fopenmp $(SANFLAGS) $(PKG_CFLAGS)
# The one C++ file, api/json/number_shim.cc, wraps two header-only libraries.
CXX ?= g++
CXXFLAGS += -std=c++17 $(OPT) -Wall -Wextra -Werror -fno-exceptions -fno-rtti $(SANFLAGS) \
            -I/usr/include/dragonbox-1.1.3
LDFLAGS += -fopenmp $(SANFLAGS)
LDLIBS += $(PKG_LIBS) -lstdc++ -lm

LIB_SRC = $(wildcard lib/*.c)
# /diagnose's numeric search, its own archive above the core
DIAG_SRC = $(wildcard lib/diagnose/*.c)
API_SRC = $(wildcard api/*.c api/json/*.c api/models/*.c api/diagnose/*.c)
API_CXX_SRC = $(wildcard api/json/*.cc)
SERVER_SRC = $(wildcard server/*.c)
UNIT_SRC = $(wildcard tests/unit/*.c)
HTTP_SRC = $(wildcard tests/http/*.c) tests/unit/check.c
API_TEST_SRC = $(wildcard tests/api/*.c) tests/unit/check.c

LIB_OBJ = $(LIB_SRC:%.c=$(BUILD)/%.o)
DIAG_OBJ = $(DIAG_SRC:%.c=$(BUILD)/%.o)
API_OBJ = $(API_SRC:%.c=$(BUILD)/%.o) $(API_CXX_SRC:%.cc=$(BUILD)/%.o) $(BUILD)/gen/openapi_text.o
SERVER_OBJ = $(SERVER_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/web_text.o
UNIT_OBJ = $(UNIT_SRC:%.c=$(BUILD)/%.o)
HTTP_OBJ = $(HTTP_SRC:%.c=$(BUILD)/%.o)
API_TEST_OBJ = $(API_TEST_SRC:%.c=$(BUILD)/%.o)

SERVER = $(BUILD)/posenc-server
LIBPOSENC = $(BUILD)/libposenc.a
LIBDIAG = $(BUILD)/libposenc_diagnose.a
LIBAPI = $(BUILD)/libposenc_api.a

.PHONY: all deps test-deps run test check test-asan test-tsan test-valgrind test-soak fuzz clean check-layers

all: $(SERVER) $(LIBPOSENC) $(LIBDIAG)

deps:
	@tools/install-deps.sh build

test-deps:
	@tools/install-deps.sh test

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c $< -o $@

# The core computes in double and rounds once where it says so: every
# float-to-double promotion there is written out.
$(LIB_OBJ): CFLAGS += -Wdouble-promotion

$(LIBPOSENC): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(LIBDIAG): $(DIAG_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(LIBAPI): $(API_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

# The OpenAPI text is compiled into the binary: YAML as written, JSON made
# from it at build time.
$(BUILD)/gen/openapi.json: api/openapi.yaml tools/yaml2json.py api/request_fields.h tools/check-fields.py
	@mkdir -p $(dir $@)
	/usr/bin/python3 tools/check-fields.py api/request_fields.h $<
	/usr/bin/python3 tools/yaml2json.py $< > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/openapi_text.c: api/openapi.yaml $(BUILD)/gen/openapi.json tools/embed.sh
	@mkdir -p $(dir $@)
	{ tools/embed.sh api_openapi_yaml_text api/openapi.yaml; \
	  tools/embed.sh api_openapi_json_text $(BUILD)/gen/openapi.json; } > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/openapi_text.o: $(BUILD)/gen/openapi_text.c
	$(CC) -c $< -o $@

# The explorer page (GET /): web/index.html with web/style.css and
# web/app.js inlined by web/bundle.sh, compiled in like the OpenAPI text.
WEB_SRC = web/index.html web/style.css web/app.js web/bundle.sh

$(BUILD)/gen/web_index.html: $(WEB_SRC)
	@mkdir -p $(dir $@)
	web/bundle.sh web > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/web_text.c: $(BUILD)/gen/web_index.html tools/embed.sh
	tools/embed.sh web_index_html_text $< > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/web_text.o: $(BUILD)/gen/web_text.c
	$(CC) -c $< -o $@

$(SERVER): $(SERVER_OBJ) $(LIBAPI) $(LIBDIAG) $(LIBPOSENC)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/test_lib: $(UNIT_OBJ) $(LIBDIAG) $(LIBPOSENC)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/test_api: $(API_TEST_OBJ) $(LIBAPI) $(LIBDIAG) $(LIBPOSENC)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/test_http: $(HTTP_OBJ)
	$(CC) $(LDFLAGS) $^ -lcurl -ljansson -lm -o $@

# OpenMP threads wait passively between a request's parallel regions
# unless the caller says otherwise (libgomp reads this before main).
run: deps
	@$(MAKE) --no-print-directory all
	OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive} exec ./$(SERVER) $(ARGS)

test: test-deps
	@$(MAKE) --no-print-directory check-layers
	@tools/format-check.sh
	@$(MAKE) --no-print-directory all $(BUILD)/test_lib $(BUILD)/test_api $(BUILD)/test_http
	@$(MAKE) --no-print-directory check-docs
	@$(MAKE) --no-print-directory check-exports
	BUILD=$(BUILD) tests/run.sh

# The quick tier, about 30 s: build, the unit and API tests, and the HTTP
# groups that take under ~1 s each (the contract's endpoints, errors, masks,
# fields, auth, limits); make test runs everything.
QUICK_HTTP_GROUPS = service encode apply errors mask fields auth limits reqlimits connlimit

.PHONY: check
check:
	@$(MAKE) --no-print-directory all $(BUILD)/test_lib $(BUILD)/test_api $(BUILD)/test_http
	BUILD=$(BUILD) QUICK=1 HTTP_GROUPS="$(QUICK_HTTP_GROUPS)" tests/run.sh

# Includes must follow the layers (lib <- api/json <- api/models <- api <-
# server) and no modules may include each other around a loop.
check-layers:
	@/usr/bin/python3 tools/check-layers.py

# The documents' reference tables (flags, error codes, finding codes,
# architectures, metrics) come from the code: make docs rewrites their
# generated blocks, make check-docs fails when a document and the code
# disagree (and on a relative link to nothing). tools/docs.py says how.
DOCS_FACTS = $(BUILD)/docs_facts

$(DOCS_FACTS): $(BUILD)/tools/docs_facts.o $(LIBAPI) $(LIBDIAG) $(LIBPOSENC)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

.PHONY: docs check-docs
docs: $(SERVER) $(DOCS_FACTS)
	/usr/bin/python3 tools/docs.py $(BUILD)

check-docs: $(SERVER) $(DOCS_FACTS)
	/usr/bin/python3 tools/docs.py --check $(BUILD)

test-asan:
	@$(MAKE) --no-print-directory SANITIZE=1 test

# ThreadSanitizer over the groups where threads meet: HTTP threads, workers,
# the compute gate, the shared table cache, drains and probes. OpenMP teams
# are left out (OMP_NUM_THREADS=1): GCC's libgomp is not instrumented, so
# its barriers read as races (the determinism group, which sets its own
# teams, reports only those). The memory-peak and latency groups measure
# what TSan's shadow memory and slowdown change, and are not run here.
TSAN_GROUPS = concurrency slowclient connlimit overload drain observe intake signals
.PHONY: test-tsan
test-tsan: test-deps
	@$(MAKE) --no-print-directory SANITIZE=thread all build-tsan/test_http
	OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=0" POSENC_SERVER=build-tsan/posenc-server \
	    ./build-tsan/test_http $(TSAN_GROUPS)

# Every C file under lib/ api/ server/ tests/ must be what clang-format
# (.clang-format) makes of it; lists the files that are not.
.PHONY: format-check
format-check: test-deps
	@tools/format-check.sh

# Allocation-failure run (tests/alloc/alloc_test.c): fails the Nth
# allocation for every N along /encode, /apply, /diagnose (one subject of
# each kind) and model loading, under ASan + UBSan; every run must end in
# the same answer or a 503, and leak nothing. Model directories come from tests/alloc/write_models.py (numpy).
ALLOC_WRAP = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=free

$(BUILD)/alloc_test: $(BUILD)/tests/alloc/alloc_test.o $(LIBAPI) $(LIBDIAG) $(LIBPOSENC)
	$(CC) $(LDFLAGS) $(ALLOC_WRAP) $^ $(LDLIBS) -o $@

.PHONY: test-alloc alloc-run
test-alloc: test-deps
	@$(MAKE) --no-print-directory SANITIZE=1 alloc-run

alloc-run: $(BUILD)/alloc_test
	@rm -rf $(BUILD)/alloc-models
	/usr/bin/python3 tests/alloc/write_models.py $(BUILD)/alloc-models
	OMP_NUM_THREADS=2 ./$(BUILD)/alloc_test $(BUILD)/alloc-models

test-valgrind: test-deps
	@$(MAKE) --no-print-directory all $(BUILD)/test_lib $(BUILD)/test_api $(BUILD)/test_http
	BUILD=$(BUILD) VALGRIND=1 tests/run.sh

# Soak and fault test (tests/soak/run.sh): the ASan + UBSan server under
# wrk and misbehaving clients for SOAK_SECONDS (25), then SIGTERM under
# load. Builds build-asan/ if needed.
SOAK_SECONDS ?= 25
test-soak:
	@tools/install-deps.sh soak
	@$(MAKE) --no-print-directory SANITIZE=1 all
	BUILD=build-asan SOAK_SECONDS=$(SOAK_SECONDS) tests/soak/run.sh

# libFuzzer over the request decoding (clang, ASan + UBSan), bounded in
# time; a crash, sanitizer report or leak fails it. New inputs it finds go
# to build-fuzz/corpus, never into the checked-in seed corpus.
FUZZ_SECONDS ?= 60
FUZZ_FLAGS = -std=c11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
             -fopenmp -D_DEFAULT_SOURCE -Iinclude -Ilib -Iapi $(PKG_CFLAGS) \
             -DFAST_MIN_BODY=64 -DPARALLEL_MIN_BYTES=128 -DPOSENC_NON_FINITE_TEXT_ABORTS

# -fno-sanitize=function: clang++'s check of calls through function pointers
# needs the C++ UBSan runtime, and the fuzzer links with clang (C).
build-fuzz/number_shim.o: api/json/number_shim.cc api/json/float_layout.h
	@mkdir -p $(dir $@)
	clang++ -std=c++17 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function \
	    -DPOSENC_NON_FINITE_TEXT_ABORTS \
	    -fno-exceptions -Iapi -I/usr/include/dragonbox-1.1.3 -c $< -o $@

build-fuzz/fuzz_request: tests/fuzz/fuzz_request.c $(LIB_SRC) $(DIAG_SRC) $(API_SRC) $(BUILD)/gen/openapi_text.c \
                         build-fuzz/number_shim.o
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) $^ $(PKG_LIBS) -lstdc++ -lm -o $@

# The header checks (server/framing.c, header_syntax.c: pure functions)
# over header blocks laid out as libmicrohttpd 0.9 leaves them.
build-fuzz/fuzz_headers: tests/fuzz/fuzz_headers.c server/framing.c server/header_syntax.c
	@mkdir -p $(dir $@)
	clang -std=c11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	    -D_DEFAULT_SOURCE -Iserver $^ -o $@

# FUZZ_SECONDS for the request decoding, a quarter of it more for the
# header checks (thousands of times faster an input).
fuzz:
	@tools/install-deps.sh fuzz
	@$(MAKE) --no-print-directory build-fuzz/fuzz_request build-fuzz/fuzz_headers
	@mkdir -p build-fuzz/corpus build-fuzz/corpus-headers
	./build-fuzz/fuzz_request -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 \
	    -rss_limit_mb=4096 -print_final_stats=1 build-fuzz/corpus tests/fuzz/corpus
	./build-fuzz/fuzz_headers -max_total_time=$$(( $(FUZZ_SECONDS) / 4 + 1 )) -max_len=1024 \
	    -timeout=10 -print_final_stats=1 build-fuzz/corpus-headers

# Benchmark suite (tests/bench/README.md): starts posenc, the FastAPI peer
# and a libmicrohttpd "ceiling" on free loopback ports, drives them with wrk
# and writes tests/bench/results/. Not part of make test; takes ~5 minutes.
BENCH_BIN = $(BUILD)/bench/ceiling $(BUILD)/bench/sgemm_bench $(BUILD)/bench/jansson_bench \
            $(BUILD)/bench/number_bench

$(BUILD)/bench/%: tests/bench/%.c tests/bench/bench_util.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $< $(LDLIBS) -o $@

# OpenBLAS's sgemm is only the benchmark's comparator (posenc has its own
# batch-invariant product, lib/matmul.c): the one program that links it.
$(BUILD)/bench/sgemm_bench: tests/bench/sgemm_bench.c tests/bench/bench_util.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags openblas) $(LDFLAGS) $< \
	    $(shell pkg-config --libs openblas) $(LDLIBS) -o $@

# Number text against fast_float and Dragonbox's to_chars (its static
# library comes with Debian's libdragonbox-dev).
$(BUILD)/bench/number_bench: tests/bench/number_bench.cc $(LIBAPI) $(LIBDIAG) $(LIBPOSENC)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $< $(LIBAPI) $(LIBDIAG) $(LIBPOSENC) $(LDFLAGS) \
	    -ldragonbox_to_chars $(LDLIBS) -o $@

# float_to_text() against the Dragonbox writer for all 2^32 float32 bit
# patterns, with the strtof round trip (minutes; make test runs a sample).
$(BUILD)/test_float_text: $(BUILD)/tests/exhaustive/float_text_all.o $(BUILD)/tests/api/test_codecs.o \
                          $(BUILD)/tests/unit/check.o $(LIBAPI) $(LIBDIAG) $(LIBPOSENC)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

.PHONY: test-float-text
test-float-text:
	@$(MAKE) --no-print-directory $(BUILD)/test_float_text
	./$(BUILD)/test_float_text

.PHONY: bench
bench:
	@tools/install-deps.sh bench
	@$(MAKE) --no-print-directory all $(BENCH_BIN)
	BUILD=$(BUILD) tests/bench/run.sh

# The explorer page in a real browser: Debian's Chromium (apt) driven by
# playwright-core (npm, pinned in tests/browser/package-lock.json). Starts
# its own server on a free port; screenshots go to docs/screenshots/.
.PHONY: test-browser
test-browser: deps
	@tests/browser/install-deps.sh
	@$(MAKE) --no-print-directory all
	cd tests/browser && npm ci --no-audit --no-fund --loglevel=error
	SERVER=$(CURDIR)/$(SERVER) node tests/browser/explorer.test.mjs

# The container image, the tokenizer sidecar, compose and the Kubernetes Pod,
# built and run for real with rootful podman (tests/docker/run.sh; as root,
# no Docker engine or registry needed; about 3 minutes).
.PHONY: test-docker
test-docker:
	@tools/install-deps.sh docker
	tests/docker/run.sh

# The README's `make test` on Debian 13 (trixie) from this Debian 12 machine:
# a debootstrap root cached in /var/tmp/posenc-debian13, this tree copied
# into it, make test run there with chroot (tests/debian13/run.sh; root;
# about 8 minutes the first time, then build and suite only).
.PHONY: test-debian13
test-debian13:
	@tools/install-deps.sh packages debootstrap
	tests/debian13/run.sh

# The C library for other programs: include/posenc.h, libposenc.a and a
# pkg-config file, under PREFIX (DESTDIR for staged installs).
PREFIX ?= /usr/local
PE_VERSION = $(shell sed -n 's/^\#define PE_VERSION_STRING "\(.*\)"$$/\1/p' include/posenc.h)

.PHONY: install check-exports
install: $(LIBPOSENC)
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/posenc.h $(DESTDIR)$(PREFIX)/include/posenc.h
	install -m 644 $(LIBPOSENC) $(DESTDIR)$(PREFIX)/lib/libposenc.a
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(PE_VERSION)|' lib/posenc.pc.in \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/posenc.pc

# Every global symbol of libposenc.a (and of the /diagnose search's archive)
# starts with pe_ (run by make test).
check-exports: $(LIBPOSENC) $(LIBDIAG)
	@tools/check-exports.sh $(LIBPOSENC) && tools/check-exports.sh $(LIBDIAG)

clean:
	rm -rf build build-asan build-fuzz

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d $(BUILD)/*/*/*/*.d)
