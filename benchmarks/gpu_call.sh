#!/usr/bin/env bash
# One call on a borrowed GPU machine that has JAX and no TensorFlow: the speed
# table's GPU rows, then as much of Madsen & Johansen's (2020) Table 2 at the
# paper's budget as fits, backed up at the time limit so the next call resumes.
#
#   bash benchmarks/gpu_call.sh OUT SECONDS [paper.py options]
#
# OUT receives speed-R.json (one file a replica count, so a case cut short
# loses only itself), results.csv (every finished row: the committed
# benchmarks/results/paper/results.csv and this call's), backups.tar (the
# chunks in training, if any) and log.txt. SECONDS bounds the whole call. The
# call resumes from benchmarks/results/paper (its results.csv and the backups
# committed beside it); copy what comes back there and commit it:
#
#   cp OUT/results.csv benchmarks/results/paper/ && rm -rf benchmarks/results/paper/results.csv.backup
#   tar -xf OUT/backups.tar -C benchmarks/results/paper
#
# SPEED_REPLICAS="" skips the speed cases (default "1 100 1000 10000"; each gets
# SPEED_SECONDS, default 90 s, 240 s at 10,000); KERAS_BACKEND=jax. The Python
# is benchmarks/interpreter.sh's: PYTHON, else the clone's .venv, else python3
# (a lent machine's, with Keras and JAX from wheels on PYTHONPATH). Every step
# runs even when one before it failed; the exit status is then 1 (2 when the
# Python lacks JAX or Keras), and log.txt says which.
set -uo pipefail
OUT=${1:?OUT folder}
SECONDS_LEFT=${2:?seconds for the whole call}
shift 2
started=$(date +%s)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/interpreter.sh"
mkdir -p "$OUT" || exit
resume=${RESUME:-$here/results/paper}
if [ -f "$resume/results.csv" ] && [ ! -f "$OUT/results.csv" ]; then
    cp "$resume/results.csv" "$OUT/"
    [ -d "$resume/results.csv.backup" ] && cp -r "$resume/results.csv.backup" "$OUT/"
fi
export KERAS_BACKEND=jax TF_CPP_MIN_LOG_LEVEL=3 PYTHONUNBUFFERED=1
export KERAS_NALU_CACHE_DIR=${KERAS_NALU_CACHE_DIR:-$OUT/cache}

call() {
    local failed=0 rc left limit
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
    python_ready gpu_call.sh || return
    "$PYTHON" -c "import jax, keras; print('jax', jax.__version__, jax.devices(), 'keras', keras.__version__)" || return
    "$PYTHON" -c "import importlib.util as u; print('tensorflow installed:', u.find_spec('tensorflow') is not None)"

    # 1. the speed table: the JAX engine, one process a replica count
    for R in ${SPEED_REPLICAS-1 100 1000 10000}; do
        # 10,000 replicas build their run three times (about 10 s each on a
        # CPU) and train 10⁴ × the steps of one seed
        limit=${SPEED_SECONDS:-$([ "$R" -ge 10000 ] && echo 240 || echo 90)}
        timeout "$limit" "$PYTHON" "$here/speed.py" --engines jax \
            --replicas "$R" --repeats 1 --steps "${SPEED_STEPS:-30000}" \
            --seed-steps "${SPEED_SEED_STEPS:-500000}" --out "$OUT/speed-$R.json"
        rc=$?
        echo "speed R=$R: rc $rc after $(( $(date +%s) - started )) s"
        [ "$rc" -eq 0 ] || failed=1
    done

    # 2. the paper's rows, stopped (after a backup) where the time runs out
    left=$(( SECONDS_LEFT - ($(date +%s) - started) - 25 ))
    if [ "$left" -gt 30 ]; then
        timeout $(( left + 15 )) "$PYTHON" "$here/paper.py" --full --only table2 \
            --fixed-chunks --time-limit "$left" --out "$OUT" "$@"
        rc=$?
        echo "paper: rc $rc after $(( $(date +%s) - started )) s"
        [ "$rc" -eq 0 ] || failed=1
    fi
    if [ -d "$OUT/results.csv.backup" ]; then
        tar -cf "$OUT/backups.tar" -C "$OUT" results.csv.backup && rm -rf "$OUT/results.csv.backup" || failed=1
    fi
    echo "call: $(( $(date +%s) - started )) s, rc $failed"
    return "$failed"
}

call "$@" 2>&1 | tee "$OUT/log.txt"
rc=$?
rm -rf "$OUT/cache"
exit "$rc"
