"""Seed 002's CDS debiasing at the thesis's size, run once outside the notebook and kept as a record.

Barza (2023, seed 002 sections 5.2.1 and 6.3.1, Table 4) fine-tunes BERT on all of CDS-GAP (the GAP
sentences with every gendered word swapped) for Bartl et al.'s three passes and measures the template test
(APPD) and the sentence pairs (ASLD) before and after.  Notebook 15 runs a reduced version (2,000 sentences,
one pass) in minutes; the thesis's size (all 13,329 sentences x 3 passes = 39,987 steps at one sentence per
step) takes longer than a notebook should on a CPU, so :func:`run_cds_record` runs it once and writes::

    records/cds_full/record.json   parameters, model file hashes, machine, versions and commit, dates,
                                   wall time, and the results: the template test before / after per
                                   category (``compare_tbe``), the sentence-pair gaps before / after per pair
                                   set (``compare_sbe``), every profession's APPD before / after, the
                                   shrinkage line, and the held-out pseudo-perplexity before / after

``python scripts/record_cds.py`` runs it; notebook 15 reads the record when it is there
(:func:`load_cds_record`).  The fine-tune is cached like every fine-tune of notebook 15 (same model,
sentences and settings), so a notebook run with ``full=True`` finds it finished.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from biaskit.studies import run_provenance as rp

__all__ = [
    "RECORD_FILE",
    "THESIS_SIZE",
    "WHAT",
    "CDSRecord",
    "default_record_dir",
    "load_cds_record",
    "run_cds_record",
]

RECORD_FILE = rp.RECORD_FILE
WHAT = "seed 002 (Barza 2023) Table 4: CDS-GAP debiasing at the thesis's size, recorded run"
#: the thesis's size: all of CDS-GAP, Bartl et al.'s 3 passes, BERT-base (seed 002 sections 5.2.1, 6.3.1)
THESIS_SIZE: dict[str, Any] = {"sentences": "all of CDS-GAP", "epochs": 3, "model": "bert-base-uncased"}


def default_record_dir() -> Path | None:
    """``<repository>/records/cds_full`` in a checkout; ``None`` when installed from a wheel."""
    return rp.record_dir("cds_full")


@dataclass
class CDSRecord:
    """A recorded CDS-GAP debiasing fine-tune: ``meta`` (the whole ``record.json``) and its results as
    tables."""

    path: Path
    meta: dict[str, Any]

    @property
    def tbe_before_after(self) -> pd.DataFrame:
        """One row per category (and ``all occupations``), as
        :func:`biaskit.metrics.gender_templates.compare_tbe`."""
        return pd.DataFrame(self.meta["results"]["tbe_before_after"])

    @property
    def sbe_before_after(self) -> pd.DataFrame:
        """One row per pair set (and ``combined``), as
        :func:`biaskit.metrics.gender_templates.compare_sbe`."""
        return pd.DataFrame(self.meta["results"]["sbe_before_after"])

    @property
    def appd(self) -> pd.DataFrame:
        """One row per profession: ``category``, ``profession``, ``expected_sign``, ``appd_before``,
        ``appd_after``."""
        return pd.DataFrame(self.meta["results"]["appd"])

    def provenance(self) -> str:
        """One sentence: what ran, on which model and machine, when, how long, and how it differs from the
        thesis."""
        p = self.meta["parameters"]
        differs = []
        if p["sentences"] != p["sentences_available"]:
            differs.append(f"{p['sentences']:,} sentences instead of all {p['sentences_available']:,}")
        if p["epochs"] != THESIS_SIZE["epochs"]:
            differs.append(f"{p['epochs']} pass(es) instead of {THESIS_SIZE['epochs']}")
        return rp.fine_tune_provenance(
            self.path,
            self.meta,
            corpus="CDS-GAP",
            reference="the thesis",
            reference_model=THESIS_SIZE["model"],
            differs=differs,
        )


def load_cds_record(path: str | Path | None = None) -> CDSRecord | None:
    """Read a record folder (default :func:`default_record_dir`); ``None`` when there is none.

    ``ValueError`` when ``record.json`` is not a CDS record or lacks its provenance (parameters, model
    hashes, machine, versions, dates) or its results.
    """
    folder = Path(path) if path is not None else default_record_dir()
    need = ("parameters", *rp.PROVENANCE_KEYS, "results")
    meta = rp.read_record(folder, what=WHAT, kind="a CDS debiasing record", need=need)
    return None if meta is None or folder is None else CDSRecord(path=folder, meta=meta)


def run_cds_record(
    out_dir: str | Path,
    *,
    model: str = "en-mlm",
    sentences: int | None = None,
    epochs: int = 3,
    seed: int = 0,
    batch_size: int = 64,
    n_neutral: int = 300,
    categories: Sequence[str] | None = None,
    max_pairs_per_set: int | None = None,
    progress: bool = True,
) -> CDSRecord:
    """Fine-tune ``model`` on CDS-GAP and record Table 4's measures before and after (seed 002, Table 4).

    ``sentences``: ``None`` for all of CDS-GAP (the thesis), else the first ``sentences`` of notebook 15's
    draw (:func:`biaskit.debiasing.cds.cds_gap_corpus`); ``epochs``: passes (Bartl: 3); the other settings
    are Bartl et al.'s (:data:`biaskit.training.fine_tune.BARTL`: lr 2e-5, one sentence per step, seed 42).
    The measures are notebook 15's section 3: the template test on TBD's clean templates, the three
    stand-in pair sets (:func:`biaskit.debiasing.cds.sbe_evaluation_pairs`) and the pseudo-perplexity on
    ``n_neutral`` held-out gender-free sentences.  ``categories`` and ``max_pairs_per_set`` shrink the
    measures (a timing run or a test).  The record is written atomically when the run ends.
    """
    from biaskit.debiasing import cds as db
    from biaskit.lm import get_masked_lm
    from biaskit.metrics import gender_templates as gt
    from biaskit.training.fine_tune import fine_tune, fine_tune_record
    from biaskit.training.pretrain import pseudo_perplexity

    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    t0 = time.perf_counter()
    started = rp.now()
    base = get_masked_lm(model)
    full = db.cds_gap_corpus(None, seed=seed)
    corpus = full if sentences is None else db.cds_gap_corpus(sentences, seed=seed)
    config = db.ExperimentPreset(name="CDS record", n_debias=sentences, epochs=epochs).config()
    tuned = fine_tune(base, corpus.sentences, config=config, progress=progress)
    record = fine_tune_record(tuned)
    instances = gt.build_tbd_instances("clean", categories=categories)
    pairs = db.sbe_evaluation_pairs(tbd_instances=instances)
    if max_pairs_per_set is not None:
        pairs = pairs.groupby("category", sort=False).head(max_pairs_per_set).reset_index(drop=True)
    neutral = db.neutral_held_out_sentences(n_neutral)
    before = gt.pronoun_probability_difference(base, instances, batch_size=batch_size)
    after = gt.pronoun_probability_difference(tuned, instances, batch_size=batch_size)
    a_before, a_after = gt.appd(before), gt.appd(after)
    cmp = gt.appd_before_after(a_before, a_after)
    ordinary = cmp[cmp["expected_sign"] == 0]
    shrink = gt.appd_shrinkage(ordinary["appd_before"], ordinary["appd_after"])
    sbe = gt.compare_sbe(gt.score_sentence_pairs(base, pairs), gt.score_sentence_pairs(tuned, pairs))
    pppl_before, n_tokens = pseudo_perplexity(base, neutral)
    pppl_after, _ = pseudo_perplexity(tuned, neutral)

    meta = {
        "what": WHAT,
        "thesis": THESIS_SIZE,
        "parameters": {
            "model": model,
            "sentences": len(corpus.sentences),
            "sentences_available": len(full.sentences),
            "sentences_swapped": int(corpus.n_swapped),
            "epochs": epochs,
            "seed": seed,
            "batch_size": batch_size,
            "categories": list(categories) if categories is not None else "all",
            "pairs": {str(k): int(v) for k, v in pairs["category"].value_counts(sort=False).items()},
            "neutral_sentences": len(neutral),
            "corpus": "biaskit.debiasing.cds.cds_gap_corpus(None if all else sentences, seed=seed)",
            "fine_tune": asdict(config),
        },
        **rp.run_fields(model, rp.model_identity(base), started, training=record),
        "results": {
            "tbe_before_after": gt.compare_tbe(before, after).to_dict(orient="records"),
            "sbe_before_after": sbe.to_dict(orient="records"),
            "appd": cmp[["category", "profession", "expected_sign", "appd_before", "appd_after"]].to_dict(
                orient="records"
            ),
            "shrinkage": {k: v for k, v in shrink.items() if k != "pearson"},
            "pseudo_perplexity": {
                "before": float(pppl_before),
                "after": float(pppl_after),
                "rise": float(pppl_after / pppl_before - 1),
                "tokens": int(n_tokens),
            },
        },
        "finished": rp.now(),
        "wall_seconds": time.perf_counter() - t0,
    }
    return CDSRecord(path=Path(out_dir), meta=rp.write_record(out_dir, meta))
