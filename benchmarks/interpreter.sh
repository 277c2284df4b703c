# The Python that benchmarks/gpu_call.sh and gpu_probe.sh run (sourced by both).
#
# $PYTHON if set; else the clone's .venv/bin/python, the interpreter of the
# other commands of benchmarks/README.md; else python3 (a lent GPU machine,
# whose JAX and Keras come from wheels on PYTHONPATH). The clone goes first on
# PYTHONPATH, so the scripts train this clone's package. `python_ready NAME`
# fails in one line (exit status 2) when that Python lacks a module the
# scripts import.
clone=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${PYTHON:-}" ]; then
    if [ -x "$clone/.venv/bin/python" ]; then
        PYTHON=$clone/.venv/bin/python
    else
        PYTHON=python3
    fi
fi
export PYTHONPATH="$clone${PYTHONPATH:+:$PYTHONPATH}"

python_ready() {
    local missing
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        echo "$1: no Python at PYTHON=$PYTHON; set PYTHON to an interpreter with JAX and Keras" >&2
        return 2
    fi
    missing=$("$PYTHON" -c "
import importlib.util
names = ('jax', 'keras', 'numpy', 'pandas', 'keras_nalu')
print(' '.join(n for n in names if importlib.util.find_spec(n) is None))
" 2>&1) || missing="nothing it can import ($missing)"
    if [ -n "$missing" ]; then
        echo "$1: $PYTHON lacks $missing; set PYTHON to an interpreter with JAX, Keras and the package's dependencies (benchmarks/README.md)" >&2
        return 2
    fi
}
