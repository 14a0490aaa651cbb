"""Run ``make test-browser`` several times and append each run to docs/records/browser_runs.json.

Usage:
    python scripts/record_browser_runs.py --runs 5 --load --stop-on-failure
    python scripts/record_browser_runs.py --runs 2 --load --env BIASKIT_TEST_NO_WIDGET_RETRY=1

``--load`` keeps ``make test`` running beside the browser tests for the whole time (started again whenever
it ends), the load under which a reload used to lose a view.  ``--env NAME=VALUE`` sets a variable for the
browser tests (``BIASKIT_TEST_NO_WIDGET_RETRY=1``: the live hints' script switched off, the fix reverted;
``BIASKIT_TEST_HOLD_PAGE_MS``: how long the first view drawn holds the page).  Each run is appended as soon
as it ends (written whole or not at all), with its result, its wall time, how many views the script drew
again after a lost wait for their model (from the test's printed line), the commit, the machine and the
load average; the Measurements page renders the record.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling, however this file is loaded
from record_timing import clock, load_average, run_source  # noqa: E402

RECORD = ROOT / "docs" / "records" / "browser_runs.json"

_TEMPLATE = {
    "title": "The explorers in JupyterLab: runs of make test-browser",
    "note": (
        "Each row is one run of `make test-browser` (the explorers driven in JupyterLab with headless "
        "Chromium through Run All, a reload and a reopen), appended by `scripts/record_browser_runs.py`. In "
        "every run the tests hold the page for HOLD_PAGE_MS when the first live view is drawn after a page "
        "loads, so that the other views' wait for their widget models meets the race of a busy page. 'views "
        "drawn again' counts, for the reload and the reopen of the four-explorer check, the times the live "
        "hints' script had a view drawn again after a lost wait; 'BIASKIT_TEST_NO_WIDGET_RETRY=1' switches "
        "that script off."
    ),
    "source": (
        "scripts/record_browser_runs.py on the project's 2-core CPU machine; each row names its commit, "
        "date, machine and load average."
    ),
    "columns": ["run", "setting", "beside it", "result", "wall clock", "views drawn again", "when", "source"],
    "entries": [],
}


def _result(output: str, status: int) -> str:
    """``passed N`` or ``failed: <the first assertion message>`` from pytest's output."""
    summary = re.findall(r"=+ (.*(?:passed|failed|error).*) in [\d.]+s", output)
    counts = summary[-1] if summary else f"exit status {status}"
    if status == 0:
        return counts
    first = re.search(r"^E\s+(AssertionError: .*|\w+Error: .*)$", output, re.M)
    return f"{counts}; {first.group(1)[:200]}" if first else counts


def _retries(output: str) -> str:
    found = re.search(r"views drawn again after a lost wait for their model: (\{.*\})", output)
    if not found:
        return "(not printed)"
    try:
        shown = json.loads(found.group(1).replace("'", '"'))
    except json.JSONDecodeError:
        return found.group(1)
    return ", ".join(f"{k} {v.get('retries', '?')} ({v.get('state', '?')})" for k, v in shown.items())


class _Load:
    """``make test`` started again and again beside the browser tests, until :meth:`stop`."""

    def __init__(self, log: Path) -> None:
        self.log, self.proc, self.runs = log, None, 0

    def tick(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.runs += 1
            with self.log.open("ab") as f:
                self.proc = subprocess.Popen(
                    ["make", "test"], cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, start_new_session=True
                )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=60)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="how many runs (default 5)")
    ap.add_argument("--load", action="store_true", help="keep `make test` running beside the browser tests")
    ap.add_argument("--stop-on-failure", action="store_true", help="stop after the first failed run")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="a variable for a test")
    ap.add_argument("--logs", type=Path, default=ROOT / "results" / "browser_runs", help="where the logs go")
    args = ap.parse_args(argv)
    extra = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            ap.error(f"--env {item!r}: write NAME=VALUE, e.g. --env BIASKIT_TEST_NO_WIDGET_RETRY=1")
        extra[name] = value
    from biaskit.core.io import atomic_write  # written whole or not at all

    args.logs.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    load = _Load(args.logs / f"{stamp}_load.log") if args.load else None
    failures = 0
    try:
        for i in range(1, args.runs + 1):
            if load is not None:
                load.tick()
                time.sleep(20)  # the load's collection under way before the browser starts
            before, t0 = load_average(), time.perf_counter()
            proc = subprocess.Popen(
                ["make", "test-browser"],
                cwd=ROOT,
                env={**os.environ, **extra},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            while proc.poll() is None:
                if load is not None:
                    load.tick()
                time.sleep(5)
            output = proc.stdout.read() if proc.stdout else ""
            seconds = time.perf_counter() - t0
            (args.logs / f"{stamp}_run{i}.log").write_text(output, encoding="utf-8")
            record = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else dict(_TEMPLATE)
            record["entries"].append(
                {
                    "run": f"{i} of {args.runs}",
                    "setting": ", ".join(f"{k}={v}" for k, v in extra.items()) or "as shipped",
                    "beside it": "make test, started again as it ends" if load is not None else "nothing",
                    "result": _result(output, proc.returncode),
                    "wall clock": clock(seconds),
                    "views drawn again": _retries(output),
                    "when": datetime.date.today().isoformat(),
                    "source": run_source("scripts/record_browser_runs.py", before),
                }
            )
            with atomic_write(RECORD) as f:
                f.write(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
            print(f"run {i}: {record['entries'][-1]['result']} ({clock(seconds)})", flush=True)
            failures += proc.returncode != 0
            if proc.returncode != 0 and args.stop_on_failure:
                break
    finally:
        if load is not None:
            load.stop()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
