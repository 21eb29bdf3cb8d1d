# Every target that runs code does its own set-up first (`install`), so each one works on a
# fresh Debian 12 machine as root: `make demo`, `make test` (no sudo: a root-only image has none).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
APT_PACKAGES := mininet iperf3 bridge-utils iputils-ping iptables nftables ethtool
TORCH := torch==2.13.0
# PyTorch's CPU wheels. On Linux, PyPI's torch is the multi-GB CUDA build; with this index
# beside it pip picks 2.13.0+cpu. It is asked only when pip's own configuration has no wheel of
# $(TORCH) already (e.g. a wheel directory in PIP_FIND_LINKS, as on this project's machines,
# which reach no host but the package registries), and only if it answers (below);
# `make install TORCH_INDEX=` never asks it.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# "yes" if pip finds $(TORCH) without any index (a local wheel): then no other host is asked.
torch_local = $(shell d=$$(mktemp -d); $(PYTHON) -m pip download -q --no-deps --no-index -d $$d '$(TORCH)' >/dev/null 2>&1 && echo yes; rm -rf $$d)
# "yes" if TORCH_INDEX serves a torch page within 10 s. Checked first because pip, given an
# unreachable index, warns and carries on only after 5 retries of up to PIP_DEFAULT_TIMEOUT
# each. Expanded once, when the install recipe runs.
PROBE_INDEX := import sys, urllib.request; urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=10)
torch_index_ok = $(if $(TORCH_INDEX),$(if $(torch_local),,$(shell $(PYTHON) -c '$(PROBE_INDEX)' '$(TORCH_INDEX)' >/dev/null 2>&1 && echo yes)))

.PHONY: install test unit demo bench reproduce lint clean

install: $(STAMP)

# The stamp depends on pyproject.toml, so a changed dependency list re-installs.
$(STAMP): pyproject.toml setup.py workloads/transport/fastpath.c workloads/transport/fastpath.h
	@if [ "$$(id -u)" != 0 ]; then echo "make install needs root (apt-get, network namespaces): run make as root" >&2; exit 1; fi
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "apt: installing$$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned: an unpinned torch would pull a multi-GB CUDA build.
	$(eval TORCH_PIP_ARGS := $(if $(torch_index_ok),--extra-index-url $(TORCH_INDEX)))
	$(if $(TORCH_INDEX),$(if $(TORCH_PIP_ARGS),,$(if $(torch_local),@echo "torch: $(TORCH) from a local wheel (pip's configuration); $(TORCH_INDEX) not asked",@echo "torch: $(TORCH_INDEX) did not answer; installing $(TORCH) from pip's own configuration")))
	$(BIN)/pip install -q $(TORCH_PIP_ARGS) $(TORCH)
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)
	@echo "installed. The CLI is $(BIN)/testbed; to type just 'testbed', run: . $(BIN)/activate"

test: install
	$(BIN)/pytest -q tests

unit: install
	$(BIN)/pytest -q tests/unit

demo: install
	$(BIN)/python -m testbed.sweeps.demo

bench: install
	$(BIN)/python -m testbed.sweeps.bench

# The paper's claims with 3 seeds and intervals (about an hour here); resumable. Writes
# docs/results/reproduce-fattree-k4/ (runs/ holds the raw data; report.md is rebuilt from it).
reproduce: install
	$(BIN)/python -m testbed.sweeps.reproduce $(REPRODUCE_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Removes what this tool created on this machine (never other people's
# namespaces or processes), then the build artefacts. Results are kept.
clean:
	-@test -x $(BIN)/testbed && $(BIN)/testbed clean
	rm -rf build *.egg-info .pytest_cache .ruff_cache
