"""Record seed 004's Tables A.3-A.4 and Table 3.5's XLNet rows (Louis-Alexandre 2022) on en-xlnet into
records/xlnet_tables/.

Usage (from the repository root; outside make reproduce):

    .venv/bin/python scripts/record_xlnet_tables.py                       # the 40 category pairs, en-xlnet
    .venv/bin/python scripts/record_xlnet_tables.py --pairs occupation/gender --out /tmp/xl   # a timing run

The reading is notebook 13's Table 3.2 reading of en-xlnet (perm_mask, every 4th first name that is one
token of the model, the first 4 templates of each set; biaskit.studies.xlnet_tables explains it).
Notebook 13 section 6c' shows records/xlnet_tables when it is there.
"""

from __future__ import annotations

import argparse
import logging
import sys

from biaskit.studies.xlnet_tables import default_record_dir, run_xlnet_tables_record


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out", default=None, help="record folder (default: records/xlnet_tables of the repository)"
    )
    ap.add_argument("--model", default="en-xlnet", help="XLNet to read (default: the bundled en-xlnet)")
    ap.add_argument(
        "--xlnet-mode", default="perm_mask", choices=("perm_mask", "naive"), help="how the mask is read"
    )
    ap.add_argument("--name-step", type=int, default=4, help="every n-th single-token first name (default 4)")
    ap.add_argument("--max-templates", type=int, default=4, help="first templates of each set (0: all)")
    ap.add_argument(
        "--pairs", nargs="*", default=None, help="target/feature category pairs (default: the thesis's 40)"
    )
    args = ap.parse_args(argv)
    out = args.out if args.out else default_record_dir()
    if out is None:
        ap.error("not in a checkout of the repository: give --out")
    pairs = None if not args.pairs else [tuple(p.split("/", 1)) for p in args.pairs]
    if pairs is not None and any(len(p) != 2 for p in pairs):
        ap.error("give each pair as target/feature, e.g. occupation/gender")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    record = run_xlnet_tables_record(
        out, args.model, xlnet_mode=args.xlnet_mode, name_step=args.name_step,
        max_templates=args.max_templates or None, pairs=pairs,
    )  # fmt: skip
    print(record.provenance())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
