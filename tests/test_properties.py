"""Property tests of every parser and reader of user input (hypothesis).

Ranges, grids, seed lists, results CSVs, sweep backups and config fields:
random and mutated input gives a result or one clear error (a `ValueError`
of one line), never another exception, a hang or a changed input file. The
`summarize`, `plot` and `progress` commands get the same: files of several
configurations and engines, a run listed twice, a file cut anywhere.

The example count is bounded and the examples are derived from each test's
name (`derandomize`), so `make test` stays fast and gives the same verdict on
every run; `HYPOTHESIS_PROFILE=thorough` draws 2,000 fresh examples a test.
"""

import io
import json
import math
import os
import shutil
import string
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from keras_nalu.experiments import ExperimentConfig, check_run_name
from keras_nalu.reports.summary import REQUIRED_COLUMNS, load_results
from keras_nalu.sweeps.engines import read_backup, replica_run
from keras_nalu.sweeps.grid import (
    grid_configs,
    load_grid_file,
    normalize_grid,
    parse_grid,
    parse_seeds,
)
from keras_nalu.sweeps.results import (
    CONFIG_FIELDS,
    RESULT_COLUMNS,
    config_id,
    read_results,
    record_row,
)
from keras_nalu.tasks import ArithmeticTask, Range
from tests.helpers import as_format_1, load_backup_state, save_backup_state

EXAMPLE_RESULTS = (
    Path(__file__).parents[1] / "examples" / "results" / "example_results.csv"
)

settings.register_profile(
    "default",
    max_examples=50,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=2_000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def one_clear_error(call, *args, **kwargs):
    """`call(...)`, or None if it raised a one-line, non-empty ValueError."""
    try:
        return call(*args, **kwargs)
    except ValueError as error:
        message = str(error)
        assert message.strip(), f"an empty message from {call.__name__}"
        assert "\n" not in message.strip(), f"a multi-line message: {message!r}"
        return None


def mutate(data: st.DataObject, content: bytes) -> bytes:
    """`content` with a few random bytes replaced, inserted, deleted or cut."""
    content = bytearray(content)
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        edit = data.draw(st.sampled_from(["replace", "insert", "delete", "cut"]))
        where = data.draw(st.integers(0, max(len(content) - 1, 0)), label="where")
        byte = data.draw(st.sampled_from(list(b',"\n\r\x00x0.-;[]') + [0xFF]))
        if edit == "replace" and content:
            content[where] = byte
        elif edit == "insert":
            content.insert(where, byte)
        elif edit == "delete" and content:
            del content[where]
        elif edit == "cut":
            del content[where:]
    return bytes(content)


# -- ranges ---------------------------------------------------------------------

bounds = st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 3))


@st.composite
def ranges(draw):
    """A valid range of 1 to 3 parts (disjoint, possibly touching)."""
    points = sorted(draw(st.sets(bounds, min_size=2, max_size=6)))
    pairs = list(zip(points[::2], points[1::2]))
    keep = draw(st.lists(st.sampled_from(pairs), min_size=1, unique=True))
    return Range(tuple(keep))


RANGE_TEXT = st.text(alphabet="U[](),;-.0123456789 ∪u|+e", max_size=30)


@given(st.one_of(RANGE_TEXT, st.text(max_size=30)))
def test_any_text_is_a_range_or_one_clear_error(text):
    parsed = one_clear_error(Range.parse, text, name="interpolation_range")
    if parsed is not None:
        assert Range.parse(str(parsed)) == parsed
        assert all(lo < hi for lo, hi in parsed.parts)


@given(ranges(), st.sampled_from(["str", "config", "semicolons", "brackets"]))
def test_every_spelling_of_a_range_reads_back(value, spelling):
    if spelling == "str":
        text = str(value)
    elif spelling == "config":
        text = value.to_config()
    elif spelling == "semicolons":
        text = ";".join(f"{lo!r},{hi!r}" for lo, hi in value.parts)
    else:
        text = "u".join(f"[{lo!r},{hi!r}]" for lo, hi in value.parts)
    assert Range.parse(text) == value


@given(ranges(), ranges())
def test_overlap_is_what_both_ranges_share(first, second):
    shared = first.overlap(second)
    assert shared == second.overlap(first)
    assert first.overlap(first) == first.parts
    for lo, hi in shared:
        middle = np.array([(lo + hi) / 2])
        assert first.contains(middle).all() and second.contains(middle).all()
    # Outside the shared intervals, no point of positive width is in both.
    edges = sorted({b for part in first.parts + second.parts for b in part})
    for lo, hi in zip(edges, edges[1:]):
        middle = np.array([(lo + hi) / 2])
        in_both = first.contains(middle).all() and second.contains(middle).all()
        assert in_both == any(a <= middle[0] <= b for a, b in shared)


@given(st.data(), ranges())
def test_a_mutated_range_is_a_range_or_one_clear_error(data, value):
    text = mutate(data, str(value).encode()).decode("utf-8", errors="replace")
    one_clear_error(Range.parse, text, name="extrapolation_range")


# -- grids ----------------------------------------------------------------------

FIELDS = [name for name in CONFIG_FIELDS if name != "seed"]
grid_values = st.one_of(
    st.sampled_from(["nmu", "nau", "mul", "none", "U[1,2]", "2", "1e-3", "true"]),
    st.text(alphabet=string.ascii_letters + string.digits + "[],.:-", max_size=12),
)


@given(
    st.lists(
        st.one_of(
            st.builds(
                lambda keys, values: f"{':'.join(keys)}={','.join(values)}",
                st.lists(st.sampled_from(FIELDS + ["seed", "colour"]), min_size=1),
                st.lists(grid_values, min_size=1, max_size=3),
            ),
            st.text(max_size=20),
        ),
        max_size=4,
    )
)
def test_grid_items_are_a_grid_or_one_clear_error(items):
    grid = one_clear_error(parse_grid, items)
    if grid is not None:
        one_clear_error(grid_configs, grid)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats() | grid_values,
    lambda children: st.lists(children, max_size=3),
    max_leaves=6,
)


@given(st.dictionaries(st.sampled_from(FIELDS + ["seed", "x:y"]), json_values))
def test_grid_objects_are_a_grid_or_one_clear_error(grid):
    normalized = one_clear_error(normalize_grid, grid)
    if normalized is not None:
        one_clear_error(grid_configs, normalized)


@given(st.one_of(st.binary(max_size=60), json_values.map(json.dumps).map(str.encode)))
def test_grid_files_are_a_grid_or_one_clear_error(tmp_path, content):
    path = tmp_path / "grid.json"
    path.write_bytes(content)
    one_clear_error(load_grid_file, path)
    assert path.read_bytes() == content


# -- seed lists -----------------------------------------------------------------


@given(st.text(alphabet="0123456789-, x", max_size=20))
def test_seed_text_is_distinct_seeds_or_one_clear_error(text):
    seeds = one_clear_error(parse_seeds, text)
    if seeds is not None:
        assert seeds and len(set(seeds)) == len(seeds) and min(seeds) >= 0


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 3)), min_size=1))
def test_seed_ranges_read_back(pieces):
    spec = ",".join(
        f"{start}-{start + width}" if width else str(start) for start, width in pieces
    )
    expected = [
        seed for start, width in pieces for seed in range(start, start + width + 1)
    ]
    assume(len(set(expected)) == len(expected))
    assert parse_seeds(spec) == expected


def test_a_huge_seed_range_is_refused_at_once():
    with pytest.raises(ValueError, match="at most 1,000,000 seeds"):
        parse_seeds("0-99999999999999")


# -- config fields ----------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(),
    st.text(max_size=8),
    st.sampled_from(["U[1,2]", "U[2,6]", "nmu", "sgd", "mul", "-1", "1e9"]),
)


@given(st.dictionaries(st.sampled_from(CONFIG_FIELDS), scalars, max_size=3))
def test_config_fields_are_a_config_or_one_clear_error(fields):
    config = one_clear_error(ExperimentConfig, **fields)
    if config is not None:
        assert check_run_name(config.name) == config.name
        assert ExperimentConfig(**config.to_config()) == config


TASK_FIELDS = [
    "operation",
    "input_size",
    "subset_ratio",
    "overlap_ratio",
    "num_subsets",
    "interpolation_range",
    "extrapolation_range",
    "batch_size",
    "seed",
]


@given(st.dictionaries(st.sampled_from(TASK_FIELDS), scalars, max_size=3))
def test_task_fields_are_a_task_or_one_clear_error(fields):
    task = one_clear_error(ArithmeticTask, **fields)
    if task is not None:
        assert ArithmeticTask.from_config(task.to_config()) == task


@given(st.text(max_size=12))
def test_run_names_are_one_folder_or_one_clear_error(name):
    if one_clear_error(check_run_name, name) is not None:
        assert os.path.basename(name) == name and name not in ("", ".", "..")
        assert ".." not in name


# -- results CSVs -----------------------------------------------------------------


@st.composite
def results_tables(draw):
    rows = draw(st.integers(1, 6))
    success = draw(st.lists(st.booleans(), min_size=rows, max_size=rows))
    return pd.DataFrame(
        {
            "model": draw(
                st.lists(st.sampled_from(["nmu", "nau"]), min_size=rows, max_size=rows)
            ),
            "operation": ["mul"] * rows,
            "seed": range(rows),
            "success": success,
            "solved_at": [
                1000.0 * (i + 1) if ok else None for i, ok in enumerate(success)
            ],
            "sparsity_error": [0.01 * i for i in range(rows)],
            "interpolation_mse": [1e-9] * rows,
            "extrapolation_mse": [1e-8] * rows,
            "iterations": [5000] * rows,
        }
    ).iloc[:rows]


def complete_rows(content: bytes) -> int:
    """The data rows of a results file that end with their line break."""
    return max(content.count(b"\n") - 1, 0)


@given(results_tables(), st.data())
def test_a_cut_results_file_never_counts_a_partial_row(tmp_path, table, data):
    path = tmp_path / "results.csv"
    table.to_csv(path, index=False)
    content = path.read_bytes()
    cut = content[: data.draw(st.integers(0, len(content)), label="cut at")]
    path.write_bytes(cut)
    loaded = one_clear_error(load_results, path)
    assert path.read_bytes() == cut
    if loaded is not None:
        assert len(loaded) == complete_rows(cut)
        pd.testing.assert_frame_equal(
            loaded[list(REQUIRED_COLUMNS)].reset_index(drop=True),
            load_results_of(table).head(len(loaded)),
            check_dtype=False,
        )


def load_results_of(table: pd.DataFrame) -> pd.DataFrame:
    buffer = io.StringIO()
    table.to_csv(buffer, index=False)
    frame = pd.read_csv(io.StringIO(buffer.getvalue()))
    frame["solved_at"] = frame["solved_at"].astype(float)
    return frame[list(REQUIRED_COLUMNS)]


@given(results_tables(), st.data())
def test_a_mutated_results_file_is_read_or_one_clear_error(tmp_path, table, data):
    path = tmp_path / "results.csv"
    table.to_csv(path, index=False)
    content = mutate(data, path.read_bytes())
    path.write_bytes(content)
    loaded = one_clear_error(load_results, path)
    assert path.read_bytes() == content
    if loaded is not None:
        assert len(loaded) <= content.count(b"\n") + content.count(b"\r")
        assert loaded["success"].dtype == bool


@given(st.binary(max_size=200))
def test_random_bytes_are_no_results_file(tmp_path, content):
    path = tmp_path / "results.csv"
    path.write_bytes(content)
    one_clear_error(load_results, path)
    one_clear_error(read_results, path)
    assert path.read_bytes() == content


@pytest.fixture(scope="module")
def sweep_file_content():
    """A sweep results file of three runs, written as a sweep writes it."""
    config = ExperimentConfig(model="nau", input_size=10, iterations=100)
    rows = []
    for seed in range(3):
        record = {
            "config": {**config.to_config(), "seed": seed},
            "success": seed != 1,
            "solved_at": 100 if seed != 1 else None,
            "best_step": 100,
            "interpolation_mse": 1e-9,
            "extrapolation_mse": 1e-8,
            "sparsity_error": 0.01,
            "diverged": False,
            "threshold": 1e-5,
            "evaluations": 2,
            "iterations": 100,
            "wall_time": 1.5,
            "iterations_per_second": 66.7,
            "replicas": 3,
            "subsets": [[0, 2], [1, 3]],
        }
        rows.append(record_row(record))
    buffer = io.StringIO()
    pd.DataFrame(rows, columns=list(RESULT_COLUMNS)).to_csv(buffer, index=False)
    assert {row["config_id"] for row in rows} == {config_id(config)}
    return buffer.getvalue().encode()


@given(st.data())
def test_a_mutated_sweep_file_is_read_or_refused_untouched(
    tmp_path, sweep_file_content, data
):
    path = tmp_path / "results.csv"
    content = mutate(data, sweep_file_content)
    path.write_bytes(content)
    table = one_clear_error(read_results, path)
    assert path.read_bytes() == content
    if table is not None:
        assert not table.duplicated(["config_id", "seed"]).any()
        assert len(table) <= 3 + content.count(b"\n")


# -- sweep backups ----------------------------------------------------------------


@pytest.fixture(scope="module")
def backups(tmp_path_factory):
    """A real backup of a trained two-seed chunk, as bytes, by its format.

    Format 2 is `save_backup`'s; format 1 (every evaluation) is still read
    and restored.
    """
    config = ExperimentConfig(model="nau", input_size=10, iterations=100, eval_every=50)
    run = replica_run(config, seeds=[0, 1])
    run.train(progress=False)
    path = tmp_path_factory.mktemp("backup") / "chunk.npz"
    run.save_backup(path)
    contents = {2: path.read_bytes()}
    as_format_1(path, run)
    contents[1] = path.read_bytes()
    return config, contents


@pytest.fixture(scope="module", params=[2, 1], ids=["format2", "format1"])
def backup(request, backups):
    """A backup in one format, and a fresh run to restore."""
    config, contents = backups
    return replica_run(config, seeds=[0, 1]), contents[request.param]


def restored_or_refused(run, path):
    """`restore_backup`, which must leave the run where it was when it refuses."""
    before = run.step, run.wall_time
    if one_clear_error(run.restore_backup, path) is None:
        assert (run.step, run.wall_time) == before


def test_an_empty_backup_is_one_clear_error(tmp_path, backup):
    run, _ = backup
    path = tmp_path / "chunk.npz"
    path.write_bytes(b"")
    assert one_clear_error(read_backup, path) is None
    restored_or_refused(run, path)


@pytest.mark.parametrize("key", ["step", "verdicts"])
def test_a_backup_state_without_a_key_is_one_clear_error(tmp_path, backup, key):
    run, content = backup

    def drop(state):
        if key == "verdicts":  # what each format judges its seeds from
            state["evaluations" if state["format"] == 1 else "summaries"] = None
        else:
            state[key] = None

    path = tmp_path / "chunk.npz"
    path.write_bytes(with_state(content, drop))
    assert one_clear_error(read_backup, path) is None
    restored_or_refused(run, path)


@settings(max_examples=25)
@given(st.data())
def test_a_mutated_backup_is_read_or_one_clear_error(tmp_path, backup, data):
    run, content = backup
    path = tmp_path / "chunk.npz"
    mutated = mutate(data, content)
    path.write_bytes(mutated)
    records = one_clear_error(read_backup, path)
    if records is not None:
        assert [record["seed"] for record in records] == [0, 1]
    restored_or_refused(run, path)
    assert path.read_bytes() == mutated


def with_state(content: bytes, change) -> bytes:
    """The backup `content` with its JSON state changed by `change(state)`.

    The state is written back in the layout of the format it then names.
    """
    state, arrays = load_backup_state(io.BytesIO(content))
    change(state)
    buffer = io.BytesIO()
    save_backup_state(buffer, state, arrays)
    return buffer.getvalue()


STATE_KEYS = ["format", "config", "seeds", "step", "evaluations", "loss_diverged"]
STATE_KEYS += ["iterations", "active", "wall_time", "summaries"]
state_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats() | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=3), children, max_size=2)
    ),
    max_leaves=8,
)


@settings(max_examples=25)
@given(
    st.lists(
        st.tuples(st.sampled_from(STATE_KEYS), st.one_of(st.just(None), state_values)),
        min_size=1,
        max_size=3,
    )
)
def test_a_backup_with_a_damaged_state_is_read_or_one_clear_error(
    tmp_path, backup, changes
):
    run, content = backup

    def change(state):
        for key, value in changes:
            if value is None:
                state.pop(key, None)
            else:
                state[key] = value

    path = tmp_path / "chunk.npz"
    damaged = with_state(content, change)
    path.write_bytes(damaged)
    one_clear_error(read_backup, path)
    restored_or_refused(run, path)
    assert path.read_bytes() == damaged


SUMMARY_DAMAGE = {
    "not a list": lambda s: s.update(summaries={}),
    "one replica short": lambda s: s["summaries"].pop(),
    "a missing field": lambda s: s["summaries"][0].pop("best"),
    "an extra field": lambda s: s["summaries"][0].update(extra=1),
    "a negative count": lambda s: s["summaries"][0].update(evaluations=-1),
    "a float count": lambda s: s["summaries"][0].update(evaluations=2.0),
    "no last evaluation": lambda s: s["summaries"][0].update(last=None),
    "a short best": lambda s: s["summaries"][0].update(best=[0, 1.0]),
    "a text MSE": lambda s: s["summaries"][1]["last"].__setitem__(1, "x"),
    "a float solved step": lambda s: s["summaries"][0].update(solved_at=1.5),
    "a bool flag as text": lambda s: s["summaries"][0].update(nonfinite="no"),
    "a NaN threshold": lambda s: s["summaries"][0].update(threshold=math.nan),
    "a huge threshold": lambda s: s["summaries"][0].update(threshold=10**400),
    "a negative threshold": lambda s: s["summaries"][1].update(threshold=-1.0),
    "evaluations, no summaries": lambda s: s.update(
        evaluations=[[], []], summaries=None
    ),
    "format 3": lambda s: s.update(format=3),
}


def test_a_damaged_format_2_backup_is_one_clear_error(tmp_path, backups):
    config, contents = backups
    run = replica_run(config, seeds=[0, 1])
    path = tmp_path / "chunk.npz"
    for name, change in SUMMARY_DAMAGE.items():
        path.write_bytes(with_state(contents[2], change))
        assert one_clear_error(read_backup, path) is None, name
        with pytest.raises(ValueError, match="move it aside"):
            run.restore_backup(path)
        assert run.step == 0, name
    # The JSON stored otherwise than as UTF-8 bytes in a 1-D uint8 array.
    state, arrays = load_backup_state(io.BytesIO(contents[2]))
    text = json.dumps(state).encode()
    for stored in [
        np.frombuffer(text, np.uint8).astype(np.float64),
        np.frombuffer(text, np.uint8).reshape(1, -1),
        np.frombuffer(b"\xff\xfe" + text, np.uint8),
    ]:
        np.savez(path, state=stored, **arrays)
        with pytest.raises(ValueError, match="not a readable sweep backup"):
            read_backup(path)
        with pytest.raises(ValueError, match="move it aside"):
            run.restore_backup(path)


def test_a_backup_judged_against_another_threshold_is_refused(tmp_path, backups):
    """A summary's solved steps hold only for the threshold they were taken at."""
    config, contents = backups

    def other_threshold(state):
        for summary in state["summaries"]:
            summary["threshold"] *= 2

    path = tmp_path / "chunk.npz"
    path.write_bytes(with_state(contents[2], other_threshold))
    run = replica_run(config, seeds=[0, 1])
    with pytest.raises(ValueError, match="judged its evaluations against threshold"):
        run.restore_backup(path)
    assert run.step == 0
    assert [r["threshold"] for r in read_backup(path)] == list(run.thresholds * 2)


def test_the_backup_fixture_is_a_readable_backup(tmp_path, backup):
    run, content = backup
    path = tmp_path / "chunk.npz"
    path.write_bytes(content)
    assert [record["step"] for record in read_backup(path)] == [100, 100]
    assert zipfile.is_zipfile(path)
    assert run.restore_backup(path) and run.step == 100
    assert not math.isnan(read_backup(path)[0]["interpolation_mse"])


# -- summarize, plot and progress -------------------------------------------------
# As a sweep's file above: random tables of several configurations and engines,
# a run listed twice, a file cut anywhere, through the commands themselves.

RUN_COLUMNS = ["model", "max_iterations", "hidden_size", "engine"]


@st.composite
def mixed_results(draw):
    """Runs of up to two models, budgets, sizes and engines, in any order;
    `(table, repeated)`: one run may be listed twice."""
    rows = []
    for model in draw(st.sets(st.sampled_from(["nau", "nmu"]), min_size=1)):
        for budget in draw(st.sets(st.sampled_from([200, 2000]), min_size=1)):
            for size in draw(st.sets(st.sampled_from([2, 4]), min_size=1)):
                for engine in draw(
                    st.sets(st.sampled_from(["tensorflow", "jax"]), min_size=1)
                ):
                    for seed in range(draw(st.integers(1, 3))):
                        success = draw(st.booleans())
                        rows.append(
                            {
                                "model": model,
                                "operation": "add",
                                "seed": seed,
                                "max_iterations": budget,
                                "hidden_size": size,
                                "engine": engine,
                                "success": success,
                                "solved_at": budget / 2 if success else None,
                                "sparsity_error": 0.01 * (seed + 1),
                                "interpolation_mse": 1e-9,
                                "extrapolation_mse": 1e-8,
                                "iterations": budget,
                            }
                        )
    order = draw(st.permutations(range(len(rows))))
    table = pd.DataFrame([rows[i] for i in order])
    repeated = draw(st.integers(0, 3), label="repeat a run?") == 0
    if repeated:
        again = draw(st.integers(0, len(table) - 1), label="repeated row")
        table = pd.concat([table, table.iloc[[again]]], ignore_index=True)
    return table, repeated


def run_cli(capsys, *argv):
    """`keras-nalu ARGV` here: (exit status, stdout, stderr lines)."""
    from keras_nalu import cli

    code = cli.main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, [line for line in captured.err.splitlines() if line]


def assert_one_clear_line(code, err):
    assert code == 2 and len(err) == 1, err
    assert "Traceback" not in err[0]


@settings(max_examples=20)  # the intervals' fits take about 0.1 s a row
@given(mixed_results(), st.data())
def test_summarize_counts_each_run_once_and_pools_nothing(
    tmp_path, capsys, results, data
):
    table, repeated = results
    path = tmp_path / "results.csv"
    table.to_csv(path, index=False)
    content = path.read_bytes()
    if data.draw(st.booleans(), label="cut"):
        content = content[: data.draw(st.integers(0, len(content)), label="cut at")]
        path.write_bytes(content)
    complete = complete_rows(content)
    out_dir = tmp_path / "out"
    shutil.rmtree(out_dir, ignore_errors=True)
    code, _, err = run_cli(capsys, "summarize", path, "--out", out_dir)
    assert path.read_bytes() == content
    kept = table.head(complete)
    if complete and repeated and kept.duplicated(RUN_COLUMNS + ["seed"]).any():
        event("a run listed twice")
        assert_one_clear_line(code, err)
        assert "repeats the run of line" in err[0]
        assert not out_dir.exists()
        return
    if code != 0:  # a cut row, or nothing left but a header
        event("a file cut short")
        assert_one_clear_line(code, err)
        assert not out_dir.exists()
        return
    event(f"summarized: {kept[RUN_COLUMNS].drop_duplicates().shape[0]} configurations")
    summary = pd.read_csv(out_dir / "results.summary.csv")
    assert "engine" in summary
    counts = kept.groupby(RUN_COLUMNS).size()
    keys = [column for column in RUN_COLUMNS if column in summary]
    assert len(summary) == len(counts)  # one row per configuration and engine
    assert summary.groupby(keys)["n"].sum().sum() == len(kept)
    for _, row in summary.iterrows():
        runs = kept
        for key in keys:
            runs = runs[runs[key] == row[key]]
        assert row["n"] == len(runs)
        assert runs[RUN_COLUMNS].drop_duplicates().shape[0] == 1  # nothing pooled


@pytest.fixture(scope="module")
def a_plot_of_ours(tmp_path_factory):
    """The bytes of a PNG `keras-nalu plot` wrote, drawn once for every example."""
    from keras_nalu import cli

    out = tmp_path_factory.mktemp("plot") / "plot.png"
    argv = ["plot", str(EXAMPLE_RESULTS), "--x", "hidden_size", "--out", str(out)]
    assert cli.main(argv) == 0
    return out.read_bytes()


@settings(max_examples=15)  # and a figure takes about a second
@given(
    mixed_results(), st.sampled_from(["absent", "ours", "ours", "foreign"]), st.data()
)
def test_plot_draws_every_configuration_apart_and_writes_over_nothing(
    tmp_path, capsys, a_plot_of_ours, results, target, data
):
    from keras_nalu.reports.plots import made_by_plot, results_figure

    table, repeated = results
    path = tmp_path / "results.csv"
    table.to_csv(path, index=False)
    content = path.read_bytes()
    out = tmp_path / "plot.png"
    out.unlink(missing_ok=True)
    if target == "foreign":
        out.write_bytes(content)
    elif target == "ours":
        out.write_bytes(a_plot_of_ours)
    before = out.read_bytes() if out.exists() else None
    x = data.draw(
        st.sampled_from(["hidden_size", "max_iterations", "hidden_size", "success"])
    )
    code, _, err = run_cli(capsys, "plot", path, "--x", x, "--out", out)
    assert path.read_bytes() == content
    if repeated or target == "foreign" or x == "success":
        event("refused")
        assert_one_clear_line(code, err)
        assert (out.read_bytes() if out.exists() else None) == before
        return
    assert code == 0, err
    event(f"drawn over a file that was {target}")
    assert made_by_plot(out)
    figure = results_figure(load_results(path), x=x)
    labels = figure.axes[0].get_legend_handles_labels()[1]
    lines = [c for c in RUN_COLUMNS if c != x]
    assert len(labels) == len(table[lines].drop_duplicates())
    assert len(set(labels)) == len(labels)  # each line says what sets it apart


@settings(max_examples=25)
@given(
    st.lists(
        st.sampled_from(["single", "batched", "copy", "batched", "cut", "bytes"]),
        min_size=1,
        max_size=4,
    ),
    st.data(),
)
def test_progress_shows_every_configuration_and_engine_or_one_clear_line(
    tmp_path, capsys, backups, files, data
):
    _, contents = backups
    folder = tmp_path / "sweep.csv.backup"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    state, arrays = load_backup_state(io.BytesIO(contents[2]))
    config, seeds = state.pop("config"), state.pop("seeds")
    batched = {
        **state,
        "engine": "jax",
        "configs": [
            {**config, "operation": operation, "seed": seed}
            for operation, seed in zip(("add", "sub"), seeds)
        ],
    }
    expected, readable = [], True
    for index, kind in enumerate(files):
        name = f"c{index}.npz"
        if kind == "batched":
            save_backup_state(folder / name, batched, arrays)
            expected += [(name, "add", "jax"), (name, "sub", "jax")]
        elif kind == "bytes":
            (folder / name).write_bytes(mutate(data, contents[2]))
            readable = False  # perhaps still readable: either answer is fine
        elif kind == "cut":
            cut = data.draw(st.integers(0, len(contents[2]) - 1), label="cut at")
            (folder / name).write_bytes(contents[2][:cut])
            readable = False
        else:  # a chunk's backup, or a copy of one under another name
            (folder / name).write_bytes(contents[2])
            expected += [(name, "add", "tensorflow")]
    code, out, err = run_cli(capsys, "progress", tmp_path / "sweep.csv", "--brief")
    if code != 0:
        event("refused")
        assert not readable
        assert_one_clear_line(code, err)
        assert "is not a readable sweep backup" in err[0] or "damaged" in err[0]
        assert "delete" not in err[0]  # never advised for a backup
        return
    event("shown" + (" all readable" if readable else " despite damage"))
    lines = out.splitlines()
    shown = [
        (line.split(":")[0], line.split(", step")[0].split()[-1], line.split("; ")[-1])
        for line in lines
    ]
    if readable:
        assert shown == [(n, op, f"{engine} engine)") for n, op, engine in expected]
    assert all(" seeds solved so far (threshold " in line for line in lines)
