"""A config dataclass's flags are typed by its annotations (`typing.get_type_hints`)."""

import argparse
import dataclasses
import typing

import pytest

from keras_nalu.cli.parsing import Parser, add_config_flags, flag_type
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.experiments.mnist import MnistConfig


@pytest.mark.parametrize(
    ("field", "expected"),
    [("unit", str), ("data_dir", str), ("train_length", int), ("z_strength", float)],
)
def test_an_optional_field_takes_values_of_its_type(field, expected):
    hint = typing.get_type_hints(MnistConfig)[field]
    assert flag_type(hint, field) is expected


def test_a_tuple_of_ints_reads_a_comma_list():
    read = flag_type(tuple[int, ...] | None, "test_lengths")
    assert read("1,10,100") == (1, 10, 100)
    with pytest.raises(argparse.ArgumentTypeError, match="comma list of int"):
        read("1,ten")


def test_a_field_no_flag_reads_is_refused_not_read_as_a_number():
    with pytest.raises(TypeError, match="give it a flag of its own"):
        flag_type(dict[str, int], "grid")


def test_every_mnist_field_gets_a_flag_of_its_type():
    parser = Parser(prog="keras-nalu mnist")
    add_config_flags(parser, MnistConfig)
    args = parser.parse_args(
        ["--unit", "nmu", "--data-dir", "/data/tfds", "--test-lengths", "1,10"]
    )
    assert args.unit == "nmu"
    assert args.data_dir == "/data/tfds"
    assert args.test_lengths == (1, 10)
    assert parser.parse_args(["--train-length", "3"]).train_length == 3
    config = MnistConfig(**vars(parser.parse_args(["--test-lengths", "2,4"])))
    assert config.test_lengths == (2, 4)


def test_the_arithmetic_flags_keep_the_types_of_their_defaults():
    parser = Parser(prog="keras-nalu train")
    add_config_flags(parser, ExperimentConfig)
    types = {action.dest: action.type for action in parser._actions}
    for field in dataclasses.fields(ExperimentConfig):
        if field.default is not None and not isinstance(field.default, bool):
            assert types[field.name] is type(field.default), field.name
    assert types["sparsity"] is float and types["sparsity_end"] is int
