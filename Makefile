# `make bench`: set up .venv with the bench extra, make sure wrk is there, run the harness.
# Results go to bench/results/<date>.{json,md,png} and bench/results/latest.*.
# Pass options through BENCH_ARGS, e.g. make bench BENCH_ARGS="--duration 4".

PYTHON ?= python3.11
VENV := .venv
BENCH_ARGS ?=

.PHONY: bench
bench:
	@command -v wrk >/dev/null || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			apt-get update -qq && apt-get install -y -qq wrk; \
		else \
			echo "make bench: wrk is missing; install it with: sudo apt-get install -y wrk" >&2; exit 2; \
		fi; }
	@[ -x $(VENV)/bin/python ] || { command -v $(PYTHON) >/dev/null && $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV); }
	$(VENV)/bin/python -m pip install --quiet -e ".[dev,bench]"
	LITELLM_LOCAL_MODEL_COST_MAP=True $(VENV)/bin/python -m bench peers $(BENCH_ARGS)

# `make bench-scaleout`: the cost of enqueueing (monitor, queue.scorer: external) on SQLite and
# PostgreSQL, and scoring throughput with one and two `bias-gateway scorer` processes.
# Needs PostgreSQL's server binaries: scripts/postgres finds them, or installs them as root.
# Writes bench/results/scaleout-<date>.md. Options through SCALEOUT_ARGS, e.g. "--rounds 1".
SCALEOUT_ARGS ?=

.PHONY: bench-scaleout
bench-scaleout:
	@command -v wrk >/dev/null || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			apt-get update -qq && apt-get install -y -qq wrk; \
		else \
			echo "make bench-scaleout: wrk is missing; install it with: sudo apt-get install -y wrk" >&2; exit 2; \
		fi; }
	@[ -x $(VENV)/bin/python ] || { command -v $(PYTHON) >/dev/null && $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV); }
	$(VENV)/bin/python -m pip install --quiet -e ".[dev,bench]"
	PG_BIN="$$(scripts/postgres bin)" || { echo "make bench-scaleout: no PostgreSQL: $$PG_BIN" >&2; exit 2; }; \
	BIAS_TEST_PG_BIN="$$PG_BIN" LITELLM_LOCAL_MODEL_COST_MAP=True \
		$(VENV)/bin/python -m bench scaleout $(SCALEOUT_ARGS)
