"""``python -m skcrf.datasets CORPUS...``: download corpora into the data home."""

import argparse
import sys

from ._corpora import _CORPORA, get_data_home


def main(argv=None):
    """Download the corpora named in ``argv`` (default: the command line); the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m skcrf.datasets",
        description="Download benchmark corpora into the data home ($SKCRF_DATA, "
                    "else ~/skcrf_data), verifying their checksums.")
    parser.add_argument("corpora", nargs="+", choices=sorted(_CORPORA),
                        help="conll2000, conll2002 (Spanish), ud (UD English EWT)")
    parser.add_argument("--data-home", default=None, help="where to store them")
    args = parser.parse_args(argv)
    for corpus in args.corpora:
        for fetch, kwargs in _CORPORA[corpus]:
            try:
                X, _ = fetch(**kwargs, data_home=args.data_home)
            except OSError as exc:
                print(exc, file=sys.stderr)
                return 1
            print(f"{corpus} {kwargs['subset']}: {len(X)} sentences "
                  f"in {get_data_home(args.data_home) / corpus}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
