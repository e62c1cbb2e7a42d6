"""Peak memory of ``skcrf tag`` and ``skcrf evaluate`` on 1x and 8x CoNLL-2000 train.

Both commands stream (a batch of sequences at a time), so their peak should
not depend on the size of the file. Each run is a fresh ``python -m skcrf``
process; its peak resident memory comes from ``os.wait4``. For scale, the
floor: the peak of a process that only imports the command line, and of one
that also loads the model. The copies, the model and the outputs go to a
temporary folder, never into the repository.

Run: python benchmarks/bench_cli_memory.py [--copies 1,8] [--max-iter 5]

Target (issue 15): the same peak for 1x and 8x (flat), at most 200 MB.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import data_home

TARGET_MB = 200
#: How much more the largest file may take than the smallest and still count
#: as flat: a few MB of allocator noise, far below the 18-50x the file size
#: that reading it whole took (8x CoNLL-2000 train is 23 MB).
FLAT_MB = 10


def peak_mb(argv):
    """Peak resident memory (MB) of a fresh Python running ``argv``, and its status."""
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen([sys.executable, *argv], stdout=subprocess.DEVNULL,
                                   stderr=errors)
        # wait4, not wait: the resource usage of this child alone
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            sys.exit(f"{' '.join(argv)} failed:\n{errors.read().decode(errors='replace')}")
    return usage.ru_maxrss / 1024  # kB on Linux


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", default="1,8",
                        help="comma-separated numbers of copies of train.txt to tag")
    parser.add_argument("--max-iter", type=int, default=5,
                        help="training iterations of the model (its size does not depend "
                             "on them)")
    args = parser.parse_args()
    copies = [int(n) for n in args.copies.split(",")]
    train = data_home() / "conll2000" / "train.txt"
    if not train.is_file():
        sys.exit(f"{train} not found; point SKCRF_DATA at the folder holding conll2000/")
    text = train.read_bytes()

    with tempfile.TemporaryDirectory(prefix="skcrf-cli-memory-") as folder:
        folder = Path(folder)
        model = folder / "chunker.skcrf"
        print(f"training a model on {train} ({args.max_iter} iterations)...", flush=True)
        subprocess.run([sys.executable, "-m", "skcrf", "train", str(train), "--model",
                        str(model), "--max-iter", str(args.max_iter), "--quiet"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # one run first: the kernels compile into numba's cache, as after any first use
        tiny = folder / "tiny.txt"
        tiny.write_bytes(text[:text.index(b"\n\n") + 2])
        peak_mb(["-m", "skcrf", "tag", "--model", str(model), str(tiny)])

        rows = [("import the command line", None,
                 peak_mb(["-c", "import skcrf._cli"])),
                ("load the model", None,
                 peak_mb(["-c", f"import skcrf; skcrf.load_model({str(model)!r})"]))]
        files = {}
        for n in copies:
            files[n] = folder / f"train_x{n}.txt"
            files[n].write_bytes(text * n)
        peaks = {}
        for command in ("tag", "evaluate"):
            for n in copies:
                argv = ["-m", "skcrf", command, "--model", str(model), str(files[n])]
                if command == "tag":
                    argv += ["--output", str(folder / "tagged.txt")]
                peaks[command, n] = peak_mb(argv)
                rows.append((f"skcrf {command} {n}x train", files[n].stat().st_size / 1e6,
                             peaks[command, n]))

    print(f"\n{'run':<28} {'file MB':>8} {'peak MB':>8}")
    for name, size, peak in rows:
        print(f"{name:<28} {'' if size is None else f'{size:.1f}':>8} {peak:>8.1f}")
    print()
    ok = True
    for command in ("tag", "evaluate"):
        values = [peaks[command, n] for n in copies]
        growth = max(values) - min(values)
        flat = growth <= FLAT_MB
        under = max(values) <= TARGET_MB
        ok &= flat and under
        print(f"skcrf {command}: peak grows {growth:.1f} MB from {min(copies)}x to "
              f"{max(copies)}x ({'flat' if flat else 'NOT flat'}, target <= {FLAT_MB} MB); "
              f"largest peak {max(values):.1f} MB ({'within' if under else 'ABOVE'} the "
              f"{TARGET_MB} MB target)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
