"""The shared argument checks and the range parser (`keras_nalu._validation`)."""

import json

import numpy as np
import pytest

from keras_nalu._validation import (
    check_non_negative,
    check_non_negative_int,
    check_positive,
    check_positive_int,
    check_seeds,
    parse_ranges,
)
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.regularizers import Saturation
from keras_nalu.sweeps.engines import replica_run
from keras_nalu.sweeps.grid import parse_seeds
from keras_nalu.tasks.mnist import SequentialMnistTask, parse_lengths
from keras_nalu.tasks.number_words import split


@pytest.mark.parametrize(
    "check, good, bad",
    [
        (check_positive_int, [1, np.int64(7)], [0, -1, 1.0, True, "1", None]),
        (check_non_negative_int, [0, 5, np.int32(2)], [-1, 0.5, False, "0", None]),
        (check_positive, [0.5, 3], [0, -1.0, float("inf"), float("nan"), True]),
        (check_non_negative, [0, 0.5], [-0.1, float("nan"), True, "0"]),
    ],
)
def test_checks_return_plain_values_or_name_the_argument(check, good, bad):
    for value in good:
        checked = check("Owner", "argument", value)
        assert checked == value and type(checked) in (int, float)
    for value in bad:
        with pytest.raises(ValueError, match=r"^Owner expects argument .*argument="):
            check("Owner", "argument", value)


def test_seeds_are_distinct_integers_from_zero():
    assert check_seeds("sweep", (np.int64(3), 0)) == [3, 0]
    assert all(type(seed) is int for seed in check_seeds("sweep", [np.int64(3)]))
    for seeds, message in [
        ([], "at least one seed"),
        ([1, 2, 1], "distinct seeds. Received: 1 twice"),
        ([-1], ">= 0"),
        ([True], ">= 0"),
        ([1.0], ">= 0"),
        (5, "a list of seeds"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_seeds("sweep", seeds)


def test_ranges_expand_in_order_with_their_repeats():
    assert parse_ranges("o", "n", "3, 0-2 ,2") == [3, 0, 1, 2, 2]
    for text, message in [
        ("3-1", "range '3-1' is empty"),
        ("1-", "like 0-99"),
        ("-1", "like 0-99"),
        ("", "like 0-99"),
        ("0-5", "at most 5 n"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_ranges("o", "n", text, limit=5)


def test_seed_and_length_lists_share_the_range_syntax():
    assert parse_seeds(" 0-2, 7") == [0, 1, 2, 7]
    assert parse_lengths(" 1-3, 10,3") == (1, 2, 3, 10)  # repeats dropped
    for parse in (parse_seeds, parse_lengths):
        with pytest.raises(ValueError, match="range '3-1' is empty"):
            parse("3-1")
    with pytest.raises(ValueError, match="distinct"):
        parse_seeds("1,0-2")
    with pytest.raises(ValueError, match="lengths >= 1"):
        parse_lengths("0-2")


def test_every_seed_and_count_check_is_the_shared_one():
    message = "expects {} to be an integer >= 0. Received: {}=-1"
    for call, owner, name in [
        (lambda: ExperimentConfig(seed=-1), "ExperimentConfig", "seed"),
        (lambda: ExperimentConfig(sparsity_end=-1), "ExperimentConfig", "sparsity_end"),
        (lambda: split(seed=-1), "split", "seed"),
        (lambda: Saturation(warmup_epochs=-1), "Saturation", "warmup_epochs"),
        (lambda: SequentialMnistTask(seed=-1), "SequentialMnistTask", "seed"),
    ]:
        with pytest.raises(ValueError) as error:
            call()
        assert str(error.value) == f"{owner} " + message.format(name, name)
    with pytest.raises(ValueError, match="train_replicas expects distinct seeds"):
        replica_run(ExperimentConfig(input_size=10, iterations=10), [1, 1])


def test_a_numpy_seed_becomes_an_int_the_record_can_hold():
    config = ExperimentConfig(seed=np.int64(3), sparsity_start=np.int64(0))
    assert type(config.seed) is int and type(config.sparsity_start) is int
    assert json.loads(json.dumps(config.to_config()))["seed"] == 3
