# The README's commands. Each works on a fresh machine: it creates .venv when absent and
# installs through constraints.txt (torch pinned to the CPU wheel). A ready machine skips
# the install: the stamp file is newer than pyproject.toml and constraints.txt.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.tianshou-installed
EXTRAS := dev,all,wandb,docs
PYTEST_WORKERS ?= auto

.PHONY: install test lint typecheck unit demo bench bench-peers bench-smoke clean docs docs-deps perf-guard mutations

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[$(EXTRAS)]'
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check tianshou test benchmark examples conftest.py
	$(BIN)/ruff format --check tianshou test benchmark examples conftest.py

typecheck: $(STAMP)
	$(BIN)/mypy tianshou examples

unit: $(STAMP) docs-deps
	$(BIN)/pytest -n $(PYTEST_WORKERS) --cov=tianshou --cov-report=term:skip-covered

test: lint typecheck unit

# Debian packages of the docs tests: test/docs opens the built site in headless Chromium and
# draws the package-layer picture with Graphviz's `dot`. Installed only when one is missing.
# `make docs` itself needs neither (without `dot`, matplotlib draws the picture), nor root.
docs-deps:
	@if command -v dot >/dev/null && command -v chromium >/dev/null; then :; \
	elif command -v apt-get >/dev/null; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q graphviz chromium; \
	else \
		echo "docs-deps: install Graphviz (dot) and Chromium with your package manager" >&2; \
		exit 1; \
	fi

DOCS_OUT ?= docs/_build

# The documentation site (guides, API reference, benchmark, changelog), warnings as errors.
docs: $(STAMP)
	$(BIN)/sphinx-build -W --keep-going -q -b html docs $(DOCS_OUT)/html
	@echo "Built the site: open file://$(abspath $(DOCS_OUT))/html/index.html in a browser"

# The throughput gate (benchmark/README.md): library-to-limit ratios against benchmark/floors.json.
perf-guard: $(STAMP)
	$(BIN)/python -m benchmark.perf_guard

# Deliberate mutations that the gates must catch (and pass again without).
mutations: $(STAMP)
	$(BIN)/python -m benchmark.mutations

demo: $(STAMP)
	$(BIN)/python -m examples.mujoco.demo

# The speed benchmarks of benchmark/README.md, each printing JSON lines.
bench: $(STAMP)
	$(BIN)/python -m benchmark.import_time
	$(BIN)/python -m benchmark.data
	$(BIN)/python -m benchmark.collect
	$(BIN)/python -m benchmark.train
	$(BIN)/python -m benchmark.train_small
	$(BIN)/python -m benchmark.train_compiled
	$(BIN)/python -m benchmark.update_rate_qlearning
	$(BIN)/python -m benchmark.update_rate_policy
	$(BIN)/python -m benchmark.update_rate_bcq
	$(BIN)/python -m benchmark.update_rate_cql
	$(BIN)/python -m benchmark.update_rate_ppo
	$(BIN)/python -m benchmark.update_rate_recurrent
	$(BIN)/python -m benchmark.update_rate_compiled
	$(BIN)/python -m benchmark.train_offline
	$(BIN)/python -m benchmark.threads
	$(BIN)/python -m benchmark.busy_machine
	$(BIN)/python -m benchmark.data_parallel

# Stable-Baselines3 next to ours (PPO on Hopper-v5: the update and 100k steps end to end). SB3
# lives in its own venv, installed through constraints.txt so that torch stays the CPU wheel.
PEERS_VENV ?= .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.peers-installed

$(PEERS_STAMP): benchmark/peers/requirements.txt constraints.txt
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet -c constraints.txt -r benchmark/peers/requirements.txt
	touch $(PEERS_STAMP)

bench-peers: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python -m benchmark.peers.compare_sb3
	$(BIN)/python -m benchmark.peers.compare_sb3_recurrent

BENCH_SMOKE_OUT ?= log/bench-smoke

# The MuJoCo campaign runner end to end on a 2-run campaign (SAC and PPO on Hopper-v5, 2000 env
# steps each, 2 test episodes): about 2 minutes on 2 cores. See docs/benchmark.md.
bench-smoke: $(STAMP)
	rm -rf $(BENCH_SMOKE_OUT)
	$(BIN)/python -m benchmark.run_benchmark --algorithms sac,ppo --tasks Hopper-v5 --seeds 0 \
		--env-steps 2000 --config num_test_envs=2 --config sac:start_timesteps=1000 \
		--out $(BENCH_SMOKE_OUT)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage
