"""Which way of filling a GPU trains the papers' plan fastest, measured on the plan.

    python benchmarks/gpu_probe.py --out OUT --seconds 540 [paper.py options]

`benchmarks/gpu_probe.sh OUT SECONDS` runs this on a lent GPU. Each setting
below trains the plan's own next chunks (`benchmarks/paper.py --full
--fixed-chunks`, from the rows and backups in OUT) for a slice of
`--slice` seconds in a process of its own, compiling included, and stops
them at their next evaluation after a backup, so the next setting and the
next call continue from there: no step is trained twice. Then the fastest
setting trains on until the time is up.

| setting | what it changes |
|---|---|
| one-by-one | nothing: one chunk after the other |
| packed | chunks of different models in one compiled program (`--pack-replicas`) |
| threads | two chunks side by side in threads (`--chunks-per-device 2`) |
| processes | two chunks side by side in processes (`--processes-per-device 2`) |
| unroll | 8 steps per iteration of the compiled loop (`--unroll 8`) |
| command-buffers | the loop as one CUDA graph (`--xla-command-buffers`) |
| all | packed, unrolled and as command buffers together |

Each setting's seed-steps are counted from the files (each run's step in the
rows and backups, after minus before); its wall time runs from the start of
its training (the chunks' building and compiling included; the success
thresholds of the next chunks are computed and cached before) to its last
backup; its compile time is the sum of the JAX compile events of its threads
and processes (`jax.monitoring`). `seed-steps/s` leaves the compile time out
(divided by the chunks trained side by side, which compile at once), as a
call longer than a slice pays it once; `wall` keeps it.

Writes OUT/probe.json (every setting, the device, JAX's version) and
OUT/probe.md (the table), beside results.csv. `--setting NAME` trains one
setting (what the driver runs in each process).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

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
evaluation after the slice, and the backups."""


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

    argv = ["--full", "--fixed-chunks", "--only", PARTS, "--reuse", ""]
    argv += ["--time-limit", str(slice_seconds), "--out", str(out)]
    args = paper.parser().parse_args([*argv, *SETTINGS[name], *extra])
    filling_options(args)  # XLA's flags, before anything starts JAX
    import jax

    compiled = []

    def listen(event, seconds, **details):
        if event.startswith("/jax/core/compile/"):
            compiled.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(listen)
    from keras_nalu.sweeps.engines import device_name

    names = [part for part in args.only.split(",") if part]
    models = None if args.models is None else args.models.split(",")
    groups = paper.sweep_groups(names, args.seeds, args.iterations, models)
    results_path = out / "results.csv"
    _warm_thresholds(groups, results_path, args.chunk_size)
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
        "slice_s": slice_seconds,
        "seconds": seconds,
        "compile_s": compile_seconds,
        "seed_steps": seed_steps,
        "runs": runs,
        "seed_steps_per_second": seed_steps / training,
        "wall_seed_steps_per_second": seed_steps / seconds,
    }


CHECKED = (("nalu", "mul"), ("nac", "add"), ("nau", "sub"))
"""The recipes `check_identity` trains, 10 replicas each (Table 2's)."""


def check_identity(steps: int) -> dict:
    """Whether packing and unrolling leave every bit as training alone does here.

    Three of Table 2's recipes train `steps` steps alone, packed into one
    program, and unrolled; every variable (weights, Adam's moments, flags)
    is compared bit for bit. On a CPU they are equal
    (`tests/sweeps/test_filling.py`); on a GPU, XLA compiles another program
    for a pack, and this says whether its rounding is the same.
    """
    import jax
    import numpy as np

    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.sweeps.engines import device_name, replica_run
    from keras_nalu.sweeps.engines.packed import PackedBlocks

    def runs(unroll=1):
        return [
            replica_run(
                ExperimentConfig(model=model, operation=operation, iterations=steps),
                list(range(10)),
                history=False,
                unroll=unroll,
            )
            for model, operation in CHECKED
        ]

    def states(trained):
        return [
            [np.asarray(a) for a in run.get_state().variables.flat()] for run in trained
        ]

    started = time.monotonic()
    alone, packed, unrolled = runs(), runs(), runs(UNROLL)
    for run in [*alone, *unrolled]:
        run.train_block(0, steps)
    PackedBlocks().train(packed, steps)
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
        "recipes": [f"{model} {operation}" for model, operation in CHECKED],
        "packed": same(packed),
        f"unrolled ×{UNROLL}": same(unrolled),
        "seconds": time.monotonic() - started,
    }


def _warm_thresholds(groups, results_path: Path, chunk_size: int) -> None:
    """The success thresholds of the next part's chunks, before the clock runs.

    They are simulated once per task and cached (`KERAS_NALU_CACHE_DIR`);
    the first setting would otherwise spend part of its slice on them.
    """
    from keras_nalu.sweeps.runner import plan_sweep

    for _, seeds, configs in groups:
        chunks = plan_sweep(configs, seeds, results_path, chunk_size)
        for chunk in chunks:
            for config, _ in chunk.parts:
                config.success_threshold()
        if chunks:
            return


def _record(out: Path, record: dict) -> None:
    path = out / "probe.json"
    probe = json.loads(path.read_text()) if path.is_file() else {"settings": []}
    probe["settings"].append(record)
    path.write_text(json.dumps(probe, indent=2) + "\n", encoding="utf-8")


def table(probe: dict) -> str:
    """The probe's Markdown table."""
    rows = probe["settings"]
    device = next((r["device"] for r in rows if "device" in r), "?")
    version = next((r["jax"] for r in rows if "jax" in r), "?")
    machine = probe.get("machine", {})
    load = ""
    if machine:
        load = (
            f"; load average {machine['load_average_before'][0]:.1f} before, "
            f"{machine['load_average_after'][0]:.1f} after, on {machine['cpus']} "
            "CPUs"
        )
    lines = [
        f"Device: {device}; JAX {version}; {probe.get('date', '')}; slices of "
        f"{probe.get('slice_s', '?')} s (`benchmarks/gpu_probe.sh`){load}.",
        "",
        "| setting | options | runs | seed-steps | wall s | compile s "
        "| seed-steps/s | wall seed-steps/s |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for row in rows:
        if "seed_steps" not in row:
            lines.append(
                f"| {row['setting']} | {row['options']} | failed: "
                f"{row.get('error', '')} | | | | | |"
            )
            continue
        lines.append(
            f"| {row['setting']} | {row['options']} | {row['runs']} | "
            f"{row['seed_steps']:,} | {row['seconds']:.1f} | "
            f"{row['compile_s']:.1f} | {row['seed_steps_per_second']:,.0f} | "
            f"{row['wall_seed_steps_per_second']:,.0f} |"
        )
    check = probe.get("identity")
    if check and "packed" in check:
        verdicts = [
            f"{name} {'yes' if check[name] else 'NO'}"
            for name in check
            if name == "packed" or name.startswith("unrolled")
        ]
        lines += [
            "",
            f"Every bit as trained alone on this device ({', '.join(check['recipes'])}"
            f", 10 replicas each, {check['steps']:,} steps): "
            + "; ".join(verdicts)
            + ".",
        ]
    elif check:
        lines += ["", f"The bit-for-bit check failed: {check.get('error')}."]
    if any(row["setting"].endswith("(trained on)") for row in rows):
        lines += ["", f"The fastest, {probe['fastest']}, trained on to the end."]
    elif probe.get("fastest"):
        lines += ["", f"The fastest: {probe['fastest']}; it did not train on."]
    return "\n".join(lines) + "\n"


def _run_setting(
    name: str, slice_seconds: float, timeout: float, out: Path, extra: list
) -> dict:
    """One setting in a process of its own; its record, or why it failed.

    Past `timeout`, the setting's process gets Ctrl-C, so each chunk backs up
    at its next evaluation (processes it started are told by it, or see it
    end), and is killed 20 s later.
    """
    command = [sys.executable, __file__, "--setting", name, "--out", str(out)]
    command += ["--slice", f"{slice_seconds:.0f}", "--", *extra]
    print(f"setting {name}: {slice_seconds:.0f} s", flush=True)
    failed = {"setting": name, "options": " ".join(SETTINGS[name])}
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
        return {**failed, "error": f"stopped after {timeout:.0f} s"}
    if code != 0:
        return {**failed, "error": f"exit code {code}"}
    return json.loads((out / "probe.json").read_text())["settings"][-1]


def _run_check(steps: int, timeout: float, out: Path) -> dict:
    """`check_identity` in a process of its own (JAX never starts here)."""
    command = [sys.executable, __file__, "--out", str(out), "--check", str(steps)]
    print(f"checking packed and unrolled steps bit for bit: {steps} steps", flush=True)
    try:
        done = subprocess.run(command, timeout=timeout, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {timeout:.0f} s"}
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
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
    """The bit-for-bit check (`check_steps` steps; 0: none), every setting for
    a slice, then the fastest until `seconds` are up (or for `train_on`
    seconds at most)."""
    import speed

    ends = time.monotonic() + seconds - RESERVE
    load_before = os.getloadavg()
    (out / "probe.json").unlink(missing_ok=True)
    identity = None
    if check_steps:
        identity = _run_check(check_steps, min(ends - time.monotonic(), 180), out)
    records = []
    for name in names:
        left = ends - time.monotonic()
        if left < slice_seconds + startup:
            print(f"setting {name}: no time left", flush=True)
            break
        timeout = min(left, 2 * (slice_seconds + startup))
        record = _run_setting(name, slice_seconds, timeout, out, extra)
        if "error" in record:
            _record(out, record)
        records.append(record)
    measured = [r for r in records if r.get("seed_steps")]
    fastest = max(measured, key=lambda r: r["seed_steps_per_second"], default=None)
    name = fastest["setting"] if fastest else "one-by-one"
    left = ends - time.monotonic()
    if train_on != 0 and left > slice_seconds + startup:
        training = left - startup if train_on is None else min(train_on, left - startup)
        record = _run_setting(name, training, left, out, extra)
        if "error" not in record:
            document = json.loads((out / "probe.json").read_text())
            document["settings"][-1]["setting"] += " (trained on)"
            (out / "probe.json").write_text(json.dumps(document, indent=2) + "\n")
        else:
            _record(out, {**record, "setting": f"{name} (trained on)"})
    path = out / "probe.json"
    document = json.loads(path.read_text()) if path.is_file() else {"settings": []}
    document.update(
        identity=identity,
        machine=speed.machine(load_before),
        date=time.strftime("%Y-%m-%d %H:%M"),
        slice_s=slice_seconds,
        fastest=name,
        seconds=seconds,
    )
    text = json.dumps(document, indent=2) + "\n"
    (out / "probe.json").write_text(text, encoding="utf-8")
    (out / "probe.md").write_text(table(document), encoding="utf-8")
    return document


TAR_LIMIT = 15 * 2**20
"""The most bytes of backups one tar file holds (the files that come back from a
lent machine may be at most 16 MB each)."""


def pack_backups(out: Path, limit: int = TAR_LIMIT) -> list[Path]:
    """OUT/results.csv.backup/ into `backups.tar`, `backups-2.tar`, ..., each
    under `limit` bytes unless one backup alone is larger; the folder goes."""
    import shutil
    import tarfile

    from keras_nalu._files import backup_folder

    folder = backup_folder(out / "results.csv")
    files = sorted(folder.glob("*.npz")) if folder.is_dir() else []
    groups, size = [[]], 0
    for file in files:
        if groups[-1] and size + file.stat().st_size > limit:
            groups.append([])
            size = 0
        groups[-1].append(file)
        size += file.stat().st_size
    tars = []
    for index, group in enumerate(g for g in groups if g):
        tar = out / ("backups.tar" if index == 0 else f"backups-{index + 1}.tar")
        with tarfile.open(tar, "w") as archive:
            for file in group:
                archive.add(file, arcname=f"{folder.name}/{file.name}")
        tars.append(tar)
    shutil.rmtree(folder, ignore_errors=True)
    return tars


def resume(out: Path, committed: Path) -> str:
    """OUT's starting point: an earlier call's files in OUT, else `committed`.

    An earlier call's backups come back out of their tar files; a new OUT
    gets the committed `results.csv` and its backups.
    """
    import shutil

    from keras_nalu._files import backup_folder

    if list(out.glob("backups*.tar")):
        names = [tar.name for tar in unpack_backups(out)]
        return f"continuing {', '.join(names)} in {out}"
    if (out / "results.csv").exists() or backup_folder(out / "results.csv").exists():
        return f"continuing {out}"
    if (committed / "results.csv").is_file():
        shutil.copy(committed / "results.csv", out)
    if backup_folder(committed / "results.csv").is_dir():
        shutil.copytree(
            backup_folder(committed / "results.csv"), backup_folder(out / "results.csv")
        )
    return f"starting from {committed}"


def unpack_backups(out: Path) -> list[Path]:
    """The `pack_backups` files of an earlier call back into OUT (then removed)."""
    import tarfile

    tars = sorted(out.glob("backups*.tar"))
    for tar in tars:
        with tarfile.open(tar) as archive:
            archive.extractall(out, filter="data")
        tar.unlink()
    return tars


def main(argv=None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--out", required=True, help="folder of results.csv")
    options.add_argument("--seconds", type=float, help="the whole probe's time")
    options.add_argument(
        "--resume",
        default=str(HERE / "results" / "paper"),
        help="the committed results.csv and backups a new OUT starts from",
    )
    options.add_argument("--slice", type=float, default=25.0, help="per setting")
    options.add_argument(
        "--startup",
        type=float,
        default=STARTUP,
        help="seconds a setting's process takes beyond its slice",
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
    options.add_argument("extra", nargs="*", help="paper.py options (after --)")
    args = options.parse_args(argv)
    out = Path(args.out)
    if args.setting is None and args.seconds is None and args.check:
        print(json.dumps(check_identity(args.check)))
        return 0
    if args.setting:
        _record(out, train_setting(args.setting, args.slice, out, args.extra))
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
