"""The command line's errors: each is reported as one line, not a traceback."""


class CommandError(Exception):
    """A failure to report as one line with exit status 1."""


class UsageError(CommandError):
    """Options that contradict each other or the data: exit status 2."""
