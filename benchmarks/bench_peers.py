"""biaskit against the tools a user would otherwise use, side by side in one run.

Same model object, same sentences, same dtype (float32), one thread for everyone (torch, BLAS and the
tokenizers), process CPU seconds, contenders interleaved and the best of ``repeat`` runs kept.  Every row
states the largest difference between the two tools' scores, so that no speed is bought with other numbers.
``naive_s`` is the peer's time, ``fast_s`` biaskit's: the printed ratio is peer / biaskit.

* **causal log-likelihood** (``score_pairs(lm, more, less, "ll")``) against lm-evaluation-harness 0.4.13
  ``HFLM.loglikelihood`` on ``("", sentence)`` requests, the code path of its ``crows_pairs`` task, with
  batch sizes 16 and 64 (the better one is the peer's time); on the bundled ``en-clm`` (all English
  CrowS-Pairs it can read) and on a random model of GPT-2 small's shape (12 x 768, ``en-clm``'s 8,000-word
  vocabulary; 300 pairs);
* **masked scores** ``cp`` and ``sz`` against the mlm-bias package 0.1.7 (its CrowS-Pairs scoring: ``BiasMLM``
  with the ``csps`` measure, the official ``metric.py`` masking; and its ``compute_csps`` with every token
  masked for ``sz``), on the bundled ``en-mlm`` and a random model of BERT-base's shape;
* **WEFE's metrics** (RND, RNSB, ECT, MAC, RIPA) against WEFE 1.0.1 itself on its ``test_model.kv`` and the
  queries of ``tests/metrics/test_embedding_bias.py`` (biaskit's permutation tests and bootstrap intervals,
  which WEFE does not compute, switched off with ``n_permutations=0`` and ``n_bootstrap=0``: the same work);
* the **roofline**: floating-point throughput of the causal and masked scorers at GPT-2-small / BERT-base
  shape (FLOPs of the matrix products the scorer must do, on the real tokens, over its CPU time) against the
  machine's one-thread sgemm on the same matrix shapes (``naive_s`` = the time sgemm alone would take, so
  the ratio is the share of the sgemm throughput reached).

The padding of biaskit's batches (share of pad tokens) is in every note, with the share of tokens a causal
prefix tree read once, and the padding the previous batching (64 sentences per pass, sorted within each cache
chunk) had on the same sentences.  Peers that are not installed (``make bench`` installs them when it can)
give a ``skipped`` row saying why.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchmarks import _peers as P


def _skip(name: str, why: str) -> dict[str, Any]:
    return {"name": name, "skipped": why}


def _old_pad_share(lengths_by_example: list[list[int]]) -> float:
    """Padding of the batching before token-budget batching, on the same inputs: examples in row order, chunks
    of ``ceil(64 * 16 / items per example)`` examples, each chunk sorted by length, 64 sequences per pass."""
    n_items = sum(len(x) for x in lengths_by_example)
    per = max(1, math.ceil(64 * 16 / max(1.0, n_items / max(1, len(lengths_by_example)))))
    tokens = slots = 0
    for c0 in range(0, len(lengths_by_example), per):
        lens = np.sort(np.concatenate([np.asarray(x) for x in lengths_by_example[c0 : c0 + per]]))[::-1]
        for b0 in range(0, len(lens), 64):
            b = lens[b0 : b0 + 64]
            tokens += int(b.sum())
            slots += len(b) * int(b.max())
    return 1 - tokens / slots if slots else 0.0


# ================================================================================================ causal
def _causal(quick: bool, repeat: int) -> list[dict[str, Any]]:
    from biaskit.lm import get_lm, score_pairs
    from biaskit.lm.causal import encode_causal_sentence

    why = P.peer_missing("lm-eval")
    configs = [
        ("en-clm", get_lm("en-clm"), 150 if quick else None),
        ("GPT-2 small shape", P.base_shaped_causal(), 20 if quick else 300),
    ]
    rows: list[dict[str, Any]] = []
    for label, lm, n in configs:
        more, less = P.crows_pairs_for(lm, n, masked=False)
        sents = [s for p in zip(more, less, strict=True) for s in p]
        name = (
            f"causal ll vs lm-evaluation-harness, {label}, {len(more)} CrowS pairs ({len(sents)} sentences)"
        )

        def ours(lm=lm, more=more, less=less):
            return score_pairs(lm, more, less, "ll", cache=False, progress=False)

        fns = {"biaskit": ours}
        if why is None:
            h16, h64 = P.harness(lm, 16), P.harness(lm, 64)
            fns["harness bs 16"] = lambda h=h16, s=sents: P.harness_loglikelihood(h, s)
            fns["harness bs 64"] = lambda h=h64, s=sents: P.harness_loglikelihood(h, s)
        best, out = P.interleaved(fns, repeat)
        res = out["biaskit"]
        b = res.batching
        seq_lens = [
            [len(encode_causal_sentence(lm, s)[0]) - 1 for s in (x, y)]
            for x, y in zip(more, less, strict=True)
        ]
        before = _old_pad_share(seq_lens)
        pad = {"pad_share": b["pad_share"], "pad_share_before": before, "shared_share": b["shared_share"]}
        pad_note = (
            f"pad {b['pad_share']:.1%} (before: {before:.1%}), "
            f"prefix tree reads {b['shared_share']:.0%} fewer tokens, {b['batches']} passes"
        )
        if why is None:
            ours_v = np.ravel(np.column_stack([res.scores["sent_more_score"], res.scores["sent_less_score"]]))
            peer = min(("harness bs 16", "harness bs 64"), key=lambda k: best[k])
            diff = max(float(np.max(np.abs(out[k] - ours_v))) for k in ("harness bs 16", "harness bs 64"))
            rows.append(
                {
                    "name": name,
                    "naive_s": best[peer],
                    "fast_s": best["biaskit"],
                    "peer": f"lm-eval {peer}",
                    "max_abs_diff": diff,
                    **pad,
                    "note": f"CPU s, 1 thread; peer = {peer} (bs 16 {best['harness bs 16']:.2f} s, bs 64 "
                    f"{best['harness bs 64']:.2f} s); max |diff| {diff:.1e} nats; {pad_note}",
                }
            )
        else:
            rows.append(_skip(name, why))
        if label != "en-clm":  # the roofline at GPT-2 small's shape
            flops = P.causal_flops(lm, b["tokens"], b["tokens"])
            name = f"roofline: causal ll, {label}, {len(sents)} sentences, vs 1-thread sgemm"
            rows.append(
                _roofline(name, lm, flops, best["biaskit"], pad, f"{b['tokens']:,} tokens read, {pad_note}")
            )
    return rows


def _roofline(name: str, lm, flops: float, seconds: float, pad: dict[str, Any], read: str) -> dict[str, Any]:
    """A roofline row: ``flops`` done in ``seconds`` against the best of two 1-thread sgemm runs on ``lm``'s
    layer shapes (``naive_s``: the time at that rate; the note ends with ``read``)."""
    sg = max(P.sgemm_gflops(P.layer_shapes(lm)) for _ in range(2))
    return {
        "name": name,
        "naive_s": flops / sg / 1e9,
        "fast_s": seconds,
        "gflops": flops / seconds / 1e9,
        "sgemm_gflops": sg,
        **pad,
        "note": f"{flops / seconds / 1e9:.1f} GFLOP/s of {sg:.1f} (sgemm on the layer shapes, 2048 rows); "
        f"ratio = share of sgemm reached; {read}",
    }


# ================================================================================================ masked
def _masked(quick: bool, repeat: int) -> list[dict[str, Any]]:
    from biaskit.lm import get_lm, score_pairs, score_sentences

    why = P.peer_missing("mlm-bias")
    configs = [
        ("en-mlm", get_lm("en-mlm"), 100 if quick else 600),
        ("BERT-base shape", P.base_shaped_masked(), 4 if quick else 12),
    ]
    rows: list[dict[str, Any]] = []
    for label, lm, n in configs:
        more, less = P.crows_pairs_for(lm, n, masked=True)
        sents = [s for p in zip(more, less, strict=True) for s in p]
        for metric in ("cp", "sz"):
            name = f"masked {metric} vs mlm-bias, {label}, {len(more)} CrowS pairs"

            if metric == "cp":

                def ours(lm=lm, more=more, less=less):
                    return score_pairs(lm, more, less, "cp", cache=False, progress=False)

                def peer(lm=lm, more=more, less=less):
                    return P.mlm_bias_cp(lm, more, less)
            else:

                def ours(lm=lm, sents=sents):
                    return score_sentences(lm, sents, "sz", cache=False, progress=False, unk="score")

                def peer(lm=lm, sents=sents):
                    return P.mlm_bias_pll(lm, sents)

            fns = {"biaskit": ours}
            if why is None:
                fns["mlm-bias"] = peer
            best, out = P.interleaved(fns, repeat)
            res = out["biaskit"]
            b = res.batching
            if metric == "cp":
                ours_v = np.r_[res.scores["sent_more_score"], res.scores["sent_less_score"]]
                copies = [
                    [len(lm.tokenizer.encode(s))] * n_
                    for s, n_ in zip(
                        more + less, list(res.scores["n_more"]) + list(res.scores["n_less"]), strict=True
                    )
                ]
            else:
                ours_v = res.scores["score"].to_numpy()
                copies = [[len(lm.tokenizer.encode(s))] * (len(lm.tokenizer.encode(s)) - 2) for s in sents]
            lens = np.concatenate([np.asarray(c) for c in copies])
            per_example = (
                [a + c for a, c in zip(copies[: len(copies) // 2], copies[len(copies) // 2 :], strict=True)]
                if metric == "cp"
                else copies
            )
            before = _old_pad_share(per_example)
            pad = {"pad_share": b["pad_share"], "pad_share_before": before}
            pad_note = (
                f"pad {b['pad_share']:.2%} (before: {before:.2%}), {b['batches']} passes, "
                f"{b['rows']:,} masked copies"
            )
            if why is None:
                pv = np.r_[out["mlm-bias"][0], out["mlm-bias"][1]] if metric == "cp" else out["mlm-bias"]
                diff = float(np.max(np.abs(pv - ours_v)))
                rows.append(
                    {
                        "name": name,
                        "naive_s": best["mlm-bias"],
                        "fast_s": best["biaskit"],
                        "peer": "mlm-bias 0.1.7",
                        "max_abs_diff": diff,
                        **pad,
                        "note": f"CPU s, 1 thread; max |diff| {diff:.1e} nats; {pad_note}",
                    }
                )
            else:
                rows.append(_skip(name, why))
            if label != "en-mlm" and metric == "cp":
                flops = P.masked_flops(lm, lens)
                name = f"roofline: masked cp, {label}, {b['rows']:,} masked copies, vs 1-thread sgemm"
                rows.append(_roofline(name, lm, flops, best["biaskit"], pad, pad_note))
    return rows


# ================================================================================================ WEFE
def _wefe(quick: bool, repeat: int) -> list[dict[str, Any]]:
    why = P.peer_missing("wefe")
    names = ("RND", "RNSB", "ECT", "MAC", "RIPA")
    if why is not None:
        return [_skip(f"WEFE {m} vs wefe 1.0.1", why) for m in names]
    from pathlib import Path

    import wefe
    from gensim.models import KeyedVectors
    from wefe import metrics as W
    from wefe.datasets import load_weat
    from wefe.query import Query
    from wefe.word_embedding_model import WordEmbeddingModel

    from biaskit.metrics import embedding_bias as E

    kv = KeyedVectors.load(str(Path(wefe.__file__).parent / "datasets" / "data" / "test_model.kv"))
    model = WordEmbeddingModel(kv, "test")
    sets = {k: [w for w in v if w in kv.key_to_index] for k, v in load_weat().items()}
    two_one = [
        ([sets["female_terms"], sets["male_terms"]], [sets["family"]]),
        ([sets["female_terms"], sets["male_terms"]], [sets["career"]]),
        ([sets["flowers"], sets["insects"]], [sets["pleasant_5"]]),
    ]
    two_two = [
        ([sets["female_terms"], sets["male_terms"]], [sets["family"], sets["career"]]),
        ([sets["flowers"], sets["insects"]], [sets["pleasant_5"], sets["unpleasant_5a"]]),
    ]
    f_m = [
        (f, m)
        for f, m in zip(
            ["female", "woman", "girl", "sister", "she", "her", "hers", "daughter"],
            ["male", "man", "boy", "brother", "he", "him", "his", "son"],
            strict=True,
        )
        if f in kv.key_to_index and m in kv.key_to_index
    ]
    ripa_q = [
        ([[p[0] for p in f_m], [p[1] for p in f_m]], [sets[a]]) for a in ("family", "career", "pleasant_5")
    ]

    def query(t, a):
        return Query(
            [list(x) for x in t],
            [list(x) for x in a],
            [f"T{i}" for i in range(len(t))],
            [f"A{i}" for i in range(len(a))],
        )

    estimate_only = {"n_permutations": 0}
    specs = {
        "RND": (two_one, W.RND, "rnd", {}, E.RND(**estimate_only, n_bootstrap=0)),
        "RNSB": (two_two, W.RNSB, "rnsb", {"random_state": 0}, E.RNSB(random_state=0, n_permutations=0)),
        "ECT": (two_one, W.ECT, "ect", {}, E.ECT(**estimate_only)),
        "MAC": (two_two, W.MAC, "mac", {}, E.MAC(**estimate_only, n_bootstrap=0)),
        "RIPA": (ripa_q, W.RIPA, "ripa", {}, E.RIPA(**estimate_only, n_bootstrap=0)),
    }
    loops = 2 if quick else 100
    rows = []
    for m in names:
        queries, wcls, key, wkw, ours_metric = specs[m]

        def peer(queries=queries, wcls=wcls, key=key, wkw=wkw):
            return [
                wcls().run_query(query(t, a), model, **wkw)[key] for _ in range(loops) for t, a in queries
            ]

        def ours(queries=queries, ours_metric=ours_metric):
            return [ours_metric.run(t, a, kv).estimate for _ in range(loops) for t, a in queries]

        best, out = P.interleaved({"wefe": peer, "biaskit": ours}, repeat)
        diff = float(
            np.max(np.abs(np.asarray(out["wefe"], dtype=float) - np.asarray(out["biaskit"], dtype=float)))
        )
        rows.append(
            {
                "name": f"WEFE {m} vs wefe 1.0.1, {len(queries)} queries of test_model.kv x {loops}",
                "naive_s": best["wefe"],
                "fast_s": best["biaskit"],
                "peer": "wefe 1.0.1",
                "max_abs_diff": diff,
                "note": "CPU s, 1 thread; estimate with per-word details (biaskit: no test, "
                f"n_permutations=0, no bootstrap); max |diff| {diff:.1e}",
            }
        )
    return rows


def run(quick: bool = False) -> list[dict]:
    repeat = 1 if quick else 2
    with P.one_thread():
        return [*_causal(quick, repeat), *_masked(quick, repeat), *_wefe(quick, 1 if quick else 3)]


if __name__ == "__main__":  # pragma: no cover
    for r in run(quick=True):
        print(r)
