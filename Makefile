# The README's commands. Each works on a fresh machine: it creates .venv when absent and
# installs through constraints.txt (torch pinned to the CPU wheel). A ready machine skips
# the install: the stamp file is newer than pyproject.toml and constraints.txt.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.tianshou-installed
EXTRAS := dev,all,wandb
PYTEST_WORKERS ?= auto

.PHONY: install test lint typecheck unit demo bench bench-smoke clean

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
	$(BIN)/mypy tianshou

unit: $(STAMP)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --cov=tianshou --cov-report=term:skip-covered

test: lint typecheck unit

demo: $(STAMP)
	$(BIN)/python examples/mujoco/demo.py

bench: $(STAMP)
	$(BIN)/python -m benchmark.import_time
	$(BIN)/python -m benchmark.data
	$(BIN)/python -m benchmark.collect
	$(BIN)/python -m benchmark.train
	$(BIN)/python -m benchmark.update_rate_qlearning
	$(BIN)/python -m benchmark.update_rate_policy
	$(BIN)/python -m benchmark.update_rate_bcq
	$(BIN)/python -m benchmark.update_rate_cql
	$(BIN)/python -m benchmark.offline_pendulum

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
