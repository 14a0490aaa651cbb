"""Record seed 002's MT Gender fine-tune (Barza 2023, section 6.1) at the study's size into
records/mt_gender/.

Usage (from the repository root; outside make reproduce, it takes longer than a notebook should):

    .venv/bin/python scripts/record_mt_gender.py  # all 3,888 sentences x 3 passes, en-mlm
    .venv/bin/python scripts/record_mt_gender.py --sentences 120 --epochs 1 --out /tmp/mtg-timing
        # a timing run

Notebook 15 section 9 shows records/mt_gender when it is there (biaskit.studies.mt_gender_record explains the
file).  The fine-tune is cached like notebook 15's, so the same command after an interruption, or notebook 15
with full=True, reuses a finished one.
"""

from __future__ import annotations

import argparse
import logging
import sys

from biaskit.studies.mt_gender_record import default_record_dir, run_mt_gender_record


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out", default=None, help="record folder (default: records/mt_gender of the repository)"
    )
    ap.add_argument(
        "--model", default="en-mlm", help="masked model to fine-tune (default: the bundled en-mlm)"
    )
    ap.add_argument(
        "--sentences", type=int, default=0, help="0: all 3,888 (the study); else a sample of that size"
    )
    ap.add_argument("--epochs", type=int, default=3, help="passes over the sentences (Bartl et al.: 3)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample (notebook 15's)")
    ap.add_argument(
        "--batch-size", type=int, default=64, help="sentences per scoring batch of the template test"
    )
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    out = args.out if args.out else default_record_dir()
    if out is None:
        ap.error("not in a checkout of the repository: give --out")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    record = run_mt_gender_record(
        out,
        model=args.model,
        sentences=args.sentences or None,
        epochs=args.epochs,
        seed=args.seed,
        batch_size=args.batch_size,
        progress=not args.no_progress,
    )
    print(record.provenance())
    print(record.tbe_before_after.round(4).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
