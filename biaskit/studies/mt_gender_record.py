"""Seed 002's MT Gender fine-tune at the study's size, run once outside the notebook and kept as a record.

Barza (2023, seed 002 section 6.1, experiment E3) fine-tunes BERT on the 3,888 sentences of MT Gender
(WinoBias + Winogender, Stanovsky et al. 2019) for Bartl et al.'s three passes and draws each profession's
APPD before and after (Figs. 8-9, 14-19).  Notebook 15 section 9 runs a reduced version (a sample of 600
sentences, one pass) in minutes; the study's size (3,888 x 3 = 11,664 steps at one sentence per step) takes
longer than a notebook should on a CPU, so :func:`run_mt_gender_record` runs it once and writes::

    records/mt_gender/record.json   parameters, model file hashes, machine, versions and commit, dates,
                                    wall time, and the results: the template test before / after per
                                    category (``compare_tbe``), every profession's APPD before / after
                                    and whether the fine-tuning text mentions it, the shrinkage line

``python scripts/record_mt_gender.py`` runs it (the same command with other arguments makes a timing run
elsewhere); notebook 15 reads the record when it is there (:func:`load_mt_gender_record`).  The
fine-tune is cached like every fine-tune of notebook 15 (same model, sentences and settings), so a notebook
run with ``full=True`` finds it finished.
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
    "STUDY_SIZE",
    "WHAT",
    "MTGenderRecord",
    "default_record_dir",
    "load_mt_gender_record",
    "run_mt_gender_record",
]

RECORD_FILE = rp.RECORD_FILE
WHAT = "seed 002 (Barza 2023) section 6.1: MT Gender fine-tune, recorded run"
#: the study's size: all 3,888 MT Gender sentences, Bartl et al.'s 3 passes, BERT-base (seed 002 section 6.1)
STUDY_SIZE: dict[str, Any] = {"sentences": 3888, "epochs": 3, "model": "bert-base-uncased"}


def default_record_dir() -> Path | None:
    """``<repository>/records/mt_gender`` in a checkout; ``None`` when installed from a wheel."""
    return rp.record_dir("mt_gender")


@dataclass
class MTGenderRecord:
    """A recorded MT Gender fine-tune: ``meta`` (the whole ``record.json``) and its results as tables."""

    path: Path
    meta: dict[str, Any]

    @property
    def tbe_before_after(self) -> pd.DataFrame:
        """One row per category (and ``all occupations``), as
        :func:`biaskit.metrics.gender_templates.compare_tbe`."""
        return pd.DataFrame(self.meta["results"]["tbe_before_after"])

    @property
    def appd(self) -> pd.DataFrame:
        """One row per profession: ``category``, ``profession``, ``appd_before``, ``appd_after``,
        ``in_corpus``."""
        return pd.DataFrame(self.meta["results"]["appd"])

    def provenance(self) -> str:
        """One sentence: what ran, on which model and machine, when, how long, and how it differs from the
        study."""
        p = self.meta["parameters"]
        differs = []
        if p["sentences"] != STUDY_SIZE["sentences"]:
            differs.append(f"{p['sentences']:,} sentences instead of {STUDY_SIZE['sentences']:,}")
        if p["epochs"] != STUDY_SIZE["epochs"]:
            differs.append(f"{p['epochs']} pass(es) instead of {STUDY_SIZE['epochs']}")
        return rp.fine_tune_provenance(
            self.path,
            self.meta,
            corpus="MT Gender",
            reference="the study",
            reference_model=STUDY_SIZE["model"],
            differs=differs,
        )


def load_mt_gender_record(path: str | Path | None = None) -> MTGenderRecord | None:
    """Read a record folder (default :func:`default_record_dir`); ``None`` when there is none.

    ``ValueError`` when ``record.json`` is not an MT Gender record or lacks its provenance (parameters,
    model hashes, machine, versions, dates) or its results.
    """
    folder = Path(path) if path is not None else default_record_dir()
    need = ("parameters", *rp.PROVENANCE_KEYS, "results")
    meta = rp.read_record(folder, what=WHAT, kind="an MT Gender record", need=need)
    return None if meta is None or folder is None else MTGenderRecord(path=folder, meta=meta)


def run_mt_gender_record(
    out_dir: str | Path,
    *,
    model: str = "en-mlm",
    sentences: int | None = None,
    epochs: int = 3,
    seed: int = 0,
    batch_size: int = 64,
    categories: Sequence[str] | None = None,
    progress: bool = True,
) -> MTGenderRecord:
    """Fine-tune ``model`` on MT Gender and record the template test before and after (seed 002 section 6.1).

    ``sentences``: ``None`` for all 3,888 (the study), else a sample of whole counterpart groups
    (:func:`biaskit.data.mt_gender.mt_gender_sample`, as notebook 15); ``epochs``: passes (Bartl: 3);
    the other settings are Bartl et al.'s (:data:`biaskit.training.fine_tune.BARTL`: lr 2e-5, one
    sentence per step, seed 42).  ``categories`` restricts the template test (a timing run).  The record
    is written atomically when the run ends.
    """
    from biaskit.data.mt_gender import load_mt_gender, mt_gender_sample
    from biaskit.debiasing import cds as db
    from biaskit.lm import get_masked_lm
    from biaskit.metrics import gender_templates as gt
    from biaskit.training.fine_tune import fine_tune, fine_tune_record

    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    t0 = time.perf_counter()
    started = rp.now()
    base = get_masked_lm(model)
    mtg = load_mt_gender()
    used = mtg if sentences is None else mt_gender_sample(sentences, seed=seed)
    text = used["sentence"].tolist()
    config = db.ExperimentPreset(name="MT Gender record", n_debias=None, epochs=epochs).config()
    tuned = fine_tune(base, text, config=config, progress=progress)
    record = fine_tune_record(tuned)
    instances = gt.build_tbd_instances("clean", categories=categories)
    before = gt.pronoun_probability_difference(base, instances, batch_size=batch_size)
    after = gt.pronoun_probability_difference(tuned, instances, batch_size=batch_size)
    a_before, a_after = gt.appd(before), gt.appd(after)
    cmp = gt.appd_before_after(a_before, a_after)
    mentions = db.professions_in_corpus(cmp["profession"].tolist(), text)
    cmp["in_corpus"] = cmp["profession"].map(lambda p: mentions.get(p, 0) > 0)
    ordinary = cmp[cmp["expected_sign"] == 0]
    shrink = gt.appd_shrinkage(ordinary["appd_before"], ordinary["appd_after"])

    def kept(d: pd.DataFrame) -> float | None:
        return float(d["appd_after"].abs().mean() / d["appd_before"].abs().mean()) if len(d) else None

    meta = {
        "what": WHAT,
        "study": STUDY_SIZE,
        "parameters": {
            "model": model,
            "sentences": len(text),
            "epochs": epochs,
            "seed": seed,
            "batch_size": batch_size,
            "categories": list(categories) if categories is not None else "all",
            "draw": "all of MT Gender" if sentences is None else "biaskit.data.mt_gender.mt_gender_sample",
            "fine_tune": asdict(config) if hasattr(config, "__dataclass_fields__") else dict(vars(config)),
        },
        **rp.run_fields(model, rp.model_identity(base), started, training=record),
        "results": {
            "tbe_before_after": gt.compare_tbe(before, after).to_dict(orient="records"),
            "appd": cmp[
                ["category", "profession", "expected_sign", "appd_before", "appd_after", "in_corpus"]
            ].to_dict(orient="records"),
            "shrinkage": {k: v for k, v in shrink.items() if k != "pearson"},
            "lean_kept_in_text": kept(ordinary[ordinary["in_corpus"]]),
            "lean_kept_not_in_text": kept(ordinary[~ordinary["in_corpus"]]),
        },
        "finished": rp.now(),
        "wall_seconds": time.perf_counter() - t0,
    }
    return MTGenderRecord(path=Path(out_dir), meta=rp.write_record(out_dir, meta))
