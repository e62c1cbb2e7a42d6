"""The ``skcrf`` command line: train, tag and evaluate on CoNLL-style column files.

``main(argv)`` parses the arguments and runs one subcommand. Errors users can
cause (a missing file, a bad column spec, a file that is not a model, a model
from an incompatible version, a data file with ragged columns) end in one line
on stderr, ``skcrf <command>: error: <what and where>``, and a non-zero status:
2 for usage errors, as argparse does, 1 for the others. Warnings are one line
each too, ``skcrf <command>: warning: ...``, and so is the ``skcrf`` logger's
note that the kernels are compiling. Every command takes ``--quiet``: results,
warnings and errors only, no progress and no notes.

The modules: ``_parser`` (arguments and help), ``_commands`` (train, tag and
evaluate), ``_warmup`` (compiling the kernels ahead), ``_columns`` (column
layouts, and files read and written a batch of sequences at a time),
``_scores`` (evaluate's counts and reports), ``_errors``.
"""

import logging
import os
import sys
import warnings
from contextlib import contextmanager

from ._commands import COMMANDS
from ._errors import CommandError, UsageError
from ._parser import build_parser

__all__ = ["main"]


def main(argv=None):
    """Run the ``skcrf`` command line.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments after the program name; None reads ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 on success, 2 for a usage error, 1 for any other error (reported
        as one line on stderr).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version and usage errors
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    args.argv = argv
    prog = f"skcrf {args.command}"
    try:
        with _messages_as_lines(prog, args.quiet):
            return COMMANDS[args.command](args)
    except BrokenPipeError:
        # the reader of our output went away (`skcrf tag ... | head`): not an error
        # worth a traceback; point stdout at devnull so the exit flush stays quiet
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except UsageError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except (CommandError, OSError, ValueError, TypeError) as error:
        message = " ".join(str(error).split())
        if isinstance(error, OSError) and error.filename is not None:
            message = f"{error.filename}: {error.strerror}"
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except MemoryError as error:
        detail = f" ({' '.join(str(error).split())})" if str(error) else ""
        print(f"{prog}: error: out of memory{detail}; try a smaller input or model",
              file=sys.stderr)
        return 1


@contextmanager
def _messages_as_lines(prog, quiet):
    """Warnings and the ``skcrf`` logger's records as one line each on stderr.

    A warning is ``PROG: warning: text`` rather than Python's two-line dump
    with a source line; a log record (the note that kernels are compiling,
    :mod:`skcrf.inference._runtime.compile_notice`) is ``PROG: text``, and ``quiet``
    keeps only records of level ERROR and above.
    """
    def show(message, category, filename, lineno, file=None, line=None):
        print(f"{prog}: warning: {' '.join(str(message).split())}", file=sys.stderr,
              flush=True)

    logger = logging.getLogger("skcrf")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{prog}: %(message)s"))
    saved = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.ERROR if quiet else logging.INFO)
    logger.propagate = False
    try:
        with warnings.catch_warnings():
            warnings.showwarning = show
            yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
