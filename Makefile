# The two commands of a fresh clone: `make run` and `make test`.
BUILD ?= build
MESON_SETUP_FLAGS ?=
SIEVE = $(BUILD)/src/cli/sieve

.PHONY: all deps build run test fuzz clean bench bench-train bench-optimizers bench-lua bench-proxies bench-dedupe bench-report bench-darts bench-nb101 bench-nb101-train bench-parallel bench-hardware bench-store-pg bench-cuda

all: build

deps:
	@scripts/setup.sh

$(BUILD)/build.ninja: | deps
	meson setup $(BUILD) $(MESON_SETUP_FLAGS)

build: deps $(BUILD)/build.ninja
	meson compile -C $(BUILD)

# The quickstart study is a demonstration: each `make run` starts it afresh.
run: build
	rm -f $(BUILD)/quickstart.sieve $(BUILD)/quickstart.sieve-wal $(BUILD)/quickstart.sieve-shm
	$(SIEVE) run configs/quickstart.yaml --store $(BUILD)/quickstart.sieve

test: build
	meson test -C $(BUILD) --print-errorlogs --num-processes 2

# sieve's search strategies beside Optuna on NAS-Bench-201 and the standard
# functions (minutes; not part of `make test`).
bench-optimizers: build
	scripts/setup.sh bench
	/usr/bin/python3 bench/compare.py --build $(BUILD)

# Per-trial cost of a Lua optimizer against the C random one (lua/README.md).
bench-lua: build
	bench/lua-overhead.sh $(BUILD)
	$(SIEVE) lua bench/lua/build.lua $(CURDIR)

clean:
	rm -rf $(BUILD)

# The mutation loop of tests/fuzz/fuzz.c, FUZZ_CASES cases for each input
# format, on its own build with AddressSanitizer and UBSan (minutes; `make
# test` runs a 300-case slice).  Any sanitizer report or broken promise
# stops it, leaving the case in build-fuzz/fuzz-crash-FORMAT.bin.
FUZZ_BUILD ?= build-fuzz
FUZZ_CASES ?= 20000
FUZZ_SEED ?= 20
fuzz: deps
	test -f $(FUZZ_BUILD)/build.ninja || meson setup $(FUZZ_BUILD) -Db_sanitize=address,undefined -Db_lundef=false
	meson compile -C $(FUZZ_BUILD)
	cd $(FUZZ_BUILD) && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 G_SLICE=always-malloc \
	  SIEVE_SOURCE_ROOT=$(CURDIR) SIEVE_BUILD_ROOT=$(CURDIR)/$(FUZZ_BUILD) \
	  tests/fuzz/sieve-fuzz all $(FUZZ_CASES) $(FUZZ_SEED)

# Benchmarks: not part of `make test`; they run the peers in the same run and print ratios.
bench-train: build
	scripts/setup.sh bench
	/usr/bin/python3 bench/train_vs_torch.py --sieve $(SIEVE) --quality

bench-darts: build
	scripts/setup.sh bench
	/usr/bin/python3 bench/train_darts_vs_torch.py --sieve $(SIEVE)

# Zero-cost proxies beside the PyTorch peer: speed (peer timed in the same run), agreement on
# identical weights and batch, and the correlation table over 996 NAS-Bench-201 architectures
# (the last takes a while; its scores are cached in $(BUILD)/proxies-nb201.jsonl).
bench-proxies: build
	scripts/setup.sh bench
	/usr/bin/python3 bench/proxies_speed.py --build $(BUILD)
	/usr/bin/python3 bench/proxies_crosscheck.py --build $(BUILD) --full
	/usr/bin/python3 bench/proxies_correlation.py --build $(BUILD)

# The dedupe stage on the NAS-Bench-201 table: cache share, distinct evaluations (README).
bench-dedupe: build
	/usr/bin/python3 bench/dedupe_nb201.py --build $(BUILD) --seeds 10

# Every NAS-Bench-101 cell enumerated and hashed with the benchmark's graph
# hash: fails unless it finds the published 423,624 classes (README).
bench-nb101: build
	time $(BUILD)/plugins/spaces/nb101/nb101-count --expect 423624

# Training an nb101 candidate beside the PyTorch peer bench/torch_nb101.py.
bench-nb101-train: build
	scripts/setup.sh bench
	/usr/bin/python3 bench/train_nb101_vs_torch.py --sieve $(SIEVE)

# Hardware-aware search on NAS-Bench-201: the latency table, prediction vs measurement, the Pareto front.
bench-hardware: build
	/usr/bin/python3 bench/hardware_aware.py --build $(BUILD) --seeds 10

# sieve report on 100,000 trials beside optuna.visualization (README).
bench-report: build
	scripts/setup.sh bench
	/usr/bin/python3 bench/report_speed.py --build $(BUILD)

# Studies on a throwaway PostgreSQL server: workers against the ideal, zero-cost
# trials, Optuna's RDBStorage on the same server (README, "Many machines").
bench-store-pg: build
	scripts/setup.sh bench
	/usr/bin/python3 bench/store_pg.py --build $(BUILD)

bench-parallel: build
	scripts/setup.sh bench
	/usr/bin/python3 bench/parallel_train.py --sieve $(SIEVE)

# The runtime device against PyTorch on the GPU (issue 27), for the GPU
# machine: no build there (no meson, GLib or oneDNN), so it runs a build
# made here and carried along; PEER is the PyTorch peer, torch_nb201.py
# beside it; PYTHON the one with CUDA PyTorch.  Not part of `make test`.
PEER ?= ../shared/peers/torch_nb201_gpu.py
PYTHON ?= python3
bench-cuda:
	$(PYTHON) bench/cuda_vs_torch.py --exe $(BUILD)/bench/cuda-train --peer $(PEER) --out $(BUILD)/cuda_vs_torch.json
