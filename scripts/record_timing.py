"""Run a command and append its wall-clock time to docs/records/timings.json (the Measurements page).

Usage: python scripts/record_timing.py "make reproduce (17 notebooks)" -- make reproduce

The documentation renders the record at build time, so a timing is never typed into a page by hand.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

RECORD = Path(__file__).resolve().parent.parent / "docs" / "records" / "timings.json"


def clock(seconds: float) -> str:
    """A wall time as the records write it: ``7 min 58 s``, or ``42 s`` under a minute."""
    minutes, sec = divmod(round(seconds), 60)
    return f"{minutes} min {sec} s" if minutes else f"{sec} s"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (``0.7, 1.6, 2.1``), or ``unknown``."""
    try:
        return ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def run_source(script: str, load_before: str) -> str:
    """A record row's source: the script, the commit, the machine and the load averages at the start (given)
    and now."""
    from biaskit.studies.run_provenance import git_commit, machine

    here = machine()
    return (
        f"{script} at commit {git_commit() or 'unknown'} on {platform.node() or 'this machine'}: "
        f"{here['cores']}-core {here['cpu']}; load average (1, 5, 15 min) {load_before} at the start, "
        f"{load_average()} at the end"
    )


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") != 1:
        print(__doc__, file=sys.stderr)
        return 2
    what, command = argv[0], argv[2:]
    load_before = load_average()
    cache = os.environ.get("BIASKIT_CACHE_DIR")
    cache_state = (
        "empty (BIASKIT_CACHE_DIR, a new folder)"
        if cache and (not Path(cache).exists() or not any(Path(cache).iterdir()))
        else "as found"
    )
    t0 = time.perf_counter()
    status = subprocess.run(command, check=False).returncode
    seconds = time.perf_counter() - t0
    if status:
        print(f"not recorded: {' '.join(command)} exited with {status}", file=sys.stderr)
        return status
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    record["entries"].append(
        {
            "what": what,
            "command": " ".join(command),
            "wall clock": clock(seconds),
            "cache": cache_state,
            "when": datetime.date.today().isoformat(),
            "source": run_source("scripts/record_timing.py", load_before),
        }
    )
    from biaskit.core.io import atomic_write  # written whole or not at all

    with atomic_write(RECORD) as f:
        f.write(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"{what}: {clock(seconds)} -> {RECORD}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
