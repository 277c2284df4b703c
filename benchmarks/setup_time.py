"""Seconds to build a replica run: from `replica_run(...)` to its return.

The speed table's configuration (NMU ×, 100 inputs, evaluation every 1,000
steps) with R seeds: the template model, every replica's starting weights,
thresholds, validation and test targets, and the engine's state. Nothing
is trained. A first, small run is built and dropped before the timed ones
(imports, the threshold cache).

Usage:

    KERAS_BACKEND=jax .venv/bin/python benchmarks/setup_time.py 100 1000 10000

Prints one line per replica count.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from speed import _config  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("replicas", nargs="+", type=int, help="replica counts")
    args = parser.parse_args(argv)
    from keras_nalu.sweeps.engines import replica_run

    replica_run(_config(iterations=1000), [0, 1])
    for count in args.replicas:
        started = time.perf_counter()
        run = replica_run(_config(iterations=1000), list(range(count)))
        print(f"R={count}: {time.perf_counter() - started:.2f} s", flush=True)
        del run
    return 0


if __name__ == "__main__":
    sys.exit(main())
