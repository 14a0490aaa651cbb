r"""Which bias metric can you trust?  Every calibration measure on planted controls retrained with several
seeds.

The calibration (:mod:`biaskit.studies.calibration`, notebook 14) measures each bias measure on *one* model
per planted strength ``s`` (0.5 = nothing planted ... 0.9), trained with training seed 0.  A measure's number
on one model mixes what was planted with what that training run happened to learn.  This study retrains every
planted control with ``k`` training seeds (same planted corpus, same starting model, same recipe: only
:func:`biaskit.training.recipes.recipe` ``(name, seed=k)`` /
:func:`~biaskit.training.recipes.planted_w2v_vectors` ``(s, seed=k)`` differ; the bundled models are seed 0),
measures each model with every registered calibration measure of its kind
(:func:`biaskit.studies.calibration.run_calibration`, so a plug-in metric's measure joins without code here),
and asks of every measure:

**seed spread**
    the standard deviation (``ddof = 1``) and range of its effect over the seeds at each ``s``;
**sensitivity**
    the least-squares slope of the effect against ``s`` over all models, with a 95 % percentile interval from
    a *seed bootstrap* (the seeds of each ``s`` drawn with replacement, :data:`N_BOOT` times), and the slope
    per 0.1 of ``s`` in units of the pooled within-``s`` seed SD (a scale-free signal-to-noise ratio);
**smallest detectable strength**
    the smallest planted ``s`` > 0.5 at which the measure's *own* test (the one its study uses) finds the
    planted direction (oriented effect toward the plan and ``p < alpha``) in at least 80 % of the seeds;
**false alarms**
    the share of the balanced (``s = 0.5``) seeds whose own test flags a bias (``p < alpha``, either
    direction; the share of *models*, with a Clopper-Pearson interval), beside notebook 14's within-model
    rates (:func:`biaskit.studies.calibration.false_positive_rate`: random relabellings of one balanced
    model's professions), averaged over the balanced seeds;
**reliability**
    the intraclass correlation **ICC(2,1)** (Shrout & Fleiss 1979; McGraw & Wong 1996's ICC(A,1): two-way
    random effects, absolute agreement, one rater) of the ``n`` strengths ("subjects") x ``k`` seeds
    ("raters") table,

    .. math:: ICC(2,1) = \frac{MS_R - MS_E}{MS_R + (k-1) MS_E + k (MS_C - MS_E) / n},

    the share of the variance of one model's number that the planted strength explains rather than the
    seed; and **split-half reliability** across items: the professions are split at random into two halves
    (stratified by planted direction, each profession with all its items, since a profession's items are not
    independent), the effect is computed on each half of every model
    (:func:`biaskit.studies.calibration.evaluate`), :math:`r` is the Pearson correlation of the two halves'
    effects over the models and the Spearman-Brown step-up :math:`\rho = 2r / (1 + r)` (Spearman 1910; Brown
    1910) gives the reliability of the whole set; the mean over :data:`N_SPLITS` random splits;
**agreement**
    Kendall's :math:`\tau_b` (:func:`scipy.stats.kendalltau`) between every pair of measures over the models
    both measured; measures of different model kinds are paired by planted strength and seed (different
    models trained on the same corpus), which the table says.

A statistic that cannot be computed for a measure (no test of its own, not a test of direction, one seed, a
constant value ...) is ``None`` with its reason in the statistics' ``reasons``.

**Running.**  :func:`run_trust_study` (``python -m biaskit trust-study``) trains and measures each
``(kind, s, seed)`` as an independent task, here (``scheduler="local"``) or on Dask workers
(:func:`biaskit.studies.distributed.cluster_client`).  A trained model is saved into the cache
(``<cache>/metric-trust/``) with the training layer's sealed save
(:func:`biaskit.lm.loading.save_model_folder` with a key; word vectors with
:func:`biaskit.core.io.write_cache_checksum`) and found finished on a rerun only when its sha256 files vouch
for it (:func:`biaskit.lm.loading.model_folder_problem`, :func:`biaskit.core.io.cache_file_problem`); its
measurements are cached the same way, keyed by the weights' sha256, the settings and the registered measures.
A killed run resumes: a language model from its last checkpoint, a finished model is neither retrained nor
measured again.  The **record** (one JSON per run, rewritten after every finished model) holds, per model, the
recipe, seed, ``s``, held-out (pseudo-)perplexity, the sha256 of its weights and every measure's effect,
p-values and split halves, with the git commit, dates, machine and wall time; the models themselves stay in
the cache.  :func:`load_record` reads records back and :func:`trust_statistics` recomputes every statistic
above from them.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import logging
import os
import platform
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaskit.core.io import (
    atomic_write_text,
    cache_file_problem,
    sha256_file,
    write_cache_checksum,
)
from biaskit.core.paths import REPO_ROOT, in_repository
from biaskit.studies.metric_trust_stats import (
    DETECTION_SHARE,
    N_BOOT,
    TrustStatistics,
    detection_table,
    false_alarm_table,
    icc,
    kendall_agreement,
    plain_number,
    plot_agreement,
    plot_effect_vs_strength,
    ranked_table,
    reliability_table,
    sensitivity_table,
    spearman_brown,
    split_half,
    spread_table,
    statistics_from_json,
    trust_findings,
    trust_statistics,
)

logger = logging.getLogger(__name__)

__all__ = [
    "CALIBRATION_KIND",
    "KINDS",
    "N_SPLITS",
    "RECORD_WHAT",
    "ModelSpec",
    "TrustRecord",
    "default_record_dir",
    "load_record",
    "measure_model",
    "measure_rows",
    "measurement_key",
    "model_dir",
    "planted_directions",
    "profession_splits",
    "run_model",
    "run_trust_study",
    "study_specs",
    "training_key",
    "code_state",
    # the statistics (biaskit.studies.metric_trust_stats), re-exported for the notebook and the tests
    "DETECTION_SHARE",
    "N_BOOT",
    "TrustStatistics",
    "detection_table",
    "false_alarm_table",
    "icc",
    "kendall_agreement",
    "plain_number",
    "plot_agreement",
    "plot_effect_vs_strength",
    "ranked_table",
    "reliability_table",
    "sensitivity_table",
    "spearman_brown",
    "split_half",
    "spread_table",
    "statistics_from_json",
    "trust_findings",
    "trust_statistics",
]

#: the kinds of planted control, each with its bundled seed-0 models: word2vec vectors (``en-planted-w2v``),
#: masked LMs (``en-planted-sXX``) and their causal twins (``en-clm-planted-sXX``)
KINDS: tuple[str, ...] = ("word2vec", "masked", "causal")
#: the calibration's name of each kind's measures (:func:`biaskit.studies.calibration.calibration_measures`)
CALIBRATION_KIND: dict[str, str] = {"word2vec": "static", "masked": "masked", "causal": "causal"}
#: random splits of the professions for the split-half reliability
N_SPLITS = 20
#: what a record describes (its ``what`` field; :func:`load_record` checks it)
RECORD_WHAT = (
    "biaskit metric-trust study: calibration measures on planted controls retrained with several seeds"
)
#: the cache folder of the retrained models and of every model's measurements
CACHE_FOLDER = "metric-trust"
#: version of a cached measurement's layout (a change makes every model be measured again, never retrained)
MEASURE_FORMAT = 2


def default_record_dir() -> Path | None:
    """``<repository>/docs/records/metric_trust`` in a checkout; ``None`` when biaskit is installed from a
    wheel."""
    return REPO_ROOT / "docs" / "records" / "metric_trust" if in_repository() else None


# =============================================================================================
# one model of the study
# =============================================================================================
@dataclass(frozen=True)
class ModelSpec:
    """One model of the study: its ``kind`` (:data:`KINDS`), planted strength ``s`` and training ``seed``."""

    kind: str
    s: float
    seed: int

    def __post_init__(self) -> None:
        from biaskit.lm.catalogue import CONTROL_SKEWS

        if self.kind not in KINDS:
            raise ValueError(f"unknown kind of control {self.kind!r}; known: {', '.join(KINDS)}")
        if not any(np.isclose(self.s, c) for c in CONTROL_SKEWS):
            raise ValueError(f"planted strength {self.s!r} is not a control's; known: {CONTROL_SKEWS}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"a training seed is a whole number >= 0, not {self.seed!r}")

    @property
    def recipe(self) -> str:
        """The bundled model whose recipe it follows (``en-planted-s60``, ``en-clm-planted-s60``,
        ``en-planted-w2v``)."""
        from biaskit.lm.catalogue import causal_control_name, control_name

        if self.kind == "word2vec":
            return "en-planted-w2v"
        return control_name(self.s) if self.kind == "masked" else causal_control_name(self.s)

    @property
    def name(self) -> str:
        """A name for the model: ``en-planted-s60-seed3``, ``en-planted-w2v-s60-seed3``."""
        tail = f"-s{round(self.s * 100):02d}" if self.kind == "word2vec" else ""
        return f"{self.recipe}{tail}-seed{self.seed}"

    @property
    def bundled(self) -> bool:
        """Seed 0 is the bundled model itself (loaded, not retrained)."""
        return self.seed == 0


def study_specs(kinds: Sequence[str], seeds: Iterable[int], skews: Iterable[float]) -> list[ModelSpec]:
    """Every ``(kind, s, seed)`` of a run, in the order they are run: kind by kind, seed by seed, then ``s``
    (a run stopped early has every strength for its first seeds)."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown kind(s) of control {unknown}; known: {', '.join(KINDS)}")
    seeds, skews = sorted({int(k) for k in seeds}), sorted({float(s) for s in skews})
    if not seeds or not skews or not kinds:
        raise ValueError("need at least one kind, one seed and one planted strength")
    return [ModelSpec(kind, s, seed) for kind in kinds for seed in seeds for s in skews]


# =============================================================================================
# shared inputs (memoised per process: a Dask worker builds them once)
# =============================================================================================
@functools.lru_cache(maxsize=1)
def planted_directions() -> dict[str, str]:
    """The planted plan of every control: profession -> ``"male"`` / ``"female"``
    (:func:`biaskit.data.counterfactual.assign_directions` of the controls' professions and seed)."""
    from biaskit.data.counterfactual import assign_directions
    from biaskit.lm.catalogue import CONTROL_SEED, CONTROL_TARGETS

    return dict(assign_directions(list(CONTROL_TARGETS), seed=CONTROL_SEED))


@functools.lru_cache(maxsize=1)
def _base_train() -> tuple[str, ...]:
    from biaskit.training.recipes import control_base_corpus

    return tuple(control_base_corpus().train)


@functools.lru_cache(maxsize=2)
def _pmi_tokens(s: float) -> tuple[tuple[str, ...], ...]:
    """The tokenised planted corpus of ``s``, as notebook 14 gives it to the corpus measure (BIAS_PMI)."""
    from biaskit.data.corpus import tokenize
    from biaskit.training.recipes import planted_corpus

    return tuple(tuple(tokenize(x)) for x in planted_corpus(s, list(_base_train())).sentences)


def _key(payload: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def model_dir(cache: Path, spec: ModelSpec) -> Path:
    """The cache folder of one model of the study (its retrained files, its training facts, its measurements):
    ``<cache>/metric-trust/<kind>/<name>``."""
    return cache / CACHE_FOLDER / spec.kind / spec.name


# =============================================================================================
# training one seed
# =============================================================================================
def training_key(spec: ModelSpec) -> str:
    """The key a retrained model is sealed with: the recipe, its configuration with the seed, the model it
    continues from; a changed recipe makes a cached model stale (retrained)."""
    from biaskit.training import recipes as tm

    if spec.kind == "word2vec":
        cfg: dict[str, Any] = {**tm.W2V_PARAMS, "seed": spec.seed, "top": tm.CONTROL_W2V_TOP}
        init = None
    else:
        config, init = tm.recipe(spec.recipe, seed=spec.seed)
        cfg = asdict(config)
    return _key(
        {"what": "metric-trust model", "recipe": spec.recipe, "s": spec.s, "config": cfg, "init": init}
    )


def _read_sealed_json(path: Path, key: str) -> dict[str, Any] | None:
    """A JSON file this module wrote with ``key`` (its sha256 file vouches for it), else ``None``."""
    if not path.is_file():
        return None
    problem = cache_file_problem(path, key)
    if problem:
        logger.warning("%s is not used: %s", path, problem)
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) and data.get("key") == key else None


def _write_sealed_json(path: Path, key: str, data: Mapping[str, Any]) -> None:
    atomic_write_text(path, json.dumps({**data, "key": key}, indent=1, default=float), private=True)
    write_cache_checksum(path, key)


def _train_w2v(spec: ModelSpec, folder: Path, key: str) -> dict[str, Any]:
    """Train (or find finished) the word2vec control ``spec`` in ``folder``; return its training facts."""
    from biaskit.core.io import atomic_path
    from biaskit.training.recipes import planted_w2v_vectors

    vec = folder / "vectors.bin"
    done = _read_sealed_json(folder / "trained.json", key)
    if done is not None and vec.is_file() and cache_file_problem(vec, key) is None:
        return done
    if vec.exists():
        logger.warning("%s: retrained (%s)", vec, cache_file_problem(vec, key) or "no training record")
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    kv, info = planted_w2v_vectors(spec.s, seed=spec.seed, sentences=list(_base_train()))
    seconds = time.perf_counter() - t0
    with atomic_path(vec, private=True) as tmp:
        kv.save_word2vec_format(str(tmp), binary=True)
    write_cache_checksum(vec, key)
    facts = {
        "train_seconds": seconds,
        "weights_sha256": {vec.name: sha256_file(vec)},
        "held_out": None,
        **info,
    }
    _write_sealed_json(folder / "trained.json", key, facts)
    return facts


def _train_lm(spec: ModelSpec, folder: Path, key: str, *, device: str, progress: bool) -> dict[str, Any]:
    """Train (or find finished) the masked or causal control ``spec``: the bundled recipe with training seed
    ``spec.seed``, from the same starting model; stored in float16 like the bundled models
    (:func:`biaskit.lm.loading.save_model_folder`, sealed with ``key``); held-out (pseudo-)perplexity of the
    stored weights on every held-out sentence, as the bundled ``bundled_held_out_pppl`` / ``_ppl``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    from biaskit.lm.loading import load_masked_lm, model_folder_problem, save_model_folder
    from biaskit.training import recipes as tm
    from biaskit.training.evaluation import causal_perplexity, pseudo_perplexity
    from biaskit.training.pretrain import train_causal_lm, train_masked_lm

    saved, work = folder / "model", folder / "train"
    done = _read_sealed_json(folder / "trained.json", key)
    problem = model_folder_problem(saved, key, require=True)
    if done is not None and problem is None:
        return done
    if saved.exists():
        logger.warning("%s: trained again (%s)", saved, problem or "no training record")
    causal = spec.kind == "causal"
    config, init = tm.recipe(spec.recipe, seed=spec.seed)
    train, held, _ = tm.recipe_data(spec.recipe)
    trainer = train_causal_lm if causal else train_masked_lm
    res = trainer(
        train,
        work,
        replace(config, device=device),
        held_out=None,
        progress=progress,
        init_model=None if init is None else tm.model_path(init),
    )
    problem = model_folder_problem(work, require=True)
    if problem:
        raise ValueError(f"the model trained in {work} is not used: {problem}. Remove {work} and run again")
    auto = AutoModelForCausalLM if causal else AutoModelForMaskedLM
    model = auto.from_pretrained(str(work), dtype=torch.float32)
    save_model_folder(saved, model=model.half(), tokenizer=AutoTokenizer.from_pretrained(str(work)), key=key)
    problem = model_folder_problem(saved, key, require=True)
    if problem:
        raise ValueError(f"the model just saved in {saved} does not verify: {problem}")
    if causal:
        stored = auto.from_pretrained(str(saved), dtype=torch.float32).eval()
        quality = {
            "measure": "ppl",
            "value": causal_perplexity(stored, AutoTokenizer.from_pretrained(str(saved)), held)[0],
        }
    else:
        quality = {
            "measure": "pppl",
            "value": pseudo_perplexity(load_masked_lm(saved, device="cpu"), held)[0],
        }
    facts = {
        "train_seconds": res.train_seconds,
        "steps": res.steps,
        "final_loss": res.final_loss,
        "weights_sha256": {f.name: sha256_file(f) for f in sorted(saved.glob("*.safetensors"))},
        "held_out": {**quality, "sentences": len(held)},
        # the thread count changes the rounding; a run resumed from a checkpoint may have begun with another
        "torch_threads": torch.get_num_threads(),
    }
    _write_sealed_json(folder / "trained.json", key, facts)
    shutil.rmtree(work, ignore_errors=True)  # checkpoints: the sealed float16 model is what the study keeps
    return facts


def _bundled_facts(spec: ModelSpec) -> dict[str, Any]:
    """Training facts of a bundled seed-0 control, from its ``training.json`` and its files."""
    from biaskit.lm.catalogue import training_record, verified_model_path

    folder = verified_model_path(spec.recipe)
    rec = training_record(spec.recipe)
    if spec.kind == "word2vec":
        f = folder / f"s{round(spec.s * 100):02d}.bin"
        return {"train_seconds": None, "weights_sha256": {f.name: sha256_file(f)}, "held_out": None}
    measure = "ppl" if spec.kind == "causal" else "pppl"
    return {
        "train_seconds": rec.get("train_seconds"),
        "steps": rec.get("steps"),
        "final_loss": rec.get("final_loss"),
        "weights_sha256": {f.name: sha256_file(f) for f in sorted(folder.glob("*.safetensors"))},
        "held_out": {
            "measure": measure,
            "value": rec.get(f"bundled_held_out_{measure}"),
            "sentences": rec.get("n_held_out_sentences"),
        },
    }


def _load(spec: ModelSpec, folder: Path) -> Any:
    """The model of ``spec``: the bundled one (seed 0, checked against the manifest) or the retrained one
    (checked against its sha256 files at load)."""
    from biaskit.lm.catalogue import load_trained_clm, load_trained_mlm
    from biaskit.lm.loading import load_causal_lm, load_masked_lm

    if spec.kind == "word2vec":
        from biaskit.embeddings.vectors import load_trained_vectors, load_vectors

        if spec.bundled:
            return load_trained_vectors("en-planted-w2v", s=spec.s)
        return load_vectors(folder / "vectors.bin", "word2vec-binary")
    if spec.kind == "masked":
        return (
            load_trained_mlm(spec.recipe, device="cpu")
            if spec.bundled
            else load_masked_lm(folder / "model", device="cpu")
        )
    return (
        load_trained_clm(spec.recipe, device="cpu")
        if spec.bundled
        else load_causal_lm(folder / "model", device="cpu")
    )


# =============================================================================================
# measuring one model
# =============================================================================================
def profession_splits(
    directions: Mapping[str, str], n_splits: int = N_SPLITS, *, random_state: int = 0
) -> list[frozenset[str]]:
    """``n_splits`` random halves of the professions (the first half of each split; the rest is the second),
    stratified by planted direction: each half has half of the "male" and half of the "female" professions.
    The same splits for every model (seeded), so that the halves' effects pair up across models."""
    rng = np.random.default_rng(random_state)
    groups = {d: sorted(t for t, g in directions.items() if g == d) for d in ("male", "female")}
    out = []
    for _ in range(n_splits):
        half: set[str] = set()
        for members in groups.values():
            half |= set(rng.permutation(members)[: len(members) // 2].tolist())
        out.append(frozenset(half))
    return out


def _halves(mv: Any, directions: Mapping[str, str], splits: Sequence[frozenset[str]]) -> list[list[float]]:
    """The measure's oriented effect on each half of each split
    (:func:`biaskit.studies.calibration.evaluate`)."""
    from biaskit.studies import calibration as cal

    out = []
    targets = np.asarray(mv.target)
    for half in splits:
        inside = np.array([t in half for t in targets])
        pair = []
        for idx in (np.flatnonzero(inside), np.flatnonzero(~inside)):
            ev = cal.evaluate(mv.subset(idx), directions, n_permutations=20, label_test=False)
            pair.append(float(ev.effect))
        out.append(pair)
    return out


def _number(x: Any) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


def measure_model(
    model: Any,
    spec: ModelSpec,
    *,
    alpha: float = 0.05,
    n_resamples: int = 200,
    n_splits: int = N_SPLITS,
    progress: bool = False,
) -> dict[str, dict[str, Any]]:
    """Every registered calibration measure of ``spec.kind`` on ``model``: measure -> its oriented ``effect``,
    own-test ``p_value``, label-permutation ``p_label``, ``toward_planted``, ``n`` units, ``directional``,
    value ``kind``, ``label`` and the effects of the ``n_splits`` profession halves (``halves``); on a
    balanced control (``s = 0.5``) also notebook 14's within-model false-positive rates ``fpr`` /
    ``fpr_label`` (``n_resamples`` random relabellings).

    One call of :func:`biaskit.studies.calibration.run_calibration` with this one model (no power curve).
    """
    from biaskit.studies import calibration as cal

    directions = planted_directions()
    s = float(spec.s)
    kw: dict[str, Any] = {"alpha": alpha, "n_resamples": n_resamples, "progress": progress, "power_s": 0.0}
    if spec.kind == "word2vec":
        corpus = [list(t) for t in _pmi_tokens(s)]
        result = cal.run_calibration({}, {s: model}, {s: corpus}, directions, **kw)
    elif spec.kind == "masked":
        result = cal.run_calibration({s: model}, {}, None, directions, **kw)
    else:
        result = cal.run_calibration({}, {}, None, directions, causal_lms={s: model}, **kw)
    splits = profession_splits(directions, n_splits)
    summary = result.summary.set_index("metric")
    out: dict[str, dict[str, Any]] = {}
    for r in result.effects.itertuples():
        m = str(r.metric)
        mv = result.values[m][s]
        row = summary.loc[m]
        out[m] = {
            "label": str(r.label),
            "family": str(r.family),
            "kind": str(mv.kind),
            "directional": bool(r.directional),
            "effect": _number(r.effect),
            "no_effect": _number(r.no_effect),
            "p_value": _number(r.p_value),
            "p_label": _number(r.p_label),
            "toward_planted": bool(r.toward_planted),
            "n": int(r.n),
            "fpr": _number(row["fpr"]) if s == 0.5 else None,
            "fpr_label": _number(row["fpr_label"]) if s == 0.5 else None,
            "halves": _halves(mv, directions, splits),
        }
    return out


def measurement_key(spec: ModelSpec, weights: Mapping[str, str], settings: Mapping[str, Any]) -> str:
    """The key of a model's cached measurements: its weights' sha256, the settings, the registered measures of
    its kind and biaskit's version (a new measure or version measures the model again; it is never
    retrained)."""
    from biaskit.core.paths import package_version
    from biaskit.studies import calibration as cal

    measures = sorted(cal.calibration_measures(CALIBRATION_KIND[spec.kind]))
    return _key(
        {
            "what": "metric-trust measurements",
            "format": MEASURE_FORMAT,
            "spec": [spec.kind, spec.s, spec.seed],
            "weights": dict(weights),
            "settings": dict(settings),
            "measures": measures,
            "biaskit": package_version(),
        }
    )


def run_model(
    spec: ModelSpec,
    *,
    cache_folder: str | None = None,
    alpha: float = 0.05,
    n_resamples: int = 200,
    n_splits: int = N_SPLITS,
    device: str = "cpu",
    progress: bool = False,
    threads: int | None = None,
) -> dict[str, Any]:
    """Train (seed > 0) and measure one model of the study; its row of the record.

    One independent task: a Dask worker gets ``cache_folder`` (the client's cache, which it must see) and
    ``threads`` (torch threads, 1 on a worker).  A model found finished in the cache is not retrained and
    measurements found for its weights and settings are not recomputed (``"trained"`` / ``"measured"`` say
    whether this call did either).
    """
    if cache_folder is not None:
        os.environ["BIASKIT_CACHE_DIR"] = cache_folder
    import torch

    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _run_model(spec, alpha=alpha, n_resamples=n_resamples, n_splits=n_splits, device=device,
                          progress=progress)  # fmt: skip
    finally:
        torch.set_num_threads(before)


def _run_model(
    spec: ModelSpec, *, alpha: float, n_resamples: int, n_splits: int, device: str, progress: bool
) -> dict[str, Any]:

    from biaskit.core.paths import cache_dir

    folder = model_dir(cache_dir(), spec)
    t0 = time.perf_counter()
    trained = False
    if spec.bundled:
        facts = _bundled_facts(spec)
    else:
        key = training_key(spec)
        before = _read_sealed_json(folder / "trained.json", key)
        if spec.kind == "word2vec":
            facts = _train_w2v(spec, folder, key)
        else:
            facts = _train_lm(spec, folder, key, device=device, progress=progress)
        trained = before is None
    train_wall = time.perf_counter() - t0
    settings = {"alpha": alpha, "n_resamples": n_resamples, "n_splits": n_splits}
    mkey = measurement_key(spec, facts["weights_sha256"], settings)
    mfile = folder / "measures.json"
    cached = _read_sealed_json(mfile, mkey)
    t1 = time.perf_counter()
    if cached is None:
        folder.mkdir(parents=True, exist_ok=True)
        measures = measure_model(
            _load(spec, folder), spec, alpha=alpha, n_resamples=n_resamples, n_splits=n_splits
        )
        measure_seconds = time.perf_counter() - t1
        code = code_state()
        _write_sealed_json(
            mfile, mkey, {"measures": measures, "measure_seconds": measure_seconds, "code": code}
        )
    else:
        measures, measure_seconds, code = (
            cached["measures"],
            cached.get("measure_seconds"),
            cached.get("code"),
        )
    return {
        "kind": spec.kind,
        "recipe": spec.recipe,
        "name": spec.name,
        "s": spec.s,
        "seed": spec.seed,
        "bundled": spec.bundled,
        "weights_sha256": facts["weights_sha256"],
        "held_out": facts.get("held_out"),
        "train_seconds": facts.get("train_seconds"),
        "measure_seconds": measure_seconds,
        "torch_threads_training": facts.get("torch_threads"),
        # the code that measured it: a record rewritten from the cache may come from a later commit
        "measured_at_commit": (code or {}).get("git_commit"),
        "measured_with_uncommitted_changes": bool((code or {}).get("uncommitted")),
        "trained_now": trained,
        "measured_now": cached is None,
        "task_wall_seconds": (time.perf_counter() - t0) if (trained or cached is None) else None,
        "train_wall_seconds": train_wall if trained else None,
        "measures": measures,
    }


# =============================================================================================
# the study and its record
# =============================================================================================
def _machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False, timeout=10).stdout
        for line in out.splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "load_average_at_start": load,
    }


def code_state() -> dict[str, Any]:
    """The git commit of the checkout and the files of the package that differ from it (modified or not yet
    committed ``biaskit/`` files: the code that ran is the commit plus those), ``None`` / ``[]`` outside a
    checkout."""

    def git(*args: str) -> str | None:
        try:
            res = subprocess.run(
                ["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, check=False, timeout=30
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return res.stdout if res.returncode == 0 else None

    commit = (git("rev-parse", "HEAD") or "").strip() or None
    status = git("status", "--porcelain", "--untracked-files=all", "--", "biaskit") or ""
    changed = sorted(line[3:].strip() for line in status.splitlines() if line[3:].strip().endswith(".py"))
    return {"git_commit": commit, "uncommitted": changed}


def _versions() -> dict[str, Any]:
    import gensim
    import torch
    import transformers

    from biaskit.core.paths import package_version

    code = code_state()
    return {
        "biaskit": package_version(),
        "git_commit": code["git_commit"],
        "uncommitted_package_files": code["uncommitted"],
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "gensim": gensim.__version__,
    }


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()


def _record_paths(kinds: Sequence[str], out: str | Path | None) -> dict[str, Path]:
    """kind -> the record file its rows go to: ``out`` for all, else ``<default_record_dir>/<kind>.json``."""
    if out is not None:
        return {k: Path(out) for k in kinds}
    folder = default_record_dir()
    if folder is None:
        raise ValueError(
            "give out (a .json file for the record): there is no repository checkout to hold docs/records"
        )
    return {k: folder / f"{k}.json" for k in kinds}


def run_trust_study(
    kinds: Sequence[str] = ("word2vec",),
    seeds: int | Iterable[int] = 5,
    skews: Iterable[float] | None = None,
    *,
    out: str | Path | None = None,
    scheduler: Any = "local",
    n_workers: int | None = None,
    alpha: float = 0.05,
    n_resamples: int = 200,
    n_splits: int = N_SPLITS,
    device: str = "cpu",
    threads: int | None = None,
    progress: bool = True,
    on_model: Callable[[dict[str, Any]], None] | None = None,
) -> TrustRecord:
    """Train and measure every ``(kind, s, seed)`` and write the record; return it as read back.

    ``seeds``: a count ``k`` (seeds ``0 .. k-1``; seed 0 is the bundled model) or the seeds themselves;
    ``skews``: the planted strengths (default: every control's, 0.5 ... 0.9).  ``out``: the record file
    (default: ``docs/records/metric_trust/<kind>.json`` of the checkout, one file per kind).  ``scheduler``:
    ``"local"`` (in this process, one model after another), ``"dask"`` (a local Dask cluster of
    ``n_workers`` processes) or a scheduler address / ``distributed.Client``
    (:func:`biaskit.studies.distributed.cluster_client`); the workers must see this process's cache folder.
    The record is rewritten after every finished model (``complete`` false until the last), so a killed run
    leaves a valid partial record; the same command resumes (finished models come from the cache).
    ``threads``: torch threads for training and scoring (default: torch's own count here, 1 on a Dask worker);
    on a machine busy with other work one thread per process is several times faster than two that contend.
    ``on_model`` is called with each finished row.
    """
    from biaskit.core.paths import cache_dir
    from biaskit.lm.catalogue import CONTROL_SKEWS

    seed_list = list(range(seeds)) if isinstance(seeds, (int, np.integer)) else [int(k) for k in seeds]
    if isinstance(seeds, (int, np.integer)) and seeds < 1:
        raise ValueError(f"seeds must be at least 1, not {seeds}")
    skew_list = list(CONTROL_SKEWS if skews is None else skews)
    specs = study_specs(list(kinds), seed_list, skew_list)
    paths = _record_paths(list(dict.fromkeys(s.kind for s in specs)), out)
    t0 = time.perf_counter()
    started = _now()
    machine, versions = _machine(), _versions()
    parameters = {
        "seeds": sorted(set(seed_list)),
        "skews": sorted({float(s) for s in skew_list}),
        "alpha": alpha,
        "n_resamples": n_resamples,
        "n_splits": n_splits,
        "split_seed": 0,
        "device": device,
        "torch_threads": threads,
        "scheduler": scheduler if isinstance(scheduler, str) else type(scheduler).__name__,
        "seed_meaning": "training seed of the recipe (weights of new layers, batch order, masking, word2vec "
        "initial vectors and negative sampling); the planted corpus and the starting model are the same for "
        "every seed; seed 0 is the bundled model",
    }
    earlier = _unfinished(paths, parameters)
    rows: list[dict[str, Any]] = []
    settings = {
        "alpha": alpha,
        "n_resamples": n_resamples,
        "n_splits": n_splits,
        "device": device,
        "threads": threads,
    }

    def write(finished: bool) -> None:
        for path in dict.fromkeys(paths.values()):
            kinds_here = [k for k, p in paths.items() if p == path]
            planned = [s for s in specs if s.kind in kinds_here]
            mine = sorted(
                (r for r in rows if r["kind"] in kinds_here),
                key=lambda r: (KINDS.index(r["kind"]), r["s"], r["seed"]),
            )
            rec = {
                "what": RECORD_WHAT,
                "kinds": kinds_here,
                "parameters": parameters,
                "command": _command(kinds_here, parameters, path),
                "started": earlier.get(path, {}).get("started", started),
                "updated": _now(),
                "finished": _now() if finished else None,
                # a resumed run adds the wall time of the stopped one it continues
                "wall_seconds": earlier.get(path, {}).get("wall_seconds", 0.0) + time.perf_counter() - t0,
                "machine": machine,
                "versions": versions,
                "models_planned": len(planned),
                "models_done": len(mine),
                "complete": len(mine) >= len(planned),
                "models": mine,
            }
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps(rec, indent=1, default=float) + "\n")

    def done(row: dict[str, Any]) -> None:
        rows.append(row)
        write(finished=False)
        logger.info(
            "metric trust: %s done (%d of %d; trained now: %s, measured now: %s)",
            row["name"],
            len(rows),
            len(specs),
            row["trained_now"],
            row["measured_now"],
        )
        if on_model is not None:
            on_model(row)

    write(finished=False)
    cache = str(cache_dir())
    if scheduler is None or scheduler == "local":
        from tqdm.auto import tqdm

        for spec in tqdm(specs, desc="metric trust", unit="model", disable=not progress):
            done(
                run_model(
                    spec,
                    alpha=alpha,
                    n_resamples=n_resamples,
                    n_splits=n_splits,
                    device=device,
                    threads=threads,
                    progress=progress,
                )
            )
    else:
        _run_on_dask(specs, settings, cache, scheduler, n_workers, done)
    write(finished=True)
    return load_record(list(dict.fromkeys(paths.values())))


def _unfinished(paths: Mapping[str, Path], parameters: Mapping[str, Any]) -> dict[Path, dict[str, Any]]:
    """The ``started`` and ``wall_seconds`` of each record file that an interrupted run of the same kinds and
    parameters left (incomplete), which this run resumes."""
    out: dict[Path, dict[str, Any]] = {}
    for path in dict.fromkeys(paths.values()):
        kinds_here = [k for k, p in paths.items() if p == path]
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (
            isinstance(old, dict)
            and old.get("what") == RECORD_WHAT
            and not old.get("complete")
            and old.get("kinds") == kinds_here
            and old.get("parameters") == json.loads(json.dumps(parameters))
        ):
            out[path] = {"started": old.get("started"), "wall_seconds": float(old.get("wall_seconds") or 0.0)}
    return out


def _run_on_dask(
    specs: Sequence[ModelSpec],
    settings: Mapping[str, Any],
    cache: str,
    scheduler: Any,
    n_workers: int | None,
    done: Callable[[dict[str, Any]], None],
) -> None:
    """One task per model on a Dask cluster; rows reach ``done`` as the tasks finish."""
    from distributed import as_completed

    from biaskit.studies.distributed import cluster_client

    with cluster_client(scheduler, n_workers=n_workers or min(len(specs), os.cpu_count() or 1)) as client:
        futures = [
            client.submit(
                run_model,
                spec,
                cache_folder=cache,
                pure=False,
                retries=1,
                key=f"biaskit-trust-{spec.name}-{spec.kind}-{os.getpid()}",
                **{**settings, "threads": settings.get("threads") or 1},
            )
            for spec in specs
        ]
        for fut in as_completed(futures):
            done(fut.result())


def _command(kinds: Sequence[str], parameters: Mapping[str, Any], path: Path) -> str:
    """The command that runs (and resumes) this record."""
    try:
        shown = path.resolve().relative_to(REPO_ROOT)
    except ValueError:
        shown = path
    seeds = parameters["seeds"]
    seed_arg = (
        f"--seeds {len(seeds)}"
        if seeds == list(range(len(seeds)))
        else "--seed-list " + " ".join(map(str, seeds))
    )
    skews = parameters["skews"]
    from biaskit.lm.catalogue import CONTROL_SKEWS

    skew_arg = "" if skews == list(CONTROL_SKEWS) else " --skews " + " ".join(f"{s:g}" for s in skews)
    return f"python -m biaskit trust-study --kinds {' '.join(kinds)} {seed_arg}{skew_arg} --out {shown}"


@dataclass
class TrustRecord:
    """Records read back (:func:`load_record`): their metadata (``meta``, one per file, without the models)
    and ``models``, one dict per model (the rows of :func:`run_model`)."""

    paths: list[Path]
    meta: list[dict[str, Any]]
    models: list[dict[str, Any]]

    def rows(self) -> pd.DataFrame:
        """One row per model and measure (:func:`measure_rows`)."""
        return measure_rows(self.models)

    def provenance(self) -> str:
        """One sentence per record file: what ran, where, when, and how complete it is."""
        parts = []
        for path, m in zip(self.paths, self.meta, strict=True):
            p = m["parameters"]
            parts.append(
                f"`{path.name}`: {m['models_done']} of {m['models_planned']} models "
                f"({', '.join(m['kinds'])}; seeds {min(p['seeds'])}-{max(p['seeds'])}, "
                f"s = {', '.join(f'{s:g}' for s in p['skews'])}), "
                f"recorded {m.get('finished') or m.get('updated')} on "
                f"{m['machine']['cpu']} ({m['machine']['cores']} cores), "
                f"{_duration(m['wall_seconds'])} of wall time, "
                f"commit {str(m['versions'].get('git_commit'))[:10]}"
                + (
                    f" with {len(m['versions']['uncommitted_package_files'])} package file(s) "
                    "not yet committed"
                    if m["versions"].get("uncommitted_package_files")
                    else ""
                )
                + _training_note(self.models, m["kinds"])
                + ("" if m["complete"] else " (incomplete: the run was stopped; the same command resumes it)")
            )
        return "; ".join(parts) + "."


def _training_note(models: Sequence[Mapping[str, Any]], kinds: Sequence[str]) -> str:
    """``"; 20 models retrained (43 min of training in all, 5 of them in this run)"``."""
    mine = [m for m in models if m["kind"] in kinds and not m["bundled"]]
    if not mine:
        return ""
    total = sum(float(m.get("train_seconds") or 0.0) for m in mine)
    now = sum(bool(m.get("trained_now")) for m in mine)
    return (
        f"; {len(mine)} models retrained ({_duration(total)} of training in all, {now} of them in this run)"
    )


def _duration(seconds: float) -> str:
    return f"{seconds:,.0f} s" if seconds < 120 else f"{seconds / 60:,.0f} min"


def load_record(path: str | Path | Sequence[str | Path] | None = None) -> TrustRecord | None:
    """Read one record file, every ``*.json`` of a folder, or a list of files (default: the committed folder
    :func:`default_record_dir`); ``None`` when there is none.  ``ValueError`` for a file that is not a
    metric-trust record or lacks its provenance, or when two files hold the same model."""
    if path is None:
        path = default_record_dir()
        if path is None:
            return None
    items = [Path(p) for p in path] if isinstance(path, (list, tuple)) else [Path(path)]
    files: list[Path] = []
    for p in items:
        files += sorted(p.glob("*.json")) if p.is_dir() else ([p] if p.is_file() else [])
    if not files:
        return None
    metas, models, seen = [], [], {}
    for f in files:
        data = json.loads(f.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("what") != RECORD_WHAT:
            raise ValueError(
                f"{f} is not a metric-trust record "
                f"(what = {data.get('what') if isinstance(data, dict) else None!r})"
            )
        missing = [
            k
            for k in ("parameters", "machine", "versions", "wall_seconds", "started", "models")
            if k not in data
        ]
        if missing:
            raise ValueError(f"{f} lacks its provenance: missing {', '.join(missing)}")
        for m in data["models"]:
            ident = (m["kind"], float(m["s"]), int(m["seed"]))
            if ident in seen:
                raise ValueError(f"{f} and {seen[ident]} both hold {m['name']}: keep one")
            seen[ident] = f
        models += data.pop("models")
        metas.append(data)
    return TrustRecord(paths=files, meta=metas, models=models)


def measure_rows(models: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per model and measure: ``kind, s, seed, measure, label, value_kind, directional, effect,
    no_effect, p_value, p_label, toward_planted, fpr, fpr_label, halves`` (null numbers as NaN), by kind,
    then measure (in the calibration's order), ``s`` and seed."""

    def num(v: Any) -> float:
        return np.nan if v is None else float(v)

    rows = []
    for m in models:
        for key, v in m["measures"].items():
            rows.append(
                {
                    "kind": m["kind"],
                    "s": float(m["s"]),
                    "seed": int(m["seed"]),
                    "measure": key,
                    "label": v["label"],
                    "value_kind": v["kind"],
                    "directional": bool(v["directional"]),
                    "effect": num(v["effect"]),
                    "no_effect": num(v.get("no_effect")),
                    "p_value": num(v["p_value"]),
                    "p_label": num(v["p_label"]),
                    "toward_planted": bool(v["toward_planted"]),
                    "fpr": num(v.get("fpr")),
                    "fpr_label": num(v.get("fpr_label")),
                    "halves": v.get("halves") or [],
                }
            )
    cols = ["kind", "s", "seed", "measure", "label", "value_kind", "directional", "effect", "no_effect",
            "p_value", "p_label", "toward_planted", "fpr", "fpr_label", "halves"]  # fmt: skip
    out = pd.DataFrame(rows, columns=cols)
    if out.empty:
        return out
    kind_order = {k: i for i, k in enumerate(KINDS)}
    measure_order = {m: i for i, m in enumerate(dict.fromkeys(out["measure"]))}
    out["_k"], out["_m"] = out["kind"].map(kind_order), out["measure"].map(measure_order)
    return (
        out.sort_values(["_k", "_m", "s", "seed"], kind="stable")
        .drop(columns=["_k", "_m"])
        .reset_index(drop=True)
    )
