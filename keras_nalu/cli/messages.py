"""What `keras-nalu` prints about a problem: one line, in the command's words."""

import contextlib
import sys
import warnings

from keras_nalu.errors import ArgumentError, ArgumentWarning


def one_line(error: BaseException) -> str:
    """The text of `error` on one line; its type's name where it has none."""
    text = " ".join(str(error).split())
    return text or type(error).__name__


@contextlib.contextmanager
def warnings_in_one_line(prog: str, flag_names: dict[str, str]):
    """Python's warnings as `keras-nalu CMD: warning: ...`, one line each, once.

    An `ArgumentWarning` names the flags of `flag_names`, as `error_line`.
    """
    shown = set()

    def show(message, category, filename, lineno, file=None, line=None):
        if isinstance(message, ArgumentWarning):
            message = message.in_words(flag_names)
        text = one_line(message)
        if text not in shown:
            shown.add(text)
            print(f"{prog}: warning: {text}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def error_line(error: BaseException, flag_names: dict[str, str]) -> str:
    """The first line of `error`, in the words of the command line.

    An `ArgumentError` names the flag of its argument (`flag_names`, the
    table the parser was built from); other errors say what they say.
    """
    if isinstance(error, OSError) and error.strerror and error.filename:
        # "[Errno 17] File exists: 'x'" says the same as this, less plainly.
        return f"{error.filename}: {error.strerror}"
    if isinstance(error, ArgumentError):
        return error.in_words(flag_names)
    return str(error).splitlines()[0] if str(error) else type(error).__name__
