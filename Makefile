# Two commands on a fresh machine (each creates .venv and installs what it needs):
#   make train   - the main job: trains the default experiment, reports, exports
#   make test    - the test suite (what CI runs)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: train test test-slow clean bench-speed bench-table2 bench-table6 bench-fig3 bench-gates bench-mnist

$(STAMP): setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

train: $(STAMP)
	$(BIN)/keras-nalu train

test: $(STAMP)
	$(BIN)/ruff check keras_nalu tests examples benchmarks
	$(BIN)/python -m pytest -n 2 --durations=15 -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -n 2 -m slow -q

# Benchmarks (long; not tests). Each writes benchmarks/results/ and prints a table.
bench-speed: $(STAMP)
	$(BIN)/python benchmarks/speed.py --profile

bench-table2: $(STAMP)
	$(BIN)/python benchmarks/table2.py

bench-table6: $(STAMP)
	$(BIN)/python benchmarks/table6.py

bench-fig3: $(STAMP)
	$(BIN)/python benchmarks/fig3.py hidden_size
	$(BIN)/python benchmarks/fig3.py range

bench-gates: $(STAMP)
	$(BIN)/python benchmarks/gates.py

bench-mnist: $(STAMP)
	$(BIN)/python benchmarks/mnist.py

clean:
	rm -rf $(VENV) build *.egg-info
