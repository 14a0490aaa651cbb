"""Corpus counts sharded over Dask workers equal the one-process counts exactly."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biaskit.data.corpus import load_corpus
from biaskit.metrics.pmi import SentenceIncidence, bias_pmi_table

pytest.importorskip("dask.bag")


@pytest.fixture(scope="module")
def cluster_client():
    """One LocalCluster of 2 worker processes (1 thread each) for the module."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def corpus():
    return load_corpus("europarl-es-sample")[:3000]


def _shards(sentences, k):
    step = -(-len(sentences) // k)
    return [sentences[i : i + step] for i in range(0, len(sentences), step)]


GROUPS_R = [["mujer", "mujeres", "ella"], ["hombre", "hombres", "él"]]
GROUPS_C = [["trabajo", "empleo"], ["familia", "hijos"], ["parlamento"], ["zzz-not-a-word"]]


@pytest.mark.parametrize("k", [1, 3, 7])
def test_sharded_incidence_is_identical_to_one_pass(corpus, k):
    from biaskit.studies.distributed import sharded_incidence

    one = SentenceIncidence(corpus)
    got = sharded_incidence(_shards(corpus, k), scheduler="threads")
    assert got.vocabulary == one.vocabulary
    assert got.matrix.shape == one.matrix.shape
    assert (got.matrix != one.matrix).nnz == 0
    np.testing.assert_array_equal(got.cooccurrence(GROUPS_R, GROUPS_C), one.cooccurrence(GROUPS_R, GROUPS_C))


@pytest.mark.slow
def test_sharded_counts_on_a_local_cluster_equal_one_pass_and_feed_pmi(corpus, cluster_client):
    from biaskit.studies.distributed import sharded_cooccurrence, sharded_incidence

    one = SentenceIncidence(corpus)
    shards = _shards(corpus, 4)
    counts = sharded_cooccurrence(shards, GROUPS_R, GROUPS_C, scheduler=cluster_client)
    inc = sharded_incidence(shards, scheduler=cluster_client)
    np.testing.assert_array_equal(counts["cooccurrence"], one.cooccurrence(GROUPS_R, GROUPS_C))
    np.testing.assert_array_equal(counts["row_counts"], one.sentence_counts(GROUPS_R))
    np.testing.assert_array_equal(counts["col_counts"], one.sentence_counts(GROUPS_C))
    assert counts["n_sentences"] == len(corpus)
    assert counts["cooccurrence"].sum() > 0
    chars = {"gender": (GROUPS_R[0], GROUPS_R[1])}
    targets = {"work": GROUPS_C[0], "family": GROUPS_C[1]}
    a = bias_pmi_table(targets, chars, one)
    b = bias_pmi_table(targets, chars, inc)
    assert np.isfinite(
        a["pmi"].to_numpy()
    ).any()  # (a group absent from a sentence side gives NaN, by policy)
    np.testing.assert_array_equal(a["pmi"].to_numpy(), b["pmi"].to_numpy())


def test_bad_shards_are_refused():
    from biaskit.studies.distributed import sharded_incidence

    with pytest.raises(ValueError, match="non-empty list of shards"):
        sharded_incidence([])
    with pytest.raises(ValueError, match=r"shards \[1\] have no sentence"):
        sharded_incidence([[["a", "b"]], []])


@pytest.mark.slow
def test_shards_given_as_files_are_read_and_counted_by_the_workers(corpus, tmp_path):
    from biaskit.data.corpus import load_corpus
    from biaskit.studies.distributed import sharded_cooccurrence, sharded_incidence

    lines = [" ".join(s) for s in corpus]
    paths = []
    for j, part in enumerate(_shards(lines, 3)):
        p = tmp_path / f"shard{j}.txt"
        p.write_text("\n".join(part) + "\n", encoding="utf-8")
        paths.append(p)
    whole = tmp_path / "all.txt"
    whole.write_text("\n".join(lines) + "\n", encoding="utf-8")
    one = SentenceIncidence(load_corpus(whole, cache=False, progress=False))
    got = sharded_cooccurrence(paths, GROUPS_R, GROUPS_C, scheduler="processes")
    np.testing.assert_array_equal(got["cooccurrence"], one.cooccurrence(GROUPS_R, GROUPS_C))
    assert got["n_sentences"] == one.n_sentences
    inc = sharded_incidence([str(p) for p in paths])
    assert inc.vocabulary == one.vocabulary and (inc.matrix != one.matrix).nnz == 0


# ---------------------------------------------------------------------------------------------
# the experiment grid on Dask
# ---------------------------------------------------------------------------------------------
from grid_support import make_toy_grid, toy_grid_config  # noqa: E402


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """The toy grid of tests/studies/test_grid.py: static vectors, a tiny masked LM, a broken model."""
    return make_toy_grid(tmp_path_factory.mktemp("grid"))


_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ ")


def _log_lines(path):
    """The log's lines without clock times and durations (which differ between any two runs)."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if _STAMP.match(line):
            line = re.sub(r"\b\d+\.\d+ s\b", "<t> s", _STAMP.sub("", line))
            out.append(line.replace(str(Path(path).parent), "<out>"))
    return out


@pytest.fixture(scope="module")
def local_run(grid, tmp_path_factory):
    from biaskit.studies.grid import run_experiments

    out = tmp_path_factory.mktemp("local")
    return run_experiments(toy_grid_config(grid), output_dir=out, progress=False), out


def _assert_same_run(a, out_a, b, out_b):
    pd.testing.assert_frame_equal(a.drop(columns="seconds"), b.drop(columns="seconds"))
    assert (b["status"] == "ok").sum() == 10 and (b["status"] == "error").sum() == 6
    assert _log_lines(out_a / "toy_grid.log") == _log_lines(out_b / "toy_grid.log")
    assert (out_a / "toy_grid.tex").read_text() == (out_b / "toy_grid.tex").read_text()
    assert (out_a / "toy_grid_config.yaml").read_text() == (out_b / "toy_grid_config.yaml").read_text()
    plots = sorted(p.name for p in out_a.glob("*.png"))
    assert plots and plots == sorted(p.name for p in out_b.glob("*.png"))
    assert all((out_a / n).read_bytes() == (out_b / n).read_bytes() for n in plots)  # the same figures


@pytest.mark.slow
def test_grid_on_a_local_cluster_is_identical_to_the_local_run(grid, local_run, cluster_client, tmp_path):
    from biaskit.studies.grid import run_experiments

    a, out_a = local_run
    b = run_experiments(toy_grid_config(grid), output_dir=tmp_path, progress=False, scheduler=cluster_client)
    _assert_same_run(a, out_a, b, tmp_path)
    # the broken model is reported once at ERROR, on the client, as in the local run
    errors = [ln for ln in _log_lines(tmp_path / "toy_grid.log") if ln.startswith("ERROR")]
    assert len(errors) == 1 and "no-such-model" in errors[0]


class _KillOnFirstTask:
    """A worker plugin (test only) that kills its worker process the first time any worker starts a
    grid task: the marker file makes it happen once over the cluster's life, restarts included."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def setup(self, worker):
        self.worker = worker

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and "biaskit-grid" in str(key) and not os.path.exists(self.marker):
            Path(self.marker).write_text(str(key))
            os._exit(1)


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_no_cell(grid, local_run, tmp_path):
    from distributed import Client, LocalCluster
    from distributed.diagnostics.plugin import WorkerPlugin

    from biaskit.studies.grid import run_experiments

    plugin = type("KillOnFirstTask", (_KillOnFirstTask, WorkerPlugin), {})(str(tmp_path / "killed"))
    out = tmp_path / "out"
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        client.register_plugin(plugin)
        b = run_experiments(toy_grid_config(grid), output_dir=out, progress=False, scheduler=client)
    assert (tmp_path / "killed").exists(), "the plugin never killed a worker: the test proved nothing"
    a, out_a = local_run
    _assert_same_run(a, out_a, b, out)


@pytest.mark.slow
def test_grid_scheduler_choices_and_gpu_requests(grid, cluster_client):
    from biaskit.studies.grid import _gpu_resources, load_config, run_experiments

    with pytest.raises(ValueError, match="unknown scheduler 'nonsense'"):
        run_experiments(toy_grid_config(grid), write=False, progress=False, scheduler="nonsense")
    cfg = load_config(toy_grid_config(grid, device="cuda"))
    with pytest.raises(ValueError, match="no worker of the Dask cluster offers a GPU resource"):
        _gpu_resources(cfg, cluster_client)
    assert _gpu_resources(load_config(toy_grid_config(grid)), cluster_client) is None  # auto, no GPU offered

    class _Offering:  # a scheduler that reports one GPU worker
        def scheduler_info(self):
            return {"workers": {"tcp://a": {"resources": {}}, "tcp://b": {"resources": {"GPU": 1}}}}

    assert _gpu_resources(cfg, _Offering()) == {"GPU": 1}
    assert _gpu_resources(load_config(toy_grid_config(grid)), _Offering()) == {"GPU": 1}
    assert _gpu_resources(load_config(toy_grid_config(grid, device="cpu")), _Offering()) is None


@pytest.mark.slow
def test_cli_run_with_a_dask_scheduler(grid, local_run, tmp_path, capsys):
    import yaml

    from biaskit.__main__ import main

    cfg = tmp_path / "toy.yaml"
    cfg.write_text(yaml.safe_dump(toy_grid_config(grid)), encoding="utf-8")
    out = tmp_path / "out"
    assert (
        main(
            [
                "run",
                str(cfg),
                "--output-dir",
                str(out),
                "--no-progress",
                "--scheduler",
                "dask",
                "--workers",
                "2",
            ]
        )
        == 0
    )
    assert "16 result row(s), 6 failed cell(s)" in capsys.readouterr().out
    _, out_a = local_run
    b = pd.read_csv(out / "toy_grid.csv")
    pd.testing.assert_frame_equal(
        pd.read_csv(out_a / "toy_grid.csv").drop(columns="seconds"), b.drop(columns="seconds")
    )


# ---------------------------------------------------------------------------------------------
# chunked scoring with the shared cache
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_chunked_scoring_equals_one_process_and_resumes_from_the_shared_cache(
    cluster_client, tmp_path, monkeypatch
):
    from biaskit.lm import get_lm, score_sentences
    from biaskit.studies.distributed import score_sentences_distributed

    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "cache"))
    sents = [
        f"the {w} said that {p} would come back soon ."
        for w in ("nurse", "doctor", "teacher", "pilot", "cook")
        for p in ("he", "she", "they")
    ]
    sents.insert(5, "")  # an empty sentence is reported (with its row over the whole input), not dropped
    sents.append("the last one .")
    one = score_sentences(get_lm("tiny-causal"), sents, cache=False, progress=False)
    kw = dict(scheduler=cluster_client, chunk_size=4, kind="causal", progress=False)
    got = score_sentences_distributed("tiny-causal", sents, **kw)
    assert got.n_computed == one.n_computed and got.n_cached == 0
    assert list(got.scores["row"]) == list(one.scores["row"])
    np.testing.assert_allclose(got.scores["score"], one.scores["score"], rtol=1e-5, atol=1e-4)
    assert list(got.report.issues["row"]) == list(one.report.issues["row"])
    assert len(got.tokens) == len(one.tokens)
    files = sorted((tmp_path / "cache").rglob("*.jsonl"))
    assert len(files) == -(-len(sents) // 4)  # one cache file per chunk
    assert list(got.report.issues["row"]) == [5]
    again = score_sentences_distributed("tiny-causal", sents, **kw)
    assert again.n_computed == 0 and again.n_cached == got.n_computed
    np.testing.assert_array_equal(again.scores["score"], got.scores["score"])
    # a job killed while writing: one chunk lost, another cut in the middle of a line
    files[0].unlink()
    text = files[1].read_text(encoding="utf-8")
    files[1].write_text(text[: len(text) // 2], encoding="utf-8")
    resumed = score_sentences_distributed("tiny-causal", sents, **kw)
    assert 0 < resumed.n_computed < got.n_computed
    assert resumed.n_computed + resumed.n_cached == got.n_computed
    np.testing.assert_allclose(resumed.scores["score"], got.scores["score"], rtol=1e-6, atol=1e-5)


def test_chunked_scoring_refuses_bad_input():
    from biaskit.studies.distributed import score_sentences_distributed

    with pytest.raises(ValueError, match="no sentences"):
        score_sentences_distributed("tiny-causal", [], scheduler="dask")
    with pytest.raises(ValueError, match="chunk_size must be at least 1"):
        score_sentences_distributed("tiny-causal", ["a"], chunk_size=0, scheduler="dask")


@pytest.mark.slow
def test_the_default_install_never_imports_dask():
    """Dask is an optional extra: importing the runner and this module, and a local grid, do not load it."""
    import subprocess
    import sys

    code = (
        "import sys, biaskit.studies.grid, biaskit.studies.distributed, biaskit.__main__\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')], 'dask imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
def test_cli_score_on_dask_equals_local_and_resumes(cluster_client, tmp_path, monkeypatch, capsys, caplog):
    from biaskit.__main__ import main

    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "cache"))
    text = tmp_path / "s.txt"
    text.write_text(
        "the nurse said she would come .\n\nthe doctor said he would come .\nthe pilot left .\n",
        encoding="utf-8",
    )
    local, dask = tmp_path / "local.csv", tmp_path / "dask.csv"
    with caplog.at_level("WARNING"):
        assert main(["score", "tiny-causal", str(text), "--out", str(local), "--no-progress"]) == 0
    assert "skipped 1 blank line(s) (lines 2)" in caplog.text  # the blank line is named, not lost
    args = ["score", "tiny-causal", str(text), "--out", str(dask), "--scheduler", "dask", "--workers", "2"]
    assert main([*args, "--chunk-size", "2", "--no-progress"]) == 0
    assert "3 sentence(s) scored with ll (3 computed, 0 from the cache)" in capsys.readouterr().out
    a, b = pd.read_csv(local), pd.read_csv(dask)
    assert list(a["sentence"]) == list(b["sentence"]) and len(a) == 3
    np.testing.assert_allclose(a["score"], b["score"], rtol=1e-5, atol=1e-4)
    # run again, on a running cluster given by its address: everything comes from the shared cache
    args[args.index("dask")] = cluster_client.scheduler.address
    assert main([*args, "--chunk-size", "2", "--no-progress"]) == 0
    assert "(0 computed, 3 from the cache)" in capsys.readouterr().out
