"""Which way of filling a device trains the papers' plan fastest, measured on the plan.

    python benchmarks/gpu_probe.py --out OUT --seconds 540 [paper.py options]

`benchmarks/gpu_probe.sh OUT SECONDS` runs this on a lent GPU. Each setting
below trains the plan's own next chunks (`benchmarks/paper.py --full
--fixed-chunks`, from the rows and backups in OUT) for a slice of at most
`--slice` seconds in a process of its own, compiling included, and stops
them at their next evaluation after a backup, so the next setting and the
next call continue from there: no step is trained twice.

| setting | what it changes |
|---|---|
| one-by-one | nothing: one chunk after the other |
| packed | chunks of different models in one compiled program (`--pack-replicas`) |
| threads | two chunks side by side in threads (`--chunks-per-device 2`) |
| processes | two chunks side by side in processes (`--processes-per-device 2`) |
| unroll | 8 steps per iteration of the compiled loop (`--unroll 8`) |
| command-buffers | the loop as one CUDA graph (`--xla-command-buffers`) |
| all | packed, unrolled and as command buffers together |

Every call adds to one table, OUT/probe.json and OUT/probe.md: a row per
setting and device. A new OUT starts from the table committed beside the
plan's rows (`--resume`), so a call measures only the settings its device
has no row for yet. The time left after the bit-for-bit check (once per
device, `check_identity`) is split among them (`slices`): each gets the same
slice, `--slice` seconds at most; where not all fit, as many as fit are
measured and the next call measures the rest. What is left then trains the
plan on with the fastest setting measured on this device so far.

Each setting's seed-steps are counted from the files (each run's step in the
rows and backups, after minus before); its wall time runs from the start of
its training (the chunks' building and compiling included; the success
thresholds of the next chunks are computed and cached before) to its last
backup; its compile time is the sum of the JAX compile events of its threads
and processes (`jax.monitoring`). `seed-steps/s` leaves the compile time out
(divided by the chunks trained side by side, which compile at once), as a
call longer than a slice pays it once; `wall` keeps it.

A call ends with exit code 1 when a part of it failed (the device could not
be named, the check or a setting's process failed or overran), after
writing the table and the backups. `--setting NAME` trains one setting
(what the driver runs in each process).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from probe_backups import pack_backups, resume  # noqa: E402
from probe_table import (  # noqa: E402
    TABLE,
    fastest,
    measured,
    read_table,
    table,
    write_table,
)

PACK = int(os.environ.get("PROBE_PACK_REPLICAS", "1000"))
UNROLL = int(os.environ.get("PROBE_UNROLL", "8"))
SETTINGS = {
    "one-by-one": ["--pack-replicas", "0"],
    "packed": ["--pack-replicas", str(PACK)],
    "threads": ["--pack-replicas", "0", "--chunks-per-device", "2"],
    "processes": ["--pack-replicas", "0", "--processes-per-device", "2"],
    "unroll": ["--pack-replicas", "0", "--unroll", str(UNROLL)],
    "command-buffers": ["--pack-replicas", "0", "--xla-command-buffers"],
    "all": [
        "--pack-replicas",
        str(PACK),
        "--unroll",
        str(UNROLL),
        "--xla-command-buffers",
    ],
}
"""Each setting's `paper.py` options."""

PARTS = "table2,fig3_hidden,table6,table5,fig3_range,table1"
"""The plan's parts in `paper.py`'s order; the NALM benchmark has its own
file and is left out."""

RESERVE = 20.0
"""Seconds kept at the end of a call for the table and the backups' files."""

STARTUP = 30.0
"""Seconds a setting's process takes beyond its slice: Python, JAX and the
package starting, the chunks built, the block of steps that reaches the next
evaluation after the slice, and the backups. Once a setting has run, the
longest such time seen in the call replaces it."""

SHORTEST_SLICE = 5.0
"""The shortest slice worth a setting's process (or `--slice`, if shorter)."""


def positions(out: Path) -> dict[tuple[str, int], int]:
    """The step each (configuration, seed) has reached in OUT's files.

    A run with a row has trained all its steps (the row's `max_iterations`);
    a run in a backup, the backup's step.
    """
    from keras_nalu._files import backup_folder
    from keras_nalu.sweeps.engines import backup_runs, read_backup
    from keras_nalu.sweeps.results import config_id, read_results

    reached = {}
    results = out / "results.csv"
    if results.is_file():
        table = read_results(results)
        for row in table[["config_id", "seed", "max_iterations"]].itertuples():
            reached[(str(row.config_id), int(row.seed))] = int(row.max_iterations)
    for backup in sorted(backup_folder(out / "results.csv").glob("*.npz")):
        try:
            runs, _ = backup_runs(backup)
            step = read_backup(backup)[0]["step"]
        except ValueError:
            continue
        for run in runs:
            reached.setdefault((config_id(run), run.seed), step)
    return reached


def trained(before: dict, after: dict) -> tuple[int, int]:
    """Seed-steps trained between two `positions`, and the runs that moved."""
    moved = {key: step - before.get(key, 0) for key, step in after.items()}
    moved = {key: steps for key, steps in moved.items() if steps > 0}
    return sum(moved.values()), len(moved)


def train_setting(name: str, slice_seconds: float, out: Path, extra: list) -> dict:
    """Trains the plan's next chunks under one setting for `slice_seconds`."""
    import paper

    from keras_nalu.sweeps.local import filling_options

    options = ["--time-limit", str(slice_seconds), *SETTINGS[name], *extra]
    args, names, groups = _plan(out, options)
    filling_options(args)  # XLA's flags, before anything starts JAX
    import jax

    compiled = []

    def listen(event, seconds, **details):
        if event.startswith("/jax/core/compile/"):
            compiled.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(listen)
    from keras_nalu.sweeps.engines import device_name

    results_path = out / "results.csv"
    for config in _next_recipes(groups, results_path, args.chunk_size):
        # simulated once per task and cached (`KERAS_NALU_CACHE_DIR`): not
        # in the slice
        config.success_threshold()
    before = positions(out)
    started = time.monotonic()
    paper.train(groups, [], names, results_path, args)
    seconds = time.monotonic() - started
    seed_steps, runs = trained(before, positions(out))
    compile_seconds = sum(compiled)
    parallel = max(args.chunks_per_device, args.processes_per_device)
    training = max(seconds - compile_seconds / parallel, 1e-9)
    return {
        "setting": name,
        "options": " ".join(SETTINGS[name]),
        "device": device_name(),
        "jax": jax.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "slice_s": slice_seconds,
        "seconds": seconds,
        "compile_s": compile_seconds,
        "seed_steps": seed_steps,
        "runs": runs,
        "seed_steps_per_second": seed_steps / training,
        "wall_seed_steps_per_second": seed_steps / seconds,
    }


def _plan(out: Path, options: list):
    """`paper.py`'s arguments for OUT's plan with `options`, its parts' names
    and its groups (`paper.sweep_groups`)."""
    import paper

    argv = ["--full", "--fixed-chunks", "--only", PARTS, "--reuse", ""]
    args = paper.parser().parse_args([*argv, "--out", str(out), *options])
    names = [part for part in args.only.split(",") if part]
    models = None if args.models is None else args.models.split(",")
    return args, names, paper.sweep_groups(names, args.seeds, args.iterations, models)


def _next_recipes(groups, results_path: Path, chunk_size: int) -> list:
    """The configurations of the plan's next part still to train, in order."""
    from keras_nalu.sweeps.runner import plan_sweep

    for _, seeds, configs in groups:
        chunks = plan_sweep(configs, seeds, results_path, chunk_size)
        if chunks:
            return [config for chunk in chunks for config, _ in chunk.parts]
    return []


CHECKED = 3
"""The most recipes `check_identity` trains, 10 replicas each."""


def check_identity(steps: int, out: Path, extra: list) -> dict:
    """Whether packing and unrolling leave every bit as training alone does here.

    The plan's next recipes (`CHECKED` at most: on the committed plan, Table
    2's NALU on ×, + and −) train `steps` steps alone, packed into one
    program, and unrolled; every variable (weights, Adam's moments, flags)
    is compared bit for bit. On a CPU they are equal
    (`tests/sweeps/test_filling.py`); on a GPU, XLA compiles another program
    for a pack, and this says whether its rounding is the same. Their
    thresholds are the plan's, cached for the settings that follow.
    """
    import dataclasses

    import jax
    import numpy as np

    from keras_nalu.sweeps.engines import device_name, replica_run
    from keras_nalu.sweeps.engines.jax import JaxReplicaRun

    args, _, groups = _plan(out, extra)
    recipes = _next_recipes(groups, out / "results.csv", args.chunk_size)[:CHECKED]
    recipes = [dataclasses.replace(config, iterations=steps) for config in recipes]
    if not recipes:
        raise SystemExit("the plan has nothing left to train: nothing to check")

    def runs(unroll=1):
        return [
            replica_run(config, list(range(10)), history=False, unroll=unroll)
            for config in recipes
        ]

    def states(trained):
        return [
            [np.asarray(a) for a in run.get_state().variables.flat()] for run in trained
        ]

    started = time.monotonic()
    alone, packed, unrolled = runs(), runs(), runs(UNROLL)
    for run in [*alone, *unrolled]:
        run.train_block(0, steps)
    JaxReplicaRun.train_together(packed, steps, {})
    reference = states(alone)

    def same(other):
        return all(
            np.array_equal(a, b)
            for mine, theirs in zip(reference, states(other))
            for a, b in zip(mine, theirs, strict=True)
        )

    return {
        "device": device_name(),
        "jax": jax.__version__,
        "steps": steps,
        "recipes": [f"{config.model} {config.operation}" for config in recipes],
        "packed": same(packed),
        f"unrolled ×{UNROLL}": same(unrolled),
        "seconds": time.monotonic() - started,
    }


def describe() -> dict:
    """The device a setting trains on (`device_name`), JAX's and Keras' versions."""
    import jax
    import keras

    from keras_nalu.sweeps.engines import device_name

    return {
        "device": device_name(),
        "jax": jax.__version__,
        "keras": keras.__version__,
        "devices": str(jax.devices()),
    }


# --- one call -------------------------------------------------------------------


def slices(left: float, ways: int, slice_seconds: float, startup: float) -> float:
    """The slice of the next of `ways` settings, `left` seconds before the end.

    Each of the settings that fit gets the same share: all of them where a
    slice of `SHORTEST_SLICE` (or `slice_seconds`, if shorter) fits each,
    else as many as fit; at most `slice_seconds`. 0: none fits.
    """
    shortest = min(slice_seconds, SHORTEST_SLICE)
    fitting = min(ways, int(left // (shortest + startup)))
    if fitting < 1:
        return 0.0
    return min(slice_seconds, left / fitting - startup)


class _Call:
    """One call's settings, each in a process of its own, against one clock."""

    def __init__(self, out: Path, seconds: float, extra: list, startup: float):
        self.out = out
        self.extra = extra
        self.ends = time.monotonic() + seconds - RESERVE
        self.startup = startup
        self.overheads = []
        self.failed = []

    def left(self) -> float:
        return self.ends - time.monotonic()

    def run(self, name: str, slice_seconds: float, timeout: float) -> dict:
        """One setting for `slice_seconds`; its record, or why it failed.

        Past `timeout`, its process gets Ctrl-C, so each chunk backs up at
        its next evaluation (processes it started are told by it, or see it
        end), and is killed 20 s later.
        """
        print(f"setting {name}: {slice_seconds:.0f} s", flush=True)
        failed = {"setting": name, "options": " ".join(SETTINGS[name])}
        failed["date"] = time.strftime("%Y-%m-%d %H:%M")
        with tempfile.TemporaryDirectory() as folder:
            record = Path(folder) / "record.json"
            command = [sys.executable, __file__, "--setting", name, "--out"]
            command += [str(self.out), "--slice", f"{slice_seconds:.0f}"]
            command += ["--record", str(record), "--", *self.extra]
            started = time.monotonic()
            process = subprocess.Popen(command)
            try:
                code = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                code = f"stopped after {timeout:.0f} s"
            if code != 0:
                self.failed.append(name)
                error = code if isinstance(code, str) else f"exit code {code}"
                return {**failed, "error": error}
            self.overheads.append(time.monotonic() - started - slice_seconds)
            return json.loads(record.read_text(encoding="utf-8"))

    def overhead(self) -> float:
        """Seconds a setting's process takes beyond its slice: the longest
        seen in this call, else the `STARTUP` asked for."""
        return max(self.overheads, default=self.startup)

    def patience(self) -> float:
        """The overhead a setting's process may take before it is stopped
        (twice its slice and this): never less than the `STARTUP` asked for,
        since another way (processes, a pack) may start slower."""
        return max(self.overhead(), self.startup)


def _run_child(arguments: list, timeout: float, what: str) -> dict:
    """This script with `arguments` in a process of its own (JAX never starts
    here); the JSON of its last line, or why it failed."""
    command = [sys.executable, __file__, *arguments]
    try:
        done = subprocess.run(command, timeout=timeout, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        return {"error": f"{what} stopped after {timeout:.0f} s"}
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no output"]
        return {"error": f"{what}: {lines[-1]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def probe(
    out: Path,
    seconds: float,
    slice_seconds: float,
    names,
    extra,
    startup: float = STARTUP,
    train_on: float | None = None,
    check_steps: int = 1000,
) -> dict:
    """Adds one call to OUT's table: the device named, its bit-for-bit check
    (`check_steps` steps, 0: none) unless the table has one, a slice for each
    of `names` not measured on it yet (`slices`), then the fastest measured
    there trains on until `seconds` are up (or for `train_on` seconds at
    most; 0: not at all). The call's record lists what failed."""
    import speed

    call = _Call(out, seconds, extra, startup)
    load_before = os.getloadavg()
    document = read_table(out / TABLE)
    record = {"date": time.strftime("%Y-%m-%d %H:%M"), "seconds": seconds}
    record["slice_s"] = slice_seconds
    document["calls"].append(record)
    found = _run_child(["--describe"], min(call.left(), 180), "naming the device")
    if "error" in found:
        print(found["error"], flush=True)
        record.update(device="?", failed=["naming the device"])
        write_table(out, document)
        return document
    device = record["device"] = found["device"]
    print(f"jax {found['jax']} {found['devices']} keras {found['keras']}", flush=True)
    checked = [c for c in document["checks"] if c.get("device") == device]
    if check_steps and not any("packed" in c for c in checked):
        timeout = min(call.left(), 180)
        print(
            f"checking packed and unrolled steps bit for bit: {check_steps} steps",
            flush=True,
        )
        arguments = ["--check", str(check_steps), "--out", str(out), "--", *extra]
        check = _run_child(arguments, timeout, "the check")
        document["checks"].append({"device": device, **check})
        if "error" in check:
            call.failed.append("the check")
    done = measured(document, device)
    todo = [name for name in names if name not in done]
    print(f"measured on {device} before: {', '.join(done) or 'nothing'}", flush=True)
    record["measured"] = []
    for index, name in enumerate(todo):
        share = slices(call.left(), len(todo) - index, slice_seconds, call.overhead())
        if not share:
            print(
                f"{', '.join(todo[index:])}: no time left; the next call measures",
                flush=True,
            )
            break
        timeout = min(call.left(), 2 * (share + call.patience()))
        row = {"device": device, **call.run(name, share, timeout)}
        document["settings"].append(row)
        if "error" not in row:
            record["measured"].append(name)
        write_table(out, document)
    record["fastest"] = fastest(document, device)
    training = call.left() - call.overhead()
    if train_on is not None:
        training = min(train_on, training)
    if training >= min(slice_seconds, SHORTEST_SLICE):
        name = record["fastest"] or "one-by-one"
        trained = call.run(name, training, call.left())
        record["trained_on"] = {"device": device, **trained}
    record["failed"] = call.failed
    record["machine"] = speed.machine(load_before)
    write_table(out, document)
    return document


def _parser() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--out", help="folder of results.csv and the probe table")
    options.add_argument("--seconds", type=float, help="the whole probe's time")
    options.add_argument(
        "--resume",
        default=str(HERE / "results" / "paper"),
        help="the committed results.csv, backups and probe table a new OUT starts from",
    )
    options.add_argument(
        "--slice", type=float, default=25.0, help="per setting, at most"
    )
    options.add_argument(
        "--startup",
        type=float,
        default=STARTUP,
        help="seconds a setting's process takes beyond its slice, until one has run",
    )
    options.add_argument(
        "--settings",
        default=",".join(SETTINGS),
        help=f"comma-separated, of {list(SETTINGS)}; empty: only train on",
    )
    options.add_argument(
        "--train-on",
        type=float,
        help="seconds the fastest setting trains on at most (default: to the "
        "end; 0: it does not)",
    )
    options.add_argument(
        "--check",
        type=int,
        default=1000,
        metavar="STEPS",
        help="steps of the bit-for-bit check of packing and unrolling (0: none)",
    )
    options.add_argument("--setting", choices=sorted(SETTINGS), help="one setting")
    options.add_argument("--record", help="with --setting: the file of its record")
    options.add_argument(
        "--describe", action="store_true", help="print the device and versions"
    )
    options.add_argument("extra", nargs="*", help="paper.py options (after --)")
    return options


def main(argv=None) -> int:
    options = _parser()
    args = options.parse_args(argv)
    if args.describe:
        print(json.dumps(describe()))
        return 0
    if args.out is None:
        options.error("--out")
    out = Path(args.out)
    if args.setting is None and args.seconds is None and args.check:
        print(json.dumps(check_identity(args.check, out, args.extra)))
        return 0
    if args.setting:
        record = train_setting(args.setting, args.slice, out, args.extra)
        Path(args.record).write_text(json.dumps(record), encoding="utf-8")
        return 0
    names = [name for name in args.settings.split(",") if name]
    unknown = sorted(set(names) - set(SETTINGS))
    if unknown or args.seconds is None:
        options.error(f"unknown settings {unknown}" if unknown else "--seconds")
    out.mkdir(parents=True, exist_ok=True)
    print(resume(out, Path(args.resume)), flush=True)
    document = probe(
        out,
        args.seconds,
        args.slice,
        names,
        args.extra,
        args.startup,
        args.train_on,
        args.check,
    )
    print(table(document))
    for tar in pack_backups(out):
        print(f"{tar.name}: {tar.stat().st_size:,} bytes")
    failed = document["calls"][-1]["failed"]
    if failed:
        print(f"gpu_probe: failed: {', '.join(failed)} (the table says why)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
