"""The error of a refused argument, its name and value carried as data.

A check of the package raises `ArgumentError`, a `ValueError` whose message
names who asks, the argument and the value received
(`"ExperimentConfig expects batch_size to be an integer >= 1. Received:
batch_size=0"`). The same error tells it in other words on request
(`ArgumentError.in_words`): a command line names its flags instead
(`"--batch-size must be an integer >= 1. Received: --batch-size 0"`), from
the fields, never by reading the message back. `ArgumentWarning` does the
same for an argument accepted with a warning.
"""

from collections.abc import Mapping


class Verbatim(str):
    """A received value shown as its text, not its `repr` (a `Range`: `U[1, 2]`)."""

    def __repr__(self) -> str:
        return str(self)


class ArgumentMessage:
    """A message about an argument: who asks, which argument, what it must be.

    The fields and the words of `ArgumentError` and `ArgumentWarning`.

    The message takes one of three shapes, by which of `requirement`,
    `expectation` or `problem` is given:

    - `requirement`: `"OWNER expects ARGUMENT to REQUIREMENT"`;
    - `expectation`: `"OWNER expects EXPECTATION"`;
    - `problem`: `"OWNER: PROBLEM"` (with a `context`: `"OWNER with ...
      PROBLEM"`);

    then `". Received: NAME=VALUE, ..."` for each of `received` (none: the
    text ends the message, its full stop included).
    The texts may name arguments as `{name}` fields, or with their value as
    `{name=}` fields (`input_size=100`), which `in_words` fills.

    Args:
        owner: who checks, a class or a function (`"ExperimentConfig"`); ""
            where a `problem` says it all.
        argument: the argument refused, as its owner calls it.
        value: the value received for it.
        requirement: what the argument must do, after "to" (`"be > 0"`).
        expectation: what the owner expects, a phrase (`"a list of seeds"`).
        problem: what is wrong, a sentence.
        received: the arguments the message shows, in order (default:
            `{argument: value}`; `{}`: none); a `Verbatim` value is shown as
            its text.
        context: arguments the requirement depends on (`{"operation":
            "root"}`: `"OWNER with operation='root' expects ..."`).
        values: other arguments the texts show as `{name=}` fields.

    Example:

    >>> error = ArgumentError("NMU", "units", 0, requirement="be >= 1")
    >>> str(error)
    'NMU expects units to be >= 1. Received: units=0'
    >>> error.in_words({"units": "--units"})
    '--units must be >= 1. Received: --units 0'
    """

    def __init__(
        self,
        owner: str,
        argument: str,
        value,
        *,
        requirement: str | None = None,
        expectation: str | None = None,
        problem: str | None = None,
        received: Mapping | None = None,
        context: Mapping | None = None,
        values: Mapping | None = None,
    ):
        shapes = [text for text in (requirement, expectation, problem) if text]
        if len(shapes) != 1:
            raise TypeError(
                "ArgumentError expects one of requirement, expectation and "
                f"problem. Received: {len(shapes)} of them"
            )
        self.owner = owner
        self.argument = argument
        self.value = value
        self.requirement = requirement
        self.expectation = expectation
        self.problem = problem
        self.received = dict(received) if received is not None else {argument: value}
        self.context = dict(context or {})
        self.values = {**(values or {}), **self.context, **self.received}
        self.values[argument] = value
        super().__init__(self.in_words())

    def in_words(self, names: Mapping[str, str] | None = None) -> str:
        """The message; with `names`, told by the caller who gave the arguments.

        Args:
            names: maps an argument to the word its caller gave it by (a
                command's flag). With it the owner, whom that caller never
                named, is left out: `"FLAG must ..."`, `"expected: ..."`, and
                each mapped value reads `FLAG VALUE`. None: the owner's words.
        """
        told = names is not None
        names = dict(names or {})

        def one(name: str, value) -> str:
            return f"{names[name]} {value!r}" if name in names else f"{name}={value!r}"

        def shown(mapping: Mapping) -> str:
            return ", ".join(one(name, value) for name, value in mapping.items())

        words = {
            field: one(field[:-1], self.values[field[:-1]])
            if field.endswith("=")
            else names.get(field, field)
            for field in self._mentioned()
        }
        who = self.owner
        if self.context:
            who = f"{'a run' if told else self.owner} with {shown(self.context)}"
        lead = self._lead(words, who, told and not self.context)
        if not self.received:
            return lead
        return f"{lead}. Received: {shown(self.received)}"

    def _lead(self, words: dict[str, str], who: str, ownerless: bool) -> str:
        """The message before "Received": `who` asks, or (`ownerless`) no one."""
        if self.requirement:
            text = self.requirement.format_map(words)
            subject = words[self.argument]
            if ownerless:
                return f"{subject} must {text}"
            return f"{who} expects {subject} to {text}"
        if self.expectation:
            text = self.expectation.format_map(words)
            return f"expected: {text}" if ownerless else f"{who} expects {text}"
        text = self.problem.format_map(words)
        if ownerless or not who:
            return text
        return f"{who} {text}" if self.context else f"{who}: {text}"

    def _mentioned(self) -> set[str]:
        """Every argument the message may name."""
        return {self.argument, *self.received, *self.context} | _fields(
            self.requirement, self.expectation, self.problem
        )


class ArgumentError(ArgumentMessage, ValueError):
    """A refused argument, its name and value as fields (`ArgumentMessage`).

    Example:

    >>> error = ArgumentError("NMU", "units", 0, requirement="be >= 1")
    >>> str(error)
    'NMU expects units to be >= 1. Received: units=0'
    >>> error.argument, error.in_words({"units": "--units"})
    ('units', '--units must be >= 1. Received: --units 0')
    """


class ArgumentWarning(ArgumentMessage, UserWarning):
    """A risky argument, accepted: a warning with the fields of `ArgumentMessage`."""


def literal(text: str) -> str:
    """`text` as part of an `ArgumentError` text: its braces are no fields.

    Example:

    >>> literal("runs/{name}")
    'runs/{{name}}'
    """
    return str(text).replace("{", "{{").replace("}", "}}")


def _fields(*texts: str | None) -> set[str]:
    """The `{name}` fields of `texts`."""
    import string

    return {
        field
        for text in texts
        if text
        for _, field, _, _ in string.Formatter().parse(text)
        if field
    }
