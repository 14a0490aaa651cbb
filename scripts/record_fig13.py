"""Record seed 002's learning curve (Barza 2023, section 6.4, Fig. 13) into records/fig13/ (outside make
reproduce).

Usage (from the repository root):

    .venv/bin/python scripts/record_fig13.py                      # the thesis's grid: 8 sizes x 5 x 3 epochs
    .venv/bin/python scripts/record_fig13.py --samples 1 --epochs 3 --n-jobs 2
    .venv/bin/python scripts/record_fig13.py --sizes 500 --samples 1 --out /tmp/fig13-timing   # a timing run

The record is rewritten after every finished fine-tune, and the same command resumes an interrupted run
(biaskit.studies.learning_curve_record explains the files).  Notebook 15 plots records/fig13 when present.
"""

from __future__ import annotations

import argparse
import logging
import sys

from biaskit.studies.learning_curve_record import THESIS_GRID, default_record_dir, run_record


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="record folder (default: records/fig13 of the repository)")
    ap.add_argument("--model", default="en-mlm", help="model to fine-tune (default: the bundled en-mlm)")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(THESIS_GRID["sizes"]), help="n values")
    ap.add_argument(
        "--samples", type=int, default=THESIS_GRID["samples"], help="repetitions per n (indices 0..S-1)"
    )
    ap.add_argument("--first-sample", type=int, default=0, help="first repetition index (to add repetitions)")
    ap.add_argument("--epochs", type=int, default=THESIS_GRID["epochs"], help="epochs of every fine-tune")
    ap.add_argument(
        "--seed", type=int, default=0, help="seed of the CDS corpus and the draws (notebook 15's)"
    )
    ap.add_argument("--n-jobs", type=int, default=0, help="fine-tunes side by side (0: one per CPU core)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    record = run_record(
        args.out if args.out else default_record_dir(),
        model=args.model,
        sizes=args.sizes,
        samples=range(args.first_sample, args.first_sample + args.samples),
        epochs=args.epochs,
        seed=args.seed,
        n_jobs=args.n_jobs,
        progress=not args.no_progress,
    )
    print(record.provenance())
    if not record.runs.empty:
        print(record.summary().round(4).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
