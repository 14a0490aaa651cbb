"""BIAS_PMI for the thesis's 30 neutral groups x 2 characteristics: one sparse pass vs a naive scan.

The naive reference is the thesis's own algorithm (``computing_PMI.calc_fY_Z_fY_nZ`` in github
nicolaMaddalozzo/biashandler): for every group X and every attribute set, scan all sentences and
test ``any(word in sentence ...)``.  The fast path builds one sentence x vocabulary incidence
matrix and gets every count from two sparse products (:func:`biaskit.metrics.pmi.bias_pmi_table`).
Both run on the same preprocessed corpus and must give identical counts (checked here).
"""

from __future__ import annotations

import logging

from benchmarks import best_of
from biaskit.data.corpus import load_corpus
from biaskit.data.wordlists import load_seed_groups, thesis_neutral_groups
from biaskit.metrics.pmi import SentenceIncidence, bias_pmi_table


def _naive_counts(sentences, X, A):
    f_ax = f_anx = 0
    for s in sentences:
        if any(w in s for w in A):
            if any(w in s for w in X):
                f_ax += 1
            else:
                f_anx += 1
    return f_ax, f_anx


def run(quick: bool = False) -> list[dict]:
    name = "europarl-es-sample"
    sentences = load_corpus(name)
    if quick:  # every 4th sentence: still has seeds of all four attribute sets
        sentences = sentences[::4]
    groups = load_seed_groups()
    targets = thesis_neutral_groups(groups)
    chars = {
        "gender": (groups["espacio_m"], groups["espacio_f"]),
        "religion": (groups["christianity words"], groups["islam words"]),
    }
    quiet = [logging.getLogger(n) for n in ("biaskit.data.wordlists", "biaskit.metrics.pmi")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.ERROR)
    try:
        fast_s, table = best_of(lambda: bias_pmi_table(targets, chars, sentences), 5)
        inc = SentenceIncidence(sentences)
        count_s, _ = best_of(lambda: bias_pmi_table(targets, chars, inc), 5)

        def naive():
            out = {}
            for ch, (A, B) in chars.items():
                for g, X in targets.items():
                    out[(ch, g)] = _naive_counts(sentences, X, A) + _naive_counts(sentences, X, B)
            return out

        naive_s, ref = best_of(naive, 1)
    finally:
        for lg, lv in zip(quiet, levels, strict=True):
            lg.setLevel(lv)
    for _, row in table.iterrows():
        got = (row.f_AX, row.f_AnX, row.f_BX, row.f_BnX)
        if got != ref[(row.characteristic, row.group)]:
            raise AssertionError(f"fast and naive counts differ for {row.characteristic}/{row.group}")
    note = f"{len(sentences)} sentences ({name}), 30 groups x 2 characteristics, counts identical"
    return [
        {
            "name": "pmi: 30 groups x 2 chars, one pass incl. matrix build",
            "fast_s": fast_s,
            "naive_s": naive_s,
            "note": note,
        },
        {
            "name": "pmi: 30 groups x 2 chars, prebuilt incidence matrix",
            "fast_s": count_s,
            "naive_s": naive_s,
            "note": note,
        },
    ]


if __name__ == "__main__":
    for r in run():
        print(
            f"{r['name']:<58} naive {r['naive_s']:.3f}s fast {r['fast_s']:.4f}s ratio "
            f"{r['naive_s'] / r['fast_s']:.1f}x"
        )
