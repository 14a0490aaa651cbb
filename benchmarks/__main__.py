"""Run every benchmark module and print the speed-up ratios (``make bench``).

Each ``benchmarks/bench_*.py`` module exposes ``run(quick: bool = False) -> list[dict]``;
every dict has ``name``, ``fast_s``, ``naive_s`` and, optionally, ``note`` (a row with ``skipped``
instead of the times says why it was not measured, e.g. a peer that is not installed).  The
ratio ``naive_s / fast_s`` is what the README reports (``bench_peers``: peer / biaskit).  Benchmarks are never
run as timed tests: tests check that the fast and naive paths agree.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller inputs")
    parser.add_argument("--only", default=None, help="substring of the module name")
    parser.add_argument("--json", default="results/benchmarks.json")
    parser.add_argument(
        "--record",
        default=None,
        help="also write the rows with the date, machine, threads and versions to this JSON "
        "(benchmarks/records/)",
    )
    args = parser.parse_args()
    rows = []
    here = Path(__file__).parent
    for mod in sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_")):
        if args.only and args.only not in mod:
            continue
        module = importlib.import_module(f"benchmarks.{mod}")
        for row in module.run(quick=args.quick):
            row["module"] = mod
            rows.append(row)
            if row.get("skipped"):  # a peer that is not installed: say so, never fail the run
                print(f"{row['name']:<60} skipped: {row['skipped']}", flush=True)
                continue
            row["ratio"] = row["naive_s"] / row["fast_s"] if row["fast_s"] > 0 else float("inf")
            print(
                f"{row['name']:<60} naive {row['naive_s']:9.3f}s  fast {row['fast_s']:9.4f}s  "
                f"ratio {row['ratio']:8.2f}x  {row.get('note', '')}",
                flush=True,
            )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(rows, indent=2))
    if args.record:
        from benchmarks._peers import machine_info

        rec = {"meta": {**machine_info(), "quick": args.quick, "only": args.only}, "rows": rows}
        Path(args.record).parent.mkdir(parents=True, exist_ok=True)
        Path(args.record).write_text(json.dumps(rec, indent=2))


if __name__ == "__main__":
    main()
