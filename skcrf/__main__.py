"""``python -m skcrf``: the command line of :mod:`skcrf._cli`."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
