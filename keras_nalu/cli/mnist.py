"""`keras-nalu mnist`: sequential MNIST judged against the exact-unit bound."""

import dataclasses
import json
import sys

from keras_nalu.cli.checks import refuse_backend_without_fit
from keras_nalu.cli.parsing import add_config_flags

HELP = "sequential MNIST sum / product / count with the exact-unit bound"
DESCRIPTION = (
    "Train recurrent arithmetic units on sequences of MNIST digits "
    "(Madsen & Johansen 2020, §4.2, App. D; Trask et al. 2018, §4.2); "
    "judge each length against the MSE bound of the exact-unit baseline."
)

#: The fields of a record `keras-nalu mnist` prints per run.
_PRINTED = (
    "name",
    "best_step",
    "validation_mse",
    "test_lengths",
    "test_mse",
    "test_mae",
    "digit_accuracy",
    "bound",
    "success",
    "kernel",
    "wall_time",
)


def add_flags(mnist) -> None:
    from keras_nalu.experiments.mnist import MnistConfig
    from keras_nalu.tasks.mnist import OPERATIONS as MNIST_OPERATIONS
    from keras_nalu.tasks.mnist import SOURCES

    add_config_flags(
        mnist,
        MnistConfig,
        # Flags of their own below: a list of units and seeds, lengths as
        # ranges, the data folder's help.
        skip=("unit", "seed", "test_lengths", "data_dir"),
        choices={"operation": list(MNIST_OPERATIONS), "source": list(SOURCES)},
    )
    mnist.add_argument("--units", default=None, help="comma list, e.g. nmu,nac")
    mnist.flag_names["unit"] = "--units"  # each of them is a run's unit
    mnist.add_argument("--seeds", default="0", help="e.g. 0-4 or 0,3")
    mnist.add_argument(
        "--baseline-seeds",
        type=int,
        default=3,
        help="exact-unit runs that set the bound (>= 2; 0: no bound)",
    )
    mnist.add_argument(
        "--test-lengths", default=None, help="e.g. 1-20 or 1,10,100,1000"
    )
    mnist.add_argument("--data-dir", default=None, help="prepared tfds folder")
    mnist.add_argument("--output-dir", default="runs", help="records and plot")
    mnist.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the records and plot of earlier runs in --output-dir",
    )
    mnist.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args) -> int:
    from keras_nalu._files import write_record
    from keras_nalu.experiments.mnist import mae_table, plot_success_rate, run_study

    # Its data pipeline and its evaluation per length are TensorFlow's.
    refuse_backend_without_fit("mnist", ("tensorflow",))
    configs, baselines = _configs(args)
    operation = configs[0].operation
    several = len({config.seed for config in configs}) > 1
    output = _check_files(args, configs, baselines, with_plot=several)
    study = run_study(
        configs,
        baselines,
        verbose=not args.quiet,
        on_record=lambda config, record: write_record(
            record, output / config.name / "result.json"
        ),
    )
    summary = study.summary()
    write_record(summary, output / f"mnist-{operation}.json")
    if several and study.bound is not None:
        plot = plot_success_rate(study.runs, output / f"mnist-{operation}.png")
        print(f"wrote plot: {plot}", file=sys.stderr)
    runs = [{key: run.get(key) for key in _PRINTED} for run in study.runs]
    del summary["baselines"]
    print(json.dumps(summary | {"runs": runs}, indent=2))
    if operation == "sum":
        print(mae_table(study.runs))
    return 0


def _configs(args):
    """`(configs, baselines)`: the runs to judge and the exact-unit runs."""
    from keras_nalu.experiments.mnist import MnistConfig
    from keras_nalu.sweeps.grid import parse_seeds
    from keras_nalu.tasks.mnist import parse_lengths

    fields = {f.name for f in dataclasses.fields(MnistConfig)}
    common = {k: v for k, v in vars(args).items() if k in fields}
    common["data_dir"] = args.data_dir
    if args.test_lengths is not None:
        common["test_lengths"] = parse_lengths(
            args.test_lengths, owner="mnist --test-lengths"
        )
    seeds = parse_seeds(args.seeds, owner="mnist --seeds")
    if args.baseline_seeds == 1 or args.baseline_seeds < 0:
        raise ValueError(
            "The bound needs --baseline-seeds >= 2 (or 0 for no bound). "
            f"Received: --baseline-seeds {args.baseline_seeds}"
        )
    units = args.units.split(",") if args.units else [None]
    configs = [
        MnistConfig(unit=unit, seed=seed, **common) for unit in units for seed in seeds
    ]
    baselines = [
        MnistConfig(unit="exact", seed=seed, **common)
        for seed in range(args.baseline_seeds)
    ]
    names = [config.name for config in (*baselines, *configs)]
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        raise ValueError(
            f"--units {args.units!r} asks for the run {twice} twice (the bound's "
            f"baseline runs are the exact unit, seeds 0 to {args.baseline_seeds - 1}"
            "); name each unit once."
        )
    return configs, baselines


def _check_files(args, configs, baselines, with_plot: bool):
    """The output folder; every file of the command checked before training.

    None that exists is replaced without --overwrite.
    """
    from keras_nalu._files import check_output_folder

    operation = configs[0].operation
    output = check_output_folder(args.output_dir, "--output-dir")
    files = [output / c.name / "result.json" for c in (*baselines, *configs)]
    files.append(output / f"mnist-{operation}.json")
    if with_plot and baselines:
        files.append(output / f"mnist-{operation}.png")
    _refuse_existing(files, "--output-dir", args.output_dir, args.overwrite)
    return output


def _refuse_existing(files, flag: str, value, overwrite: bool) -> None:
    """One line, before any work, where a file to write exists already.

    With `overwrite` the files are replaced; a folder in the place of a file
    is refused either way.
    """
    for path in files:
        if path.is_dir() or any(folder.is_file() for folder in path.parents):
            raise ValueError(
                f"{flag} {str(value)!r}: {path} cannot be written (a folder, or "
                "under a file, is in its place); pass another folder."
            )
    existing = [path for path in files if path.exists()]
    if existing and not overwrite:
        more = f" and {len(existing) - 1} more" if len(existing) > 1 else ""
        raise ValueError(
            f"{flag} {str(value)!r}: {existing[0]}{more} exist; pass --overwrite "
            f"to replace them, or another {flag}."
        )
