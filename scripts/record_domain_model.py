"""Record seed 003's Table 5.4 arrows (Sayenju 2023, chapter 5) with a domain model made here, into
records/domain_model/.

Usage (from the repository root; outside make reproduce):

    .venv/bin/python scripts/record_domain_model.py  # en-mlm + all medical sentences, 1 pass
    .venv/bin/python scripts/record_domain_model.py --sentences 200 --out /tmp/domain-timing  # a timing run

The domain model is en-mlm fine-tuned on BUG's PubMed and Covid-19 sentences
(biaskit.studies.domain_model_record explains the choice and the file); notebook 12 Part D draws the recorded
arrows.  The fine-tune is cached, so the printed folder can also be passed to notebook 12 as domain_model.
"""

from __future__ import annotations

import argparse
import logging
import sys

from biaskit.studies.domain_model_record import default_record_dir, run_domain_model_record


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out", default=None, help="record folder (default: records/domain_model of the repository)"
    )
    ap.add_argument(
        "--general", default="en-mlm", help="the general masked model (default: the bundled en-mlm)"
    )
    ap.add_argument(
        "--sentences", type=int, default=0, help="medical sentences to fine-tune on (0: all 26,517)"
    )
    ap.add_argument("--epochs", type=int, default=1, help="passes over the sentences")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    out = args.out if args.out else default_record_dir()
    if out is None:
        ap.error("not in a checkout of the repository: give --out")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    record = run_domain_model_record(
        out,
        general=args.general,
        sentences=args.sentences or None,
        epochs=args.epochs,
        seed=args.seed,
        progress=not args.no_progress,
    )
    print(record.provenance())
    print(
        record.table[["x", "general", "domain", "zone_from", "zone_to", "tendency"]]
        .round(3)
        .to_string(index=False)
    )
    print(f"domain model folder (cache): {record.meta['parameters']['domain_model_folder']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
