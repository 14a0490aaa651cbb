"""Command line: ``python -m biaskit <command>`` (also installed as ``biaskit``).

Commands
--------
``download-europarl``  download the thesis's full Spanish Europarl files (``make data-full``)
``corpora``            list the known corpora and whether they are present
``run``                run a batch of bias experiments from a YAML config (biaskit.experiments)

Adding a command: write ``_register_<name>(subparsers)`` that calls
``subparsers.add_parser(...)``, adds its arguments and sets ``func=<callable(args) -> int>``
with ``set_defaults``; then append it to :data:`COMMANDS`.  Import heavy modules inside the
command function so that ``python -m biaskit --help`` stays fast.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def _register_download_europarl(sub: argparse._SubParsersAction) -> None:
    from biaskit.data import OPUS_EUROPARL_V8_MOSES

    p = sub.add_parser(
        "download-europarl",
        help="download the Spanish Europarl files of the thesis (OPUS Europarl v8 bg-es, en-es)",
        description=(
            "Download the OPUS Europarl v8 Moses zips and extract their Spanish sides "
            "('Europarl-bg-es-es.txt', 'Europarl-en-es-es.txt') into the biaskit cache. "
            "Checksums: trust on first use, recorded in SHA256SUMS next to the files."
        ),
    )
    p.add_argument(
        "--pairs", nargs="+", default=["bg-es", "en-es"], help="language pairs (default: bg-es en-es)"
    )
    p.add_argument("--base-url", default=OPUS_EUROPARL_V8_MOSES, help="where <pair>.txt.zip lives")
    p.add_argument("--dest", default=None, help="target folder (default: <cache>/europarl)")
    p.add_argument("--timeout", type=float, default=60.0, help="network timeout in seconds")
    p.set_defaults(func=_cmd_download_europarl)


def _cmd_download_europarl(args: argparse.Namespace) -> int:
    from biaskit.data import download_europarl

    paths = download_europarl(args.pairs, base_url=args.base_url, dest_dir=args.dest, timeout=args.timeout)
    for pair, path in paths.items():
        print(f"{pair}: {path}")
    return 0


def _register_corpora(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("corpora", help="list the known corpora and whether they are available")
    p.set_defaults(func=_cmd_corpora)


def _cmd_corpora(args: argparse.Namespace) -> int:
    from biaskit.corpus import available_corpora

    for name, desc in available_corpora().items():
        print(f"{name:<26} {desc}")
    return 0


# --- report (owner: biaskit/report.py) -------------------------------------------------
def _register_report(sub: argparse._SubParsersAction) -> None:
    from biaskit.report import add_build_arguments, run_build

    p = sub.add_parser("report", help="build the static HTML report of the executed notebooks (make report)")
    add_build_arguments(p)
    p.set_defaults(func=run_build)


# --- end report ---------------------------------------------------------------------------


# --- run (owner: biaskit/experiments.py) ------------------------------------------------
def _register_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a batch of bias experiments (models x datasets x metrics) from a YAML config",
        description=(
            "Run every compatible (model, dataset, metric) cell of CONFIG and write a log, a tidy CSV, "
            "a LaTeX table and plots (see biaskit.experiments and experiments/*.yaml)."
        ),
    )
    p.add_argument("config", help="YAML configuration file")
    p.add_argument(
        "--output-dir",
        default=None,
        help="where to write (default: config output_dir or results/experiments/<name>)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--strict", action="store_true", help="exit with status 1 when any cell failed")
    p.set_defaults(func=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    from biaskit.experiments import run_experiments

    df = run_experiments(args.config, output_dir=args.output_dir, progress=not args.no_progress)
    n_err = int((df["status"] == "error").sum())
    for key, path in df.attrs.get("outputs", {}).items():
        for one in path if isinstance(path, list) else [path]:
            print(f"{key}: {one}")
    print(f"{len(df)} result row(s), {n_err} failed cell(s)")
    return 1 if (args.strict and n_err) else 0


# --- end run -------------------------------------------------------------------------------

#: Sub-command registrars, in the order shown by ``--help``.
COMMANDS: list[Registrar] = [_register_download_europarl, _register_corpora, _register_report]
COMMANDS.append(_register_run)  # run (owner: biaskit/experiments.py)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered sub-command."""
    parser = argparse.ArgumentParser(prog="biaskit", description="biaskit command line")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in COMMANDS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (errors are printed, not raised)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s"
    )
    try:
        return int(args.func(args) or 0)
    except (OSError, ValueError, KeyError) as exc:  # ConnectionError and FileNotFoundError are OSErrors
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
