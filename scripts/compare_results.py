"""Compare two results folders of `make reproduce` key by key (the check that a restructuring left
every number where it was).

Usage: python scripts/compare_results.py OLD_RESULTS NEW_RESULTS [--show N]

For every ``NN_*.json`` present in both folders it flattens the JSON to paths
(``/results/asld/combined/asld``) and prints, per notebook: keys added and removed, numbers that changed with
the largest relative change, and other values (text) that changed.  Keys that hold run times, dates or paths
are left out (they differ from run to run).  Exit status 0 always: the output is for reading.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: key fragments whose values differ between runs of the same code
VOLATILE = (
    "seconds", "time", "created", "duration", "elapsed", "run_s", "wall", "date", "results_dir", "outputs",
    "path", "folder", "tokens_per_second", "n_log_lines",
)  # fmt: skip


def flatten(x: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(x, dict):
        for k, v in x.items():
            yield from flatten(v, f"{prefix}/{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from flatten(v, f"{prefix}[{i}]")
    else:
        yield prefix, x


def compare(old: Path, new: Path) -> dict[str, Any]:
    a, b = dict(flatten(json.loads(old.read_text()))), dict(flatten(json.loads(new.read_text())))
    numbers, other = [], []
    for key, va in a.items():
        if key not in b or any(s in key.lower() for s in VOLATILE) or va == b[key]:
            continue
        vb = b[key]
        if isinstance(va, int | float) and isinstance(vb, int | float) and not isinstance(va, bool):
            if math.isnan(va) and math.isnan(vb):
                continue
            numbers.append((abs(va - vb) / max(abs(va), abs(vb), 1e-300), key, va, vb))
        else:
            other.append((key, va, vb))
    return {
        "added": [k for k in b if k not in a],
        "removed": [k for k in a if k not in b],
        "numbers": sorted(numbers, reverse=True),
        "other": other,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--show", type=int, default=3, help="rows shown per kind of change (default 3)")
    args = parser.parse_args(argv)
    for old in sorted(args.old.glob("[0-9][0-9]_*.json")):
        new = args.new / old.name
        if not new.is_file():
            print(f"{old.name}: not in {args.new}")
            continue
        c = compare(old, new)
        top = c["numbers"][0][0] if c["numbers"] else 0.0
        print(
            f"{old.name}: {len(c['added'])} keys added, {len(c['removed'])} removed, "
            f"{len(c['numbers'])} numbers changed (largest relative change {top:.1e}), "
            f"{len(c['other'])} other values changed"
        )
        for rel, key, va, vb in c["numbers"][: args.show]:
            print(f"    {key}: {va!r} -> {vb!r} ({rel:.1e})")
        for key, va, vb in c["other"][: args.show]:
            print(f"    {key}: {str(va)[:100]!r} -> {str(vb)[:100]!r}")
        for key in c["removed"][: args.show]:
            print(f"    removed {key}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
