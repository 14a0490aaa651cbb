"""Record seed 002's CDS-GAP debiasing (Barza 2023, Table 4) at the thesis's size into records/cds_full/.

Usage (from the repository root; outside make reproduce, it takes longer than a notebook should):

    .venv/bin/python scripts/record_cds.py  # all of CDS-GAP x 3 passes, en-mlm
    .venv/bin/python scripts/record_cds.py --sentences 200 --epochs 1 --out /tmp/cds-timing  # a timing run

Notebook 15 section 3b shows records/cds_full when it is there (biaskit.studies.cds_record explains the
file).  The fine-tune is cached like notebook 15's, so the same command after an interruption, or notebook 15
with full=True, reuses a finished one.
"""

from __future__ import annotations

import argparse
import logging
import sys

from biaskit.studies.cds_record import default_record_dir, run_cds_record


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="record folder (default: records/cds_full of the repository)")
    ap.add_argument(
        "--model", default="en-mlm", help="masked model to fine-tune (default: the bundled en-mlm)"
    )
    ap.add_argument(
        "--sentences",
        type=int,
        default=0,
        help="0: all of CDS-GAP (the thesis); else the first N of the draw",
    )
    ap.add_argument("--epochs", type=int, default=3, help="passes over the sentences (Bartl et al.: 3)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the corpus draw (notebook 15's)")
    ap.add_argument(
        "--batch-size", type=int, default=64, help="sentences per scoring batch of the template test"
    )
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    out = args.out if args.out else default_record_dir()
    if out is None:
        ap.error("not in a checkout of the repository: give --out")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    record = run_cds_record(
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
    print(record.sbe_before_after.round(4).to_string(index=False))
    print(record.meta["results"]["pseudo_perplexity"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
