# Every target that runs code does its own set-up first (`install`), so each one
# works on a fresh Debian 12 machine as root: `sudo make demo`, `sudo make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
APT_PACKAGES := mininet iperf3 bridge-utils iputils-ping iptables nftables ethtool
TORCH := torch==2.13.0

.PHONY: install test unit demo bench lint clean

install: $(STAMP)

# The stamp depends on pyproject.toml, so a changed dependency list re-installs.
$(STAMP): pyproject.toml
	@if [ "$$(id -u)" != 0 ]; then echo "make install needs root (apt + network emulation): run it with sudo" >&2; exit 1; fi
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "apt: installing$$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned: an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

test: install
	$(BIN)/pytest -q tests

unit: install
	$(BIN)/pytest -q tests/unit

demo: install
	$(BIN)/python -m testbed.demo

bench: install
	$(BIN)/python -m testbed.bench

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Removes what this tool created on this machine (never other people's
# namespaces or processes), then the build artefacts. Results are kept.
clean:
	-@test -x $(BIN)/testbed && $(BIN)/testbed clean
	rm -rf build *.egg-info .pytest_cache .ruff_cache
