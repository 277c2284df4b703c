"""A sweep backup's records, one group per configuration."""

from keras_nalu.reports.progress import PROGRESS_KEYS, progress_by_configuration


def _record(model, seed, threshold=1.0):
    return {
        "model": model,
        "operation": "add",
        "iterations": 100,
        "threshold": threshold,
        "seed": seed,
    }


def test_records_of_several_configurations_are_grouped_in_order():
    records = [
        _record("nmu", 0),
        _record("nau", 0),
        _record("nmu", 1),
        _record("nau", 1, threshold=2.0),  # another task: another verdict
    ]
    parts = progress_by_configuration(records)
    assert [[(r["model"], r["seed"]) for r in part] for part in parts] == [
        [("nmu", 0), ("nmu", 1)],
        [("nau", 0)],
        [("nau", 1)],
    ]
    assert all(
        len({tuple(r[k] for k in PROGRESS_KEYS) for r in part}) == 1 for part in parts
    )


def test_no_records_no_groups():
    assert progress_by_configuration([]) == []
