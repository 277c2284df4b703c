"""The number-word translation task: "five hundred and fifteen" -> 515.

Numbers are written in British English as space-separated lowercase tokens:
units and teens are one token ("zero" … "nineteen"), tens are one token
("twenty" … "ninety") followed by the unit if any ("forty two", no hyphen),
hundreds are "<unit> hundred" followed by "and <rest>" when the rest is not
zero ("one hundred", "one hundred and ten", "five hundred and fifteen"), and
1000 is "one thousand". The task itself uses the 1000 numbers 0–999: Trask et
al. (2018) train and test "using numbers from 0 to 1000" and split them into
169 + 200 + 631 = 1000 examples, so the upper bound is exclusive. Its
vocabulary is the 30 tokens of those numbers; token id 0 is kept for padding.

Reference: Trask et al., "Neural Arithmetic Logic Units", NeurIPS 2018,
§4.3, Table 3 and Fig. 3.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from keras_nalu._validation import check_non_negative_int

UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve "
    "thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
).split()
"""The words of 0–19, each a single token."""

TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
"""The words of 20, 30, …, 90."""

NUMBERS = range(1000)
"""The numbers of the task: 0–999 (169 + 200 + 631 = 1000)."""

VOCABULARY = (*UNITS, *TENS, "hundred", "and")
"""The 30 tokens of the numbers 0–999; `encode` maps token i to id i + 1."""

PADDING_ID = 0
"""The id that pads shorter sequences (`keras.layers.Embedding(mask_zero=True)`)."""

MAX_TOKENS = 5
"""The longest sequence of the task, e.g. "seven hundred and seventy seven"."""

TRAIN_SIZE, VALIDATION_SIZE, TEST_SIZE = 169, 200, 631
"""Trask et al.'s (2018) split sizes."""

ALWAYS_IN_TRAIN = range(20)
"""0–19 are always training examples (Trask et al. 2018, §4.3)."""

_TOKEN_IDS = {token: index + 1 for index, token in enumerate(VOCABULARY)}


def _check_number(number) -> int:
    if isinstance(number, bool) or not isinstance(number, (int, np.integer)):
        raise ValueError(
            f"number_to_words expects an integer in [0, 1000]. Received: {number!r}"
        )
    if not 0 <= number <= 1000:
        raise ValueError(
            f"number_to_words expects an integer in [0, 1000]. Received: {number!r}"
        )
    return int(number)


def number_to_tokens(number: int) -> tuple[str, ...]:
    """The tokens of an integer in [0, 1000].

    Args:
        number: an integer, 0 <= number <= 1000.

    Returns:
        The words as a tuple of tokens.

    Example:

    >>> from keras_nalu.tasks.number_words import number_to_tokens
    >>> number_to_tokens(703)
    ('seven', 'hundred', 'and', 'three')
    """
    number = _check_number(number)
    if number == 1000:
        return ("one", "thousand")
    hundreds, rest = divmod(number, 100)
    tokens: list[str] = []
    if hundreds:
        tokens += [UNITS[hundreds], "hundred"]
        if rest:
            tokens.append("and")
    if rest or not hundreds:
        if rest < 20:
            tokens.append(UNITS[rest])
        else:
            tens, unit = divmod(rest, 10)
            tokens.append(TENS[tens - 2])
            if unit:
                tokens.append(UNITS[unit])
    return tuple(tokens)


def number_to_words(number: int) -> str:
    """The English words of an integer in [0, 1000], tokens joined by spaces.

    Args:
        number: an integer, 0 <= number <= 1000.

    Returns:
        e.g. "five hundred and fifteen", "forty two", "one thousand".

    Example:

    >>> from keras_nalu.tasks.number_words import number_to_words
    >>> number_to_words(515)
    'five hundred and fifteen'
    """
    return " ".join(number_to_tokens(number))


_NUMBER_OF_TOKENS = {number_to_tokens(n): n for n in range(1001)}


def words_to_number(words: str | tuple[str, ...] | list[str]) -> int:
    """Parses the words `number_to_words` writes back into the integer.

    A symbolic reference (the exact inverse of `number_to_words`, by table
    look-up over 0–1000), not a model.

    Args:
        words: a string of space-separated tokens, or a sequence of tokens.

    Returns:
        The integer.

    Raises:
        ValueError: if `words` is not a number `number_to_words` writes.

    Example:

    >>> from keras_nalu.tasks.number_words import words_to_number
    >>> words_to_number("seven hundred and three")
    703
    """
    tokens = tuple(words.split()) if isinstance(words, str) else tuple(words)
    if tokens not in _NUMBER_OF_TOKENS:
        raise ValueError(
            "words_to_number expects words written by number_to_words. "
            f"Received: words={words!r}"
        )
    return _NUMBER_OF_TOKENS[tokens]


def encode(
    words: str | tuple[str, ...] | list[str], length: int = MAX_TOKENS
) -> np.ndarray:
    """Token ids of `words`, padded with `PADDING_ID` at the end to `length`.

    Any sequence of vocabulary tokens is accepted, also one that is not a
    number (e.g. Fig. 3 of Trask et al. (2018) and its "twenty seven and eighty").

    Args:
        words: a string of space-separated tokens, or a sequence of tokens.
        length: the padded length, at least the number of tokens.

    Returns:
        An int32 array of shape `(length,)`.

    Example:

    >>> from keras_nalu.tasks.number_words import encode
    >>> encode("forty two").tolist()
    [23, 3, 0, 0, 0]
    """
    tokens = words.split() if isinstance(words, str) else list(words)
    unknown = [token for token in tokens if token not in _TOKEN_IDS]
    if unknown:
        raise ValueError(
            f"encode expects tokens of VOCABULARY. Received unknown tokens {unknown} "
            f"in words={words!r}"
        )
    if len(tokens) > length:
        raise ValueError(
            f"encode expects at most length={length} tokens. Received "
            f"{len(tokens)} tokens in words={words!r}"
        )
    ids = np.full((length,), PADDING_ID, dtype=np.int32)
    ids[: len(tokens)] = [_TOKEN_IDS[token] for token in tokens]
    return ids


def decode(ids) -> str:
    """The words of token ids; padding ids are dropped.

    Example:

    >>> from keras_nalu.tasks.number_words import decode, encode
    >>> decode(encode("one hundred and ten"))
    'one hundred and ten'
    """
    return " ".join(VOCABULARY[int(i) - 1] for i in ids if int(i) != PADDING_ID)


@dataclasses.dataclass(frozen=True)
class NumberWordsSplit:
    """The train / validation / test numbers of one split (sorted arrays)."""

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray

    def numbers(self, which: str) -> np.ndarray:
        """The numbers of "train", "validation" or "test"."""
        if which not in ("train", "validation", "test"):
            raise ValueError(
                "NumberWordsSplit.numbers expects which to be one of "
                f"['train', 'validation', 'test']. Received: which={which!r}"
            )
        return getattr(self, which)

    def data(self, which: str) -> tuple[np.ndarray, np.ndarray]:
        """`(token ids, targets)` of one part, for `model.fit` / `evaluate`.

        Returns:
            int32 ids of shape `(n, MAX_TOKENS)` (padded with 0) and float32
            targets of shape `(n, 1)`.
        """
        numbers = self.numbers(which)
        ids = np.stack([encode(number_to_tokens(n)) for n in numbers])
        return ids, numbers.astype("float32")[:, None]


def split(seed: int = 0) -> NumberWordsSplit:
    """Trask et al.'s (2018) split of 0–999: 169 train, 200 validation, 631 test.

    Training gets 0–19 and then numbers from a seeded shuffle of 20–999:
    first, for each token not yet in the training set, the first shuffled
    number that contains it (so every token of `VOCABULARY` is seen in
    training), then the next shuffled numbers up to 169. The rest of the
    shuffle gives 200 validation and 631 test numbers.

    Args:
        seed: seed of the shuffle, an integer >= 0.

    Returns:
        A `NumberWordsSplit` of three disjoint sorted arrays whose union is
        0–999.

    Example:

    >>> from keras_nalu.tasks.number_words import split
    >>> parts = split(seed=0)
    >>> len(parts.train), len(parts.validation), len(parts.test)
    (169, 200, 631)
    """
    seed = check_non_negative_int("split", "seed", seed)
    rng = np.random.default_rng(seed)
    rest = rng.permutation(np.arange(len(ALWAYS_IN_TRAIN), len(NUMBERS)))
    train = list(ALWAYS_IN_TRAIN)
    seen = {token for n in train for token in number_to_tokens(n)}
    for token in VOCABULARY:
        if token in seen:
            continue
        number = next(int(n) for n in rest if token in number_to_tokens(int(n)))
        train.append(number)
        seen.update(number_to_tokens(number))
    chosen = set(train)
    remaining = [int(n) for n in rest if int(n) not in chosen]
    fill = TRAIN_SIZE - len(train)
    train += remaining[:fill]
    validation = remaining[fill : fill + VALIDATION_SIZE]
    test = remaining[fill + VALIDATION_SIZE :]
    return NumberWordsSplit(
        train=np.sort(np.array(train, dtype=np.int64)),
        validation=np.sort(np.array(validation, dtype=np.int64)),
        test=np.sort(np.array(test, dtype=np.int64)),
    )
