"""`keras-nalu`: one entry point, a module per sub-command.

`registry.COMMANDS` lists the sub-commands; each is a module here (`train`,
`explain`, `summarize`, `plot`, `sweep`, `progress`, `mnist`) whose `run`
parses, calls the package and prints. The flags of a sub-command are
declared only when it is named (`build_parser(flags=...)`), and a handler
imports what it calls when it runs, so `keras-nalu --help` and `--version`
import nothing of Keras. Shared by the commands: `parsing` (the parser, a
flag given once, a config dataclass's flags), `messages` (errors and
warnings in one line, in the command's words), `checks` (refusals before any
work), `startup` (what a command sets before Keras loads: the backend,
TensorFlow's quiet start, Ctrl-C) and `entry` (`main`: exit statuses).
"""

from keras_nalu.cli.entry import build_parser, main

__all__ = ["build_parser", "main"]
