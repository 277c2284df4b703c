"""Every `keras-nalu` sub-command, in the order `keras-nalu --help` lists them.

Each is a module of this package with `HELP` (its line in `--help`),
`DESCRIPTION` (its `--help` text; None: `HELP`), `add_flags(parser)` (which
imports what the flags' choices need) and `run(args)`, which returns the exit
status. A new command is a module of that shape and a line here.
"""

from keras_nalu.cli import explain, mnist, plot, progress, summarize, sweep, train

COMMANDS = {
    "train": train,
    "explain": explain,
    "summarize": summarize,
    "plot": plot,
    "sweep": sweep,
    "progress": progress,
    "mnist": mnist,
}
