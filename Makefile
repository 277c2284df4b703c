# Two commands on a fresh machine (each creates .venv and installs what it needs):
#   make train   - the main job: trains the default experiment, reports, exports
#   make test    - lint, the docs' strict build, the test suite, the wheel check
#                  (what CI runs)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export TF_CPP_MIN_LOG_LEVEL ?= 2
# Keeps mkdocs-material's end-of-life banner out of the build output.
export NO_MKDOCS_2_WARNING ?= 1
# The environments are installed without byte-compiling every module (pip's
# default, ~100 s of the install for TensorFlow, PyTorch, JAX and Ray); the
# modules a command imports are compiled on first use and kept under
# build/pycache, whatever PYTHONDONTWRITEBYTECODE says: the suite starts
# hundreds of Python processes, and each would compile them again.
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX ?= $(CURDIR)/build/pycache

.PHONY: train test lint test-pytorch test-without-tensorflow test-slow docs docs-serve wheel-check clean bench-speed bench-table2 bench-table6 bench-fig3 bench-gates bench-mnist

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile -e ".[test]"
	touch $(STAMP)

train: $(STAMP)
	$(BIN)/keras-nalu train --overwrite

# The core (units, regularizers, constraints, initializers, callbacks, .keras
# files, explain) again on Keras' other backends, JAX and PyTorch (both test
# dependencies). tests/test_backend_parity.py runs JAX and PyTorch in
# subprocesses from the first run (fits and .keras files across backends),
# tests/test_without_tensorflow.py JAX. The JAX pass adds the JAX engine's
# tests and the Ray cluster tests (their drivers and workers start faster
# and train faster on JAX). PyTorch gets one thread per test worker: with two
# workers on two cores a second thread only spins. tests/test_learning.py
# goes first: its longest run (35 s of eager steps on PyTorch) then trains
# while the other worker takes the rest, not alone at the end.
CORE_TESTS := tests/test_learning.py tests/layers tests/callbacks \
	tests/test_constraints.py tests/test_effective_weights.py tests/explain \
	tests/test_export.py tests/test_initializers.py tests/test_ops.py \
	tests/regularizers tests/test_serialization.py

# The environment without TensorFlow is ready a minute or more before .venv
# (pip installs on one core): its route runs on the other core meanwhile,
# then the lint and the docs' build once .venv is there. The PyTorch pass
# and the wheel check run side by side at the end: the wheel check trains on
# one core, and a pass's start and last tests leave a core idle. The test
# workers steal tests from each other (--dist worksteal): with xdist's
# default, the last tests queued for one worker ran alone while the other had
# none left (~50 s of the TensorFlow pass).
test:
	$(MAKE) --jobs=2 --output-sync=target test-without-tensorflow lint
	KERAS_BACKEND=tensorflow $(BIN)/python -m pytest -n 2 --dist worksteal --durations=15 -q
	# The cluster tests first: their minutes are not left to one worker at
	# the end while the other has nothing left to run.
	KERAS_BACKEND=jax $(BIN)/python -m pytest -n 2 --dist worksteal -q tests/sweeps/test_cluster.py \
		$(CORE_TESTS) tests/sweeps/test_jax_engine.py \
		tests/sweeps/test_seeding.py tests/sweeps/test_filling.py
	$(MAKE) --jobs=2 --output-sync=target test-pytorch wheel-check

lint: $(STAMP)
	$(BIN)/ruff check keras_nalu tests examples benchmarks docs
	$(BIN)/mkdocs build --strict --quiet

test-pytorch: $(STAMP)
	KERAS_BACKEND=torch OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist worksteal -q \
		$(CORE_TESTS)

# The route of a GPU machine that has JAX and no TensorFlow: a second
# environment with the package's dependencies minus TensorFlow (and JAX's
# extra), the package itself installed with --no-deps, an empty threshold
# cache; tests/route_without_tensorflow.py runs train, sweep, summarize,
# plot, progress, explain and the benchmarks there, at a tiny budget.
# tests/sweeps/test_reference.py (JAX alone) runs there too, away from the
# JAX pass: after other JAX tests in the same worker, an evaluation's MSE has
# differed from the reference's by 5e-9 relative (its bound is 1e-9), the
# steps themselves still equal; the route's tests train in subprocesses.
NO_TF := build/without-tensorflow
NO_TF_STAMP := $(NO_TF)/venv/.installed

$(NO_TF_STAMP): pyproject.toml setup.py
	rm -rf $(NO_TF)/venv
	$(PYTHON) -m venv $(NO_TF)/venv
	$(NO_TF)/venv/bin/pip install --quiet --upgrade pip
	$(PYTHON) tests/route_without_tensorflow.py --requirements \
	    > $(NO_TF)/requirements.txt
	$(NO_TF)/venv/bin/pip install --quiet --no-compile -r $(NO_TF)/requirements.txt
	touch $@

# The package is installed from a copy of what its build reads: pip builds it
# in the source tree otherwise, where .venv's editable install may be
# writing the same build files at the same time.
test-without-tensorflow: $(NO_TF_STAMP)
	rm -rf $(NO_TF)/source $(NO_TF)/cache
	mkdir -p $(NO_TF)/source $(NO_TF)/cache
	cp -R pyproject.toml setup.py MANIFEST.in README.md LICENSE CITATION.cff keras_nalu \
	    $(NO_TF)/source
	$(NO_TF)/venv/bin/pip install --quiet --no-compile --no-deps --force-reinstall \
	    ./$(NO_TF)/source
	env -u PYTHONPATH KERAS_BACKEND=jax KERAS_NALU_CACHE_DIR=$(CURDIR)/$(NO_TF)/cache \
	    $(NO_TF)/venv/bin/python -m pytest -q -n 2 -p no:cacheprovider \
	    --durations=5 tests/route_without_tensorflow.py tests/sweeps/test_reference.py

# The docs site (docs/, mkdocs.yml) into site/; --strict fails on a broken link.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

docs-serve: $(STAMP)
	$(BIN)/mkdocs serve

# Builds the wheel and the sdist, checks their metadata (twine), installs the
# wheel alone (--no-deps, with .venv's pip) into a new venv that reuses .venv's
# packages, and runs its `keras-nalu` entry point outside the source tree.
# This checks the wheel's contents and entry point without reinstalling
# TensorFlow; the package is found in the new venv, not the source tree.
WHEEL_CHECK := build/wheel-check
wheel-check: $(STAMP)
	rm -rf dist $(WHEEL_CHECK)
	$(BIN)/python -m build --outdir dist . > /dev/null
	$(BIN)/twine check --strict dist/*
	$(BIN)/python -m venv --without-pip $(WHEEL_CHECK)/venv
	$(BIN)/python -c "import site; print(site.getsitepackages()[0])" \
	    > "$$($(WHEEL_CHECK)/venv/bin/python -c 'import site; print(site.getsitepackages()[0])')/shared.pth"
	$(BIN)/pip --python $(WHEEL_CHECK)/venv/bin/python install --quiet --no-deps dist/*.whl
	cd $(WHEEL_CHECK) && env -u PYTHONPATH venv/bin/python -c \
	    "from importlib import metadata, util; found = util.find_spec('keras_nalu').origin; assert '/wheel-check/venv/' in found, found; print('keras_nalu', metadata.version('keras-arithmetic-units'), 'from', found)"
	cd $(WHEEL_CHECK) && env -u PYTHONPATH venv/bin/keras-nalu train --iterations 2000

test-slow: $(STAMP)
	$(BIN)/python -m pytest -n 2 -m slow -q
	KERAS_BACKEND=jax $(BIN)/python -m pytest -n 2 -m slow -q tests/sweeps/test_filling.py \
		tests/sweeps/test_cluster.py

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
	rm -rf $(VENV) build dist site *.egg-info
