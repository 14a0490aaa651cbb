"""What the seed-word form of the guided tour (``notebooks/00_tour.ipynb``) runs and says: one WEAT on the
reader's own word sets, in the reader's own words (issue 32, "fail loudly").

:func:`seed_weat` takes the four sets as ``{name: words}`` (in the order X, Y, A, B: two target sets, two
attribute sets) and returns a :class:`SeedWeat` that a notebook displays.  It

* **names every word left out** because the vectors have no vector for it, set by set;
* **warns when the sets are too small for the test to reach alpha**: with ``n_X`` and ``n_Y`` target words
  the exact permutation test has ``C(n_X + n_Y, n_X)`` ways to re-split them, so no p-value can be below
  ``1 / C(n_X + n_Y, n_X)`` (3 + 3 words: 1/20 = 0.05, so nothing can be significant at 0.05), and says that
  smallest p (:func:`smallest_p_value`);
* words its **verdict with the reader's set names** ("Math is more associated with MaleTerms than Arts is"),
  never with "X" and "A".

A set with no word, or with no word the vectors know, is a :class:`ValueError` naming the set (and the
words left out): the form shows it as "Could not run with these words: ..." and the reader can fix it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from biaskit.core.html import escape_html
from biaskit.core.results import TestResult, format_p_value
from biaskit.data.wordlists import vector_vocabulary
from biaskit.metrics.weat import WEAT

__all__ = ["SeedWeat", "seed_weat", "smallest_p_value"]

#: the roles of the four sets, in order
ROLES = ("X", "Y", "A", "B")


def smallest_p_value(
    n_x: int, n_y: int, *, n_permutations: int = 10_000, exact_threshold: int = 100_000
) -> float:
    """The smallest p-value WEAT's one-sided permutation test can give with ``n_x`` and ``n_y`` target words.

    The test re-splits the ``n_x + n_y`` target words into sets of ``n_x`` and ``n_y``; the observed split is
    one of them and always counts, so an exact test (every re-split enumerated: WEAT's ``exact="auto"`` does
    that when there are at most ``exact_threshold`` of them, or when ``n_permutations`` covers them) gives
    at least ``1 / C(n_x + n_y, n_x)``; a sampled one at least ``1 / (n_permutations + 1)``.
    ``smallest_p_value(3, 3)`` is ``1 / 20 = 0.05``.
    """
    if n_x < 1 or n_y < 1:
        raise ValueError(f"both target sets need at least one word, got {n_x} and {n_y}")
    total = math.comb(n_x + n_y, n_x)
    if total <= exact_threshold or n_permutations >= total - 1:
        return 1.0 / total
    return 1.0 / (n_permutations + 1)


def _words(words: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``: words in a sentence, never a Python list."""
    ws = [str(w) for w in words]
    return ws[0] if len(ws) == 1 else ", ".join(ws[:-1]) + " and " + ws[-1]


@dataclass(repr=False)
class SeedWeat:
    """One run of the seed-word form: the sets as given, what was left out, the test and what it means."""

    names: tuple[str, str, str, str]
    given: dict[str, list[str]]
    dropped: dict[str, list[str]]
    used: dict[str, list[str]]
    alpha: float
    min_p: float
    n_splits: int
    exact: bool
    result: TestResult
    notes: list[str] = field(default_factory=list)

    @property
    def can_reach_alpha(self) -> bool:
        """Whether the sets are large enough for any p-value below ``alpha``."""
        return self.min_p < self.alpha

    @property
    def significant(self) -> bool:
        return bool(self.result.p_value < self.alpha)

    def verdict(self) -> str:
        """The result in one sentence, with the sets' own names."""
        x, y, a, b = self.names
        r = self.result
        p = format_p_value(r.p_value)
        p_text = f"p {p}" if p.startswith("<") else f"p = {p}"
        stats = f"effect size d = {r.effect_size:.2f}, {p_text}"
        if self.significant:
            return (
                f"{x} is more associated with {a} (and {y} with {b}) than chance would give: {stats} "
                f"(below α = {self.alpha:g})."
            )
        lean = "more" if r.statistic > 0 else "less"
        why = (
            f" With these set sizes no result could be significant at α = {self.alpha:g}."
            if not self.can_reach_alpha
            else ""
        )
        return (
            f"No evidence at α = {self.alpha:g} that {x} is more associated with {a} (and {y} with {b}) than "
            f"chance would give: {stats}. In these vectors {x} leans {lean} toward {a} than {y} does, "
            f"but not more than a random re-split of the words often does.{why}"
        )

    def __str__(self) -> str:
        return "\n".join([self.verdict(), *self.notes])

    __repr__ = __str__  # what a console shows: the verdict and the notes, never the word lists

    def _repr_html_(self) -> str:
        notes = "".join(f"<li>{escape_html(n)}</li>" for n in self.notes)
        return (
            f"<div class='bk-seed-weat'><p><b>{escape_html(self.verdict())}</b></p>"
            + (f"<ul class='bk-seed-notes'>{notes}</ul>" if notes else "")
            + self.result.to_html(self.alpha)
            + "</div>"
        )

    def to_dict(self) -> dict[str, Any]:
        """The run as plain values (for a results file)."""
        return {
            "names": dict(zip(ROLES, self.names, strict=True)),
            "dropped": self.dropped,
            "sizes": {n: len(ws) for n, ws in self.used.items()},
            "smallest_p": self.min_p,
            "can_reach_alpha": self.can_reach_alpha,
            "effect_size_d": self.result.effect_size,
            "p_value": self.result.p_value,
            "verdict": self.verdict(),
        }


def seed_weat(
    sets: Mapping[str, Sequence[str]], vectors: Any, *, alpha: float = 0.05, test: WEAT | None = None
) -> SeedWeat:
    """Run WEAT on the reader's four sets ``{name: words}`` (X, Y, A, B in this order) and say what it means.

    Words without a vector are left out and named (:attr:`SeedWeat.notes`); when the target sets are too
    small for any p-value below ``alpha`` the notes say so and give the smallest p the test can reach.  A set
    that is empty, or empty once the unknown words are left out, raises :class:`ValueError` naming it.
    ``test`` is the :class:`~biaskit.metrics.weat.WEAT` to run (default settings otherwise).
    """
    if len(sets) != 4:
        raise ValueError(f"WEAT needs four word sets (X, Y, A, B), got {len(sets)}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")
    names = tuple(str(n).strip() for n in sets)
    if any(not n for n in names):
        raise ValueError("every set needs a name")
    if len(set(names)) < 4:
        raise ValueError(f"two sets have the same name ({_words(names)}): give each set its own name")
    test = test or WEAT()
    vocab = vector_vocabulary(vectors)
    given: dict[str, list[str]] = {}
    dropped: dict[str, list[str]] = {}
    used: dict[str, list[str]] = {}
    for name, words in zip(names, sets.values(), strict=True):
        if isinstance(words, str):
            raise TypeError(f"{name}: give a list of words, not one string")
        ws = list(dict.fromkeys(str(w) for w in words))
        if not ws:
            raise ValueError(f"{name} has no word: type at least one")
        given[name] = ws
        dropped[name] = [w for w in ws if w not in vocab]
        used[name] = [w for w in ws if w in vocab]
        if not used[name]:
            raise ValueError(
                f"none of the words of {name} is in the vocabulary of these vectors (left out: {_words(ws)}); "
                "check the spelling and the case (Paris is not paris)"
            )
    x, y, a, b = names
    result = test.run(used[x], used[y], used[a], used[b], vectors, names=names)
    n_x, n_y = len(used[x]), len(used[y])
    n_splits = math.comb(n_x + n_y, n_x)
    min_p = smallest_p_value(
        n_x, n_y, n_permutations=test.n_permutations, exact_threshold=test.exact_threshold
    )
    exact = result.details.get("permutation_method") == "exact"
    notes = [
        f"Left out of {name} (no vector for {'it' if len(ws) == 1 else 'them'}): {_words(ws)}."
        for name, ws in dropped.items()
        if ws
    ]
    if min_p >= alpha:
        notes.append(
            f"Too few words to reach α = {alpha:g}: with {n_x} + {n_y} words in {x} and {y} there are only "
            f"{n_splits:,} ways to split them, so the smallest p-value this exact test can give is 1/{n_splits:,} "
            f"= {min_p:.3g}, and nothing can be significant at α = {alpha:g}. Add words to {x} and {y}."
        )
    return SeedWeat(
        names=names,  # type: ignore[arg-type]
        given=given,
        dropped=dropped,
        used=used,
        alpha=alpha,
        min_p=min_p,
        n_splits=n_splits,
        exact=exact,
        result=result,
        notes=notes,
    )
