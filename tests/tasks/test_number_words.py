"""The number-word generator, its vocabulary and Trask et al.'s (2018) split."""

import numpy as np
import pytest

from keras_nalu.tasks import number_words
from keras_nalu.tasks.number_words import (
    NUMBERS,
    VOCABULARY,
    decode,
    encode,
    number_to_tokens,
    number_to_words,
    split,
    words_to_number,
)


@pytest.mark.parametrize(
    "number, words",
    [
        (0, "zero"),
        (19, "nineteen"),
        (42, "forty two"),
        (80, "eighty"),
        (100, "one hundred"),
        (110, "one hundred and ten"),
        (515, "five hundred and fifteen"),
        (703, "seven hundred and three"),
        (999, "nine hundred and ninety nine"),
        (1000, "one thousand"),
    ],
)
def test_number_to_words(number, words):
    assert number_to_words(number) == words
    assert words_to_number(words) == number


@pytest.mark.parametrize("bad", [-1, 1001, 2.5, True, "7"])
def test_number_to_words_rejects_non_numbers(bad):
    with pytest.raises(ValueError, match="integer in \\[0, 1000\\]"):
        number_to_words(bad)


def test_every_number_has_its_own_words_and_parses_back():
    sequences = [number_to_tokens(n) for n in range(1001)]
    assert len(set(sequences)) == 1001
    assert [words_to_number(tokens) for tokens in sequences] == list(range(1001))


@pytest.mark.parametrize("bad", ["", "hundred", "one hundred and", "eighty zero"])
def test_words_to_number_rejects_what_is_not_written(bad):
    with pytest.raises(ValueError, match="words written by number_to_words"):
        words_to_number(bad)


def test_vocabulary_is_the_tokens_of_the_task_numbers():
    tokens = {token for n in NUMBERS for token in number_to_tokens(n)}
    assert set(VOCABULARY) == tokens
    assert len(VOCABULARY) == len(tokens) == 30
    longest = max(len(number_to_tokens(n)) for n in NUMBERS)
    assert longest == number_words.MAX_TOKENS


def test_encode_pads_and_decodes_back():
    ids = encode("seven hundred and three")
    assert ids.shape == (number_words.MAX_TOKENS,)
    assert ids[-1] == number_words.PADDING_ID
    assert decode(ids) == "seven hundred and three"
    # Not a number, but made of vocabulary tokens (Trask et al. 2018, Fig. 3).
    assert decode(encode("twenty seven and eighty")) == "twenty seven and eighty"
    with pytest.raises(ValueError, match="unknown tokens \\['thousand'\\]"):
        encode("one thousand")


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_split_sizes_disjoint_and_complete(seed):
    parts = split(seed)
    sizes = [len(parts.train), len(parts.validation), len(parts.test)]
    assert sizes == [169, 200, 631]
    union = np.concatenate([parts.train, parts.validation, parts.test])
    assert sorted(union.tolist()) == list(NUMBERS)
    assert set(range(20)) <= set(parts.train.tolist())


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_every_token_appears_in_training(seed):
    seen = {token for n in split(seed).train for token in number_to_tokens(int(n))}
    assert seen == set(VOCABULARY)


def test_split_is_seeded():
    np.testing.assert_array_equal(split(3).test, split(3).test)
    assert not np.array_equal(split(3).test, split(4).test)


def test_split_data_shapes():
    ids, targets = split(0).data("validation")
    assert ids.shape == (200, number_words.MAX_TOKENS) and ids.dtype == np.int32
    assert targets.shape == (200, 1) and targets.dtype == np.float32
    assert [decode(row) for row in ids[:3]] == [
        number_to_words(int(t)) for t in targets[:3, 0]
    ]
