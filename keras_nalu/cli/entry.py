"""`keras-nalu`'s entry point: the parser, and one line for every way it ends."""

import argparse
import sys

from keras_nalu.cli.messages import error_line, one_line, warnings_in_one_line
from keras_nalu.cli.parsing import Parser
from keras_nalu.cli.registry import COMMANDS
from keras_nalu.cli.startup import start_up


def build_parser(flags: bool = True) -> argparse.ArgumentParser:
    """The `keras-nalu` parser.

    Args:
        flags: False gives the sub-commands without their flags: enough for
            `keras-nalu --help` and `--version`, and nothing of Keras is
            imported.
    """
    from keras_nalu import __version__

    parser = Parser(
        prog="keras-nalu",
        description="Neural arithmetic units: train, judge, explain, summarize.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}"
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, command in COMMANDS.items():
        sub = commands.add_parser(
            name, help=command.HELP, description=command.DESCRIPTION or command.HELP
        )
        if flags:
            command.add_flags(sub)
        sub.set_defaults(handler=command.run, flag_names=sub.flag_names)
    return parser


def main(argv=None) -> int:
    """Runs `keras-nalu ARGV`; returns the exit status.

    0: done; 1: the work failed after it started (an export, a cluster);
    2: bad input, a path the system refuses or a missing optional package,
    said in one line; 130: interrupted (Ctrl-C).
    """
    argv = sys.argv[1:] if argv is None else [str(arg) for arg in argv]
    named = next((arg for arg in argv if not arg.startswith("-")), None)
    prog = f"keras-nalu {named}" if named in COMMANDS else "keras-nalu"
    flag_names: dict[str, str] = {}
    # Without a sub-command (--help, --version) no flags are needed, and so
    # nothing of Keras: the answer comes at once.
    if named is not None:
        status = start_up()
        if status is not None:
            return status
    # After the start-up, everything, the imports of the flags included, under
    # one handler: a Ctrl-C at any time is one line and status 130.
    try:
        parser = build_parser(flags=named is not None)
        args = parser.parse_args(argv)
        flag_names = args.flag_names
        with warnings_in_one_line(prog, flag_names):
            return args.handler(args)
    # Bad input (ValueError), a path the system refuses (OSError) or a missing
    # optional package (ImportError): one line, never a traceback.
    except (ValueError, OSError, ImportError) as error:
        print(f"{prog}: error: {error_line(error, flag_names)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        detail = f": {one_line(interrupt)}" if str(interrupt) else ""
        print(f"{prog}: interrupted{detail}", file=sys.stderr)
        return 130
