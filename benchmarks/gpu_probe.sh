#!/usr/bin/env bash
# One call on a lent GPU that measures how to fill it, on the papers' own plan:
# each way (chunks one by one, packed into one program, threads, processes, an
# unrolled loop, XLA's command buffers, all together) trains the plan's next
# chunks for a slice, compiling included, and backs them up; the fastest then
# trains on until SECONDS are up. No step is trained twice
# (benchmarks/gpu_probe.py says how each way is measured).
#
#   bash benchmarks/gpu_probe.sh OUT SECONDS [paper.py options]
#
# OUT receives results.csv (the committed benchmarks/results/paper/results.csv
# and this call's rows), backups.tar (the chunks in training; backups-2.tar ...
# past 15 MB), probe.json and probe.md (the table of the ways measured so far,
# a row per way and device, the device's check, a line per call) and log.txt:
# at most 8 files. SECONDS bounds the whole call: the ways the device has no
# row for yet share it, each a slice, and the fastest trains on for what is
# left. A new OUT starts from benchmarks/results/paper (RESUME= another
# folder): its rows, backups and probe table; an OUT of an earlier call
# continues from its own files. Copy what comes back to
# benchmarks/results/paper and commit it:
#
#   cp OUT/results.csv OUT/probe.json OUT/probe.md benchmarks/results/paper/
#   rm -rf benchmarks/results/paper/results.csv.backup
#   for tar in OUT/backups*.tar; do tar -xf "$tar" -C benchmarks/results/paper; done
#
# PROBE_SLICE (default 25) is each way's slice in seconds at most,
# PROBE_SETTINGS (comma-separated; empty: none, only training on) the ways,
# PROBE_STARTUP (default 30) the seconds a way's process takes beyond its
# slice until one has run, PROBE_TRAIN_ON the most seconds the fastest trains
# on (default: to the end; 0: none), PROBE_CHECK the steps of the check that
# packed and unrolled steps leave every bit as steps alone do on this device
# (default 1000; 0: no check; once per device). The Python is
# benchmarks/interpreter.sh's: PYTHON, else the clone's .venv, else python3.
# The exit status is the probe's: not 0 when a part of it failed (the table
# and log.txt say which), 2 when the Python lacks JAX or Keras.
set -uo pipefail
: "${1:?OUT folder}" "${2:?seconds for the whole call}"
here=$(cd "$(dirname "$0")" && pwd)
source "$here/interpreter.sh"
mkdir -p "$1" || exit
export KERAS_BACKEND=jax TF_CPP_MIN_LOG_LEVEL=3 PYTHONUNBUFFERED=1
cache=$(mktemp -d)  # the thresholds, outside OUT
export KERAS_NALU_CACHE_DIR=${KERAS_NALU_CACHE_DIR:-$cache}

probe() {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
    python_ready gpu_probe.sh || return
    # the seconds count from here: the line above takes a few of RESERVE's
    "$PYTHON" "$here/gpu_probe.py" --out "$1" --seconds "$2" \
        --resume "${RESUME:-$here/results/paper}" --slice "${PROBE_SLICE:-25}" \
        --startup "${PROBE_STARTUP:-30}" ${PROBE_TRAIN_ON:+--train-on "$PROBE_TRAIN_ON"} \
        --check "${PROBE_CHECK:-1000}" \
        --settings "${PROBE_SETTINGS-one-by-one,packed,threads,processes,unroll,command-buffers,all}" \
        -- "${@:3}"
    local rc=$?
    echo "probe: rc $rc"
    return "$rc"
}

probe "$@" 2>&1 | tee "$1/log.txt"
rc=$?
rm -rf "$cache"
exit "$rc"
