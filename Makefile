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
	LITELLM_LOCAL_MODEL_COST_MAP=True $(VENV)/bin/python -m bench $(BENCH_ARGS)
