r"""Counterfactual data substitution (CDS) and corpora with a planted gender bias of known strength.

**CDS** (Hall Maudslay, Gonen, Cotterell & Teufel 2019, "It's All in the Name", EMNLP; used for
debiasing by Bartl, Nissim & Gatt 2020 and by seed 002, Barza 2023, section 2.2.3): every gendered
word of a sentence is replaced by its counterpart (*he* <-> *she*, *husband* <-> *wife*, and, with
``names=True``, *John* <-> *Mary*), with probability ``p`` per sentence (1: the full swap that
Bartl's ``gap_flipped.tsv`` is; 0.5: Hall Maudslay's substitution).  Case is kept (*He* -> *She*,
*HIS* -> *HER*) and punctuation is untouched.  Two words are ambiguous: *her* becomes *him* before
punctuation, at the end or before a function word ("told her that"), else *his* ("her book"); *his*
becomes *hers* before punctuation or at the end, else *her*.  A swap in a sentence that also has a
sex-specific context ("pregnant", "gave birth") yields the nonsense seed 002 discusses ("he gave
birth"); such sentences are counted (:attr:`CDSResult.nonsense`), never hidden.

**Planted bias** (:func:`plant_gender_skew`): the same machinery sets, per *target* word (a
profession), the share ``s`` of its sentences whose gendered words point to the target's planted
direction.  For a target planted "male", exactly ``round(s * n)`` of its ``n`` gendered sentences are
made male (swapped when they were female) and the rest female; the choice of which is random (seeded).
Every other sentence with gendered words is swapped with probability ``background_p`` (0.5 erases the
corpus's own gender associations in expectation).  ``s = 0.5`` is the **negative control** (no
association for any target), ``s`` in {0.6, ..., 0.9} are **positive controls** of known strength.
Seed 000 section 3.5.4 states what every bias measure should do on a corpus biased a priori (reject
H0, with effects growing with the PMI) and on one that is not (not reject); these corpora test it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

Gender = Literal["male", "female"]
GENDER_PAIRS_FILE = "en/cds_gender_pairs.json"

_WORD_RE = re.compile(r"[A-Za-z]+")
# after "her": these mean it is an object pronoun (him), not a possessive (his)
_OBJECT_FOLLOWERS = frozenset(
    """a an the and or but nor so yet to in on at by for from with about into onto over under after
    before up down out off back again away too as that than if when while because since until who
    whom which whose what where why how this these those there here is was be been being has had have
    not also very just only all both each every some any no more most less much many few own same
    such then now once still even ever never always often""".split()
)


@dataclass(frozen=True)
class GenderLexicon:
    """Male <-> female word pairs (lower case), name pairs and sex-specific context words."""

    to_female: dict[str, str]
    to_male: dict[str, str]
    name_to_female: dict[str, str]
    name_to_male: dict[str, str]
    specific: frozenset[str]
    source: str = ""

    def __post_init__(self) -> None:
        if not self.to_female and not self.name_to_female:
            raise ValueError(
                f"the gender-swap lexicon{' ' + self.source if self.source else ''} is empty (no word pairs "
                "and no name pairs): CDS and the planted controls would change nothing and report no swap; "
                "give it [male, female] pairs (the bundled wordlists/en/cds_gender_pairs.json has 100+)"
            )

    def gender_of(self, word: str, *, names: bool = True) -> Gender | None:
        w = word.lower()
        if w in self.to_female or (names and w in self.name_to_female):
            return "male"
        if w in self.to_male or (names and w in self.name_to_male):
            return "female"
        return None

    def word_genders(self, *, names: bool = True) -> dict[str, Gender]:
        """``{word: gender}`` for every word :meth:`gender_of` gives a gender (a lower-case word), with its
        precedence: a word listed on both sides is male, as ``gender_of`` checks the male side first.  One
        dictionary lookup per word, for loops over many sentences."""
        out: dict[str, Gender] = {}
        for side, gender in (
            ((self.to_male, self.name_to_male), "female"),
            ((self.to_female, self.name_to_female), "male"),
        ):
            for table in side if names else side[:1]:
                out.update(dict.fromkeys(table, gender))
        return out


@lru_cache(maxsize=4)
def load_gender_lexicon(path: str | None = None) -> GenderLexicon:
    """The bundled two-sided English CDS list (``wordlists/en/cds_gender_pairs.json``) or ``path``.

    The file has ``pairs`` ([male, female]), ``names`` ([male, female]) and
    ``gender_specific_contexts``.  A word that appears on both sides, or twice on one side with
    different counterparts, raises ``ValueError`` (only *her*, the counterpart of both *him* and
    *his*, is allowed twice: it is resolved by context).

    Examples
    --------
    >>> lexicon = load_gender_lexicon()
    >>> lexicon.to_female["he"], lexicon.to_female["king"]
    ('she', 'queen')
    """
    from biaskit.core.paths import resolve_user_path, wordlists_dir

    p = resolve_user_path(path) if path else wordlists_dir() / GENDER_PAIRS_FILE
    data = json.loads(p.read_text(encoding="utf-8"))
    pairs = data.get("pairs") if isinstance(data, dict) else None
    if not isinstance(pairs, list) or not all(isinstance(x, list) and len(x) == 2 for x in pairs):
        raise ValueError(f"{p}: 'pairs' must be a list of [male, female] word pairs, got {str(pairs)[:80]}")
    if not pairs:
        raise ValueError(
            f"{p}: the gender-swap lexicon is empty ('pairs' has no [male, female] word pair): CDS would "
            "swap nothing; fill it or use the bundled wordlists/en/cds_gender_pairs.json"
        )
    to_f: dict[str, str] = {}
    to_m: dict[str, str] = {}
    for m, f in pairs:
        m, f = m.lower(), f.lower()
        if m in to_f and to_f[m] != f:
            raise ValueError(f"{p}: '{m}' has two female counterparts ({to_f[m]}, {f})")
        to_f[m] = f
        if f in to_m and f != "her":
            raise ValueError(f"{p}: '{f}' has two male counterparts ({to_m[f]}, {m})")
        to_m.setdefault(f, m)
    if "hers" not in to_m and "her" in to_m:  # the possessive pronoun: "it is hers" -> "it is his"
        to_m["hers"] = "his"
    both = set(to_f) & set(to_m)
    if both:
        raise ValueError(f"{p}: word(s) on both sides: {sorted(both)}")
    n_f = {m.lower(): f.lower() for m, f in data.get("names", [])}
    n_m = {f: m for m, f in n_f.items()}
    return GenderLexicon(
        to_female=to_f,
        to_male=to_m,
        name_to_female=n_f,
        name_to_male=n_m,
        specific=frozenset(w.lower() for w in data.get("gender_specific_contexts", [])),
        source=str(p),
    )


def _match_case(new: str, old: str) -> str:
    if old.isupper() and len(old) > 1:
        return new.upper()
    if old[0].isupper():
        return new[0].upper() + new[1:]
    return new


def _next_word(text: str, end: int) -> str | None:
    """The next word after position ``end``, or None when punctuation (or the end) comes first."""
    rest = text[end:]
    m = re.match(r"\s*([A-Za-z]+)", rest)
    return m.group(1).lower() if m else None


def swap_gender(
    sentence: str,
    *,
    to: Gender | Literal["swap"] = "swap",
    names: bool = True,
    lexicon: GenderLexicon | None = None,
) -> tuple[str, int]:
    """Swap the gendered words of ``sentence``; returns ``(new_sentence, n_words_changed)``.

    ``to="swap"`` exchanges every male word for its female counterpart and vice versa (CDS);
    ``to="male"`` / ``"female"`` only rewrites the words of the other gender (so "he and his
    wife" with ``to="female"`` becomes "she and her wife").  Case is kept; see the module
    docstring for *her* / *his*.

    Examples
    --------
    >>> swap_gender("He thanked his mother.")
    ('She thanked her father.', 3)
    >>> swap_gender("he and his wife", to="female")
    ('she and her wife', 2)
    """
    lex = lexicon or load_gender_lexicon()
    out: list[str] = []
    last = 0
    n = 0
    for m in _WORD_RE.finditer(sentence):
        word = m.group(0)
        w = word.lower()
        g = lex.gender_of(w, names=names)
        if g is None or (to != "swap" and g == to):
            continue
        if g == "male":
            new = lex.to_female.get(w) or lex.name_to_female[w]
            if w == "his":
                new = "hers" if _next_word(sentence, m.end()) is None else "her"
        else:
            new = lex.to_male.get(w) or lex.name_to_male[w]
            if w == "her":
                nxt = _next_word(sentence, m.end())
                new = "him" if nxt is None or nxt in _OBJECT_FOLLOWERS else "his"
        out.append(sentence[last : m.start()])
        out.append(_match_case(new, word))
        last = m.end()
        n += 1
    out.append(sentence[last:])
    return "".join(out), n


def sentence_gender(
    sentence: str, *, names: bool = True, lexicon: GenderLexicon | None = None
) -> Gender | None:
    """The majority gender of the gendered words in ``sentence`` (None: none, or a tie).

    Examples
    --------
    >>> sentence_gender("She said that her brother is here."), sentence_gender("The sun is up.")
    ('female', None)
    """
    lex = lexicon or load_gender_lexicon()
    male = female = 0
    for m in _WORD_RE.finditer(sentence):
        g = lex.gender_of(m.group(0), names=names)
        male += g == "male"
        female += g == "female"
    if male == female:
        return None
    return "male" if male > female else "female"


def _has_specific(sentence: str, lex: GenderLexicon) -> bool:
    specific = lex.specific
    return any(w.lower() in specific for w in _WORD_RE.findall(sentence))


@dataclass
class CDSResult:
    """Sentences after CDS, with which were swapped and the nonsense-swap count."""

    sentences: list[str]
    swapped: np.ndarray
    words_changed: int
    nonsense: list[int] = field(
        default_factory=list
    )  # indices of swapped sentences with a sex-specific context

    @property
    def n_swapped(self) -> int:
        return int(self.swapped.sum())


def cds(
    sentences: Sequence[str],
    *,
    p: float = 1.0,
    names: bool = True,
    seed: int = 0,
    lexicon: GenderLexicon | None = None,
) -> CDSResult:
    """Counterfactual data substitution: swap each sentence's gendered words with probability ``p``.

    ``p=1`` swaps every sentence that has a gendered word (the full swap of Bartl et al. 2020's
    CDS-GAP), ``p=0.5`` is Hall Maudslay et al. (2019)'s substitution.  The draw is per sentence
    from ``numpy.random.default_rng(seed)``.  Swapped sentences with a sex-specific context word
    ("pregnant", "birth", ...) are listed in ``nonsense`` and logged as a WARNING with their count.

    Examples
    --------
    >>> result = cds(["He is a doctor.", "The sun is up.", "She likes her job."], p=1.0)
    >>> result.sentences, result.n_swapped
    (['She is a doctor.', 'The sun is up.', 'He likes his job.'], 2)
    """
    if not 0 <= p <= 1:
        raise ValueError("p must be in [0, 1]")
    lex = lexicon or load_gender_lexicon()
    rng = np.random.default_rng(seed)
    draws = rng.random(len(sentences))
    out: list[str] = []
    swapped = np.zeros(len(sentences), dtype=bool)
    words = 0
    nonsense: list[int] = []
    for i, s in enumerate(sentences):
        if draws[i] < p:
            new, k = swap_gender(s, names=names, lexicon=lex)
            if k:
                swapped[i] = True
                words += k
                if _has_specific(s, lex):
                    nonsense.append(i)
            out.append(new)
        else:
            out.append(s)
    if nonsense:
        logger.warning(
            "CDS: %d of %d swapped sentence(s) have a sex-specific context word (e.g. 'he gave birth'); "
            "first: %s",
            len(nonsense),
            int(swapped.sum()),
            nonsense[:10],
        )
    return CDSResult(sentences=out, swapped=swapped, words_changed=words, nonsense=nonsense)


# =============================================================================================
# planted bias
# =============================================================================================
def assign_directions(targets: Sequence[str], *, seed: int = 0) -> dict[str, Gender]:
    """Plant half of ``targets`` (rounded down) "female" and the rest "male", at random (seeded).

    Random assignment keeps the planted direction independent of each word's real-world
    stereotype, so a metric cannot pass by reporting the corpus's own bias.
    """
    if len(set(targets)) != len(targets):
        raise ValueError("targets must be distinct")
    order = np.random.default_rng(seed).permutation(len(targets))
    half = len(targets) // 2
    return {targets[i]: ("female" if k < half else "male") for k, i in enumerate(order)}


@dataclass
class PlantedCorpus:
    """A corpus with a planted gender skew: sentences, the plan and what was done.

    ``targets`` has one row per target word: ``direction`` (planted), ``n`` (its sentences with a
    gender), ``n_direction`` (of those, pointing to ``direction`` after planting),
    ``realised`` (= n_direction / n) and ``original`` (the share before planting).
    """

    sentences: list[str]
    s: float
    directions: dict[str, Gender]
    targets: pd.DataFrame
    counts: dict[str, int]
    swapped: np.ndarray
    nonsense: list[int] = field(default_factory=list)


def targets_in(sentence: str, targets: Mapping[str, Gender]) -> set[str]:
    """The target words (keys of ``targets``, lower case) that ``sentence`` mentions, as whole words
    (runs of ASCII letters, compared in lower case)."""
    return {w for w in map(str.lower, _WORD_RE.findall(sentence)) if w in targets}


def plant_gender_skew(
    sentences: Sequence[str],
    directions: Mapping[str, Gender],
    s: float,
    *,
    seed: int = 0,
    background_p: float = 0.5,
    names: bool = True,
    lexicon: GenderLexicon | None = None,
) -> PlantedCorpus:
    """Rewrite ``sentences`` so that each target's gendered sentences point to its direction with share ``s``.

    Parameters
    ----------
    sentences:
        Real text (e.g. BUG, :func:`biaskit.data.training_text.read_bug_sentences`).
    directions:
        Target word (lower case) -> ``"male"`` / ``"female"`` (:func:`assign_directions`).
    s:
        Planted skew in [0.5, 1]: the exact share (``round(s * n)`` of ``n``) of a target's
        gendered sentences made to point to its direction; the rest point the other way.
    background_p:
        Swap probability of every other sentence with a gendered word (0.5: the corpus's own
        associations are erased in expectation).  Sentences that mention two targets, or whose
        gendered words tie (as many male as female), are background too; all are counted.

    Notes
    -----
    A sentence's gender is the majority gender of its gendered words (:func:`sentence_gender`);
    making it point the other way swaps all of them (:func:`swap_gender`), so "he and his wife"
    becomes "she and her husband", never "she and her wife".
    """
    if not 0.5 <= s <= 1:
        raise ValueError("s must be in [0.5, 1] (0.5: no planted association)")
    if not directions:
        raise ValueError("no target words")
    bad = {t: d for t, d in directions.items() if d not in ("male", "female")}
    if bad:
        raise ValueError(f"directions must be 'male' or 'female': {bad}")
    lex = lexicon or load_gender_lexicon()
    directions = {t.lower(): d for t, d in directions.items()}
    rng = np.random.default_rng(seed)
    n = len(sentences)
    # one pass over the words of each sentence: its gender (sentence_gender), the targets it mentions
    # (targets_in) and whether it has a gendered word at all (what swap_gender would change)
    word_gender = lex.word_genders(names=names)
    genders: list[Gender | None] = []
    hits: list[set[str]] = []
    has_gender_word: list[bool] = []
    for x in sentences:
        male = female = 0
        hit: set[str] = set()
        for word in _WORD_RE.findall(x):
            w = word.lower()
            g = word_gender.get(w)
            if g == "male":
                male += 1
            elif g == "female":
                female += 1
            if w in directions:
                hit.add(w)
        genders.append(None if male == female else "male" if male > female else "female")
        hits.append(hit)
        has_gender_word.append(male + female > 0)
    by_target: dict[str, list[int]] = {t: [] for t in directions}
    counts = {"sentences": n, "no_gender_word": 0, "tie": 0, "two_targets": 0, "target": 0, "background": 0}
    background: list[int] = []
    for i in range(n):
        if genders[i] is None:
            # no gendered word (nothing to swap) or a tie (a swap does not change the balance)
            has_word = has_gender_word[i]
            counts["tie" if has_word else "no_gender_word"] += 1
            if has_word:
                background.append(i)
            continue
        if len(hits[i]) == 1:
            by_target[next(iter(hits[i]))].append(i)
            counts["target"] += 1
        else:
            counts["two_targets" if hits[i] else "background"] += 1
            background.append(i)
    desired: dict[int, Gender] = {}
    rows = []
    for t, d in directions.items():
        idx = by_target[t]
        other: Gender = "female" if d == "male" else "male"
        k = round(s * len(idx))
        order = rng.permutation(len(idx))
        for rank, j in enumerate(order):
            desired[idx[j]] = d if rank < k else other
        original = float(np.mean([genders[i] == d for i in idx])) if idx else float("nan")
        rows.append(
            {
                "target": t,
                "direction": d,
                "n": len(idx),
                "n_direction": k,
                "realised": k / len(idx) if idx else float("nan"),
                "original": original,
            }
        )
    bg_draw = rng.random(n)
    bg = set(background)
    out = list(sentences)
    swapped = np.zeros(n, dtype=bool)
    nonsense: list[int] = []
    for i in range(n):
        do = genders[i] != desired[i] if i in desired else (i in bg and bg_draw[i] < background_p)
        if do:
            out[i], k = swap_gender(sentences[i], names=names, lexicon=lex)
            swapped[i] = k > 0
            if k and _has_specific(sentences[i], lex):
                nonsense.append(i)
    table = pd.DataFrame(rows)
    empty = table.loc[table["n"] == 0, "target"].tolist()
    if empty:
        logger.warning("plant_gender_skew: %d target(s) have no gendered sentence: %s", len(empty), empty)
    logger.info(
        "planted s=%.2f on %d targets: %d target sentences, %d background, %d with two targets, "
        "%d ties, %d without a gendered word; %d sentences swapped",
        s,
        len(directions),
        counts["target"],
        counts["background"],
        counts["two_targets"],
        counts["tie"],
        counts["no_gender_word"],
        int(swapped.sum()),
    )
    return PlantedCorpus(
        sentences=out,
        s=s,
        directions=dict(directions),
        targets=table,
        counts=counts,
        swapped=swapped,
        nonsense=nonsense,
    )
