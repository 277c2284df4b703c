"""The `keras-nalu` parser: one-line errors, a flag given once, config flags."""

import argparse
import dataclasses
import types


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line, without the usage dump.

    A flag of one value given twice with two values is refused (argparse
    would keep the last without a word), and `flag_names` maps each
    argument's name to the flag that sets it, for the messages.
    """

    def __init__(self, *args, **kwargs):
        self.flag_names: dict[str, str] = {}
        super().__init__(*args, **kwargs)
        self.register("action", None, StoreOnce)
        self.register("action", "store", StoreOnce)

    def add_argument(self, *args, **kwargs):
        action = super().add_argument(*args, **kwargs)
        if action.option_strings:
            self.flag_names[action.dest] = max(action.option_strings, key=len)
        return action

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        vars(namespace).pop(StoreOnce.GIVEN, None)
        return namespace, extras

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


class StoreOnce(argparse.Action):
    """argparse's `store`, refusing a second, different value of the flag."""

    GIVEN = "_values_given"

    def __call__(self, parser, namespace, values, option_string=None):
        given = vars(namespace).setdefault(self.GIVEN, {})
        if self.dest in given and given[self.dest] != values:
            flag = option_string or self.dest
            parser.error(
                f"{flag} given twice, as {given[self.dest]!r} and {values!r}; "
                "give it once"
            )
        given[self.dest] = values
        setattr(namespace, self.dest, values)


def flag(name: str) -> str:
    """The flag of a field: `learning_rate` -> `--learning-rate`."""
    return "--" + name.replace("_", "-")


def add_config_flags(parser, config_cls, skip=(), choices=None) -> None:
    """One flag per field of the dataclass `config_cls`, typed by its annotation.

    A `bool` field is a switch; `X | None` takes an X; `tuple[X, ...]` a
    comma list of X (`flag_type`).

    Args:
        parser: the sub-command's parser.
        config_cls: the dataclass.
        skip: fields that get no flag here (a command gives them flags of its
            own).
        choices: maps a field to the values it accepts; its help lists them.
    """
    import typing  # the flags only: `keras-nalu --help` needs none

    choices = choices or {}
    hints = typing.get_type_hints(config_cls)
    for field in dataclasses.fields(config_cls):
        if field.name in skip:
            continue
        default = field.default
        if hints[field.name] is bool:
            parser.add_argument(
                flag(field.name),
                action="store_true",
                default=default,
                help=f"sets {field.name} (default: {'on' if default else 'off'})",
            )
            continue
        allowed = choices.get(field.name)
        help_text = f"default: {default}"
        if allowed is not None:
            help_text = f"one of: {', '.join(allowed)} ({help_text})"
        parser.add_argument(
            flag(field.name),
            type=flag_type(hints[field.name], field.name),
            default=default,
            choices=allowed,
            metavar=field.name.upper(),
            help=help_text,
        )


def flag_type(annotation, name: str = "the field"):
    """The argparse `type` of a field annotated `annotation`.

    `int`, `float` and `str` are themselves; `X | None` is X's type (the flag
    sets a value; leaving it out keeps None); `tuple[X, ...]` reads a comma
    list of X.

    Raises:
        TypeError: no flag reads values of `annotation`; give the field a
            flag of its own (`add_config_flags(skip=...)`).

    Example:

    >>> flag_type(str | None)
    <class 'str'>
    >>> flag_type(tuple[int, ...] | None)("1,10,100")
    (1, 10, 100)
    """
    import typing

    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        kinds = [kind for kind in arguments if kind is not type(None)]
        if len(kinds) == 1:
            return flag_type(kinds[0], name)
    elif origin is tuple and len(arguments) == 2 and arguments[1] is Ellipsis:
        if arguments[0] in (int, float, str):
            return _comma_list(arguments[0])
    elif annotation in (int, float, str):
        return annotation
    raise TypeError(
        f"no flag type reads {name}: {annotation}; give it a flag of its own "
        "and skip it here"
    )


def _comma_list(kind):
    """A flag's comma list of `kind` values, as a tuple."""

    def parse(text: str) -> tuple:
        try:
            return tuple(kind(part) for part in text.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expects a comma list of {kind.__name__} values, e.g. 1,2,3. "
                f"Received: {text!r}"
            ) from None

    return parse
