# Two commands do all the set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test check lint layers release-audit mutation-check bench bench-surfaces docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	@bash scripts/demo.sh $(BIN)/memory-forest

# The layering first (well under a second), so CI, which runs `make test`, checks it too.
test: layers
	$(BIN)/python -m pytest

# The import layering declared in pyproject.toml ([tool.importlinter]); no cache in the tree.
layers: $(STAMP)
	$(BIN)/lint-imports --no-logo --no-cache

# docs/cli.md's command reference, docs/mcp-tools.json and docs/agents.md's tool table are
# written from the catalog.
docs: $(STAMP)
	$(BIN)/python -m memory_forest.reference --write

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts

release-audit: $(STAMP)
	$(BIN)/python scripts/audit_public_release.py --root .

# Each deliberate breakage in scripts/mutation_check.py must make a test fail (a few minutes).
mutation-check: $(STAMP)
	$(BIN)/python scripts/mutation_check.py

check: lint release-audit test mutation-check

# Benchmarks print JSON; docs/benchmarks.md records the figures and how they were made.
bench: $(STAMP)
	$(BIN)/python scripts/bench_retrieval.py
	$(BIN)/python scripts/bench_scale.py --docs 10000

# retrieve, gate and remember as processes, before (03fd7bb) and after, side by side (a few
# minutes); writes its table into docs/benchmarks.md.
bench-surfaces: $(STAMP)
	$(BIN)/python scripts/bench_surfaces.py --write

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
