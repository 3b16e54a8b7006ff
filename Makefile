# The two commands of a fresh clone: `make run` and `make test`.
BUILD ?= build
MESON_SETUP_FLAGS ?=
SIEVE = $(BUILD)/src/cli/sieve

.PHONY: all deps build run test clean bench bench-train bench-optimizers bench-lua bench-proxies bench-dedupe bench-report

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

# Benchmarks: not part of `make test`; they run the peers in the same run and print ratios.
bench-train: build
	scripts/setup.sh bench
	/usr/bin/python3 bench/train_vs_torch.py --sieve $(SIEVE) --quality

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

# sieve report on 100,000 trials beside optuna.visualization (README).
bench-report: build
	scripts/setup.sh bench
	/usr/bin/python3 bench/report_speed.py --build $(BUILD)
