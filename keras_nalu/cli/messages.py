"""What `keras-nalu` prints about a problem: one line, in the command's words."""

import contextlib
import re
import sys
import warnings


def one_line(error: BaseException) -> str:
    """The text of `error` on one line; its type's name where it has none."""
    text = " ".join(str(error).split())
    return text or type(error).__name__


@contextlib.contextmanager
def warnings_in_one_line(prog: str, flag_names: dict[str, str]):
    """Python's warnings as `keras-nalu CMD: warning: ...`, one line each, once."""
    shown = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = in_flag_words(one_line(message), flag_names)
        if text not in shown:
            shown.add(text)
            print(f"{prog}: warning: {text}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def error_line(error: BaseException, flag_names: dict[str, str]) -> str:
    """The first line of `error`, in the words of the command line."""
    if isinstance(error, OSError) and error.strerror and error.filename:
        # "[Errno 17] File exists: 'x'" says the same as this, less plainly.
        return f"{error.filename}: {error.strerror}"
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    if isinstance(error, ValueError):
        message = in_flag_words(message, flag_names)
    return message


# A check inside the package names who asks (`ExperimentConfig expects
# learning_rate to be ...`, `run_sweep expects ...`): a class or a function,
# which the user of a command never called.
_OWNER = r"(?<![\w/.'-])(?:[A-Z][a-z]+[A-Z]\w*|[a-z]+(?:_[a-z]+)+)"
_OWNER_WORDS = (
    (re.compile(_OWNER + r" expects ([\w ]+?) to (\w+) "), r"\1 must \2 "),
    (re.compile(_OWNER + r" expects (\w+) (?=[<>=!])"), r"\1 must be "),
    (re.compile(_OWNER + r" expects "), "expected: "),
    (re.compile(_OWNER + r": "), ""),
    (re.compile(_OWNER + r" with "), "a run with "),
    (re.compile(r"\brun_sweep "), "a sweep "),
)
_VALUE = r"('[^']*'|\"[^\"]*\"|[^\s,;)]+)"


def in_flag_words(message: str, flag_names: dict[str, str]) -> str:
    """A package's message about its arguments, told about the flags instead.

    The checks of the package name their owner and arguments
    (`"ExperimentConfig expects learning_rate to be a finite number > 0.
    Received: learning_rate=-1.0"`); the user of a command gave flags:
    `"--learning-rate must be a finite number > 0. Received: --learning-rate
    -1.0"`. Names that are no flag of the command (a `--grid` field) stay.

    Example:

    >>> in_flag_words(
    ...     "ExperimentConfig expects learning_rate to be > 0. "
    ...     "Received: learning_rate=-1.0",
    ...     {"learning_rate": "--learning-rate"},
    ... )
    '--learning-rate must be > 0. Received: --learning-rate -1.0'
    """
    for pattern, words in _OWNER_WORDS:
        message = pattern.sub(words, message)
    for name, flag in flag_names.items():
        message = re.sub(rf"(?<![\w/.-]){name}={_VALUE}", rf"{flag} \1", message)
        bare = name if "_" in name else rf"{name}(?= must )"
        message = re.sub(rf"(?<![\w/.'-]){bare}(?![\w'/=-])", flag, message)
    return message
