"""What the seed-word form of the guided tour (``notebooks/00_tour.ipynb``) runs and says: one WEAT on the
reader's own word sets, in the reader's own words ("fail loudly").

:func:`seed_weat` takes the four sets as ``{name: words}`` (in the order X, Y, A, B: two target sets, two
attribute sets) and returns a :class:`SeedWeat` that a notebook displays.  It

* tests **two-sided by default**: is there a difference between the two target sets, in either
  direction?  Typing the target sets in the other order then flips the sign of the statistic and of the
  effect size and nothing else (the same p-value and the same verdict); the direction is said in words
  ("Math is more associated with MaleTerms than Arts is").  A one-sided test -- Caliskan et al.'s (2017) --
  is run only when the reader chooses its direction (``alternative="greater"``: X more associated with A;
  ``"less"``: X more associated with B);
* **names every word left out** because the vectors have no vector for it, set by set;
* **warns when the sets are too small for the test to reach alpha**: with ``n_X`` and ``n_Y`` target words
  the exact permutation test has ``C(n_X + n_Y, n_X)`` ways to re-split them, so no p-value can be below
  ``1 / C(n_X + n_Y, n_X)`` one-sided, nor below twice that two-sided when ``n_X = n_Y`` (the split and its
  mirror image are equally extreme): 3 + 3 words give at least 0.05 one-sided and 0.1 two-sided
  (:func:`smallest_p_value`);
* words its **verdict with the reader's set names**, never with "X" and "A".

A set with no word, or with no word the vectors know, is a :class:`ValueError` naming the set (and the
words left out): the form shows it as "Could not run with these words: ..." and the reader can fix it.
:func:`weat_form` builds the tour's form; its cell also runs on its own in a fresh kernel.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from biaskit.core.html import escape_html
from biaskit.core.results import TestResult, format_p_value
from biaskit.data.wordlists import vector_vocabulary
from biaskit.metrics.weat import WEAT

__all__ = ["ALTERNATIVE_CHOICES", "SeedWeat", "seed_weat", "smallest_p_value", "weat_form"]

#: the roles of the four sets, in order
ROLES = ("X", "Y", "A", "B")
#: the vectors of the tour's WEAT (its ``vectors_name`` parameter's default)
TOUR_VECTORS = "word2vec-googlenews-wefe"
#: the form's menu of the test's direction: two-sided first (the default)
ALTERNATIVE_CHOICES: tuple[tuple[str, str], ...] = (
    ("two-sided: a difference in either direction", "two-sided"),
    ("one-sided: X more associated with A than Y is", "greater"),
    ("one-sided: X more associated with B than Y is", "less"),
)


def smallest_p_value(
    n_x: int,
    n_y: int,
    *,
    alternative: str = "two-sided",
    n_permutations: int = 10_000,
    exact_threshold: int = 100_000,
) -> float:
    """The smallest p-value WEAT's permutation test can give with ``n_x`` and ``n_y`` target words.

    The test re-splits the ``n_x + n_y`` target words into sets of ``n_x`` and ``n_y``; the observed split is
    one of them and always counts, so an exact test (every re-split enumerated: WEAT's ``exact="auto"`` does
    that when there are at most ``exact_threshold`` of them, or when ``n_permutations`` covers them) gives
    at least ``1 / C(n_x + n_y, n_x)`` one-sided.  Two-sided with ``n_x = n_y`` the mirror split (the two
    sets exchanged) is exactly as far from the null mean (0), so the bound is ``2 / C``.  A sampled test gives
    at least ``1 / (n_permutations + 1)``.  ``smallest_p_value(3, 3, alternative="greater")`` is
    ``1 / 20 = 0.05``; two-sided it is ``0.1``.
    """
    if n_x < 1 or n_y < 1:
        raise ValueError(f"both target sets need at least one word, got {n_x} and {n_y}")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    total = math.comb(n_x + n_y, n_x)
    if total <= exact_threshold or n_permutations >= total - 1:
        mirror = alternative == "two-sided" and n_x == n_y
        return (2.0 if mirror else 1.0) / total
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
    alternative: str = "two-sided"

    @property
    def can_reach_alpha(self) -> bool:
        """Whether the sets are large enough for any p-value below ``alpha``."""
        return self.min_p < self.alpha

    @property
    def significant(self) -> bool:
        return bool(self.result.p_value < self.alpha)

    def direction(self) -> str:
        """Which target set leans to which attribute set in these vectors, in words.  It does not depend on
        the order the sets were typed in: ``s(X, Y, A, B) > 0`` means the X words are, on average, more
        associated with A (relative to B) than the Y words; ``< 0`` the other way round."""
        x, y, a, b = self.names
        s = self.result.statistic
        if s > 0:
            return f"{x} is more associated with {a} than {y} is (and {y} more with {b})"
        if s < 0:
            return f"{y} is more associated with {a} than {x} is (and {x} more with {b})"
        return f"{x} and {y} are exactly as associated with {a} as with {b}"

    def test_text(self) -> str:
        """The test that ran, in a few words: two-sided, or one-sided in the direction the reader chose."""
        return "two-sided test" if self.alternative == "two-sided" else "one-sided test, as chosen"

    def claim(self) -> str:
        """What the test looks for (its alternative hypothesis), with the sets' names."""
        x, y, a, b = self.names
        if self.alternative == "greater":
            return f"{x} is more associated with {a} than {y} is"
        if self.alternative == "less":
            return f"{x} is more associated with {b} than {y} is"
        return f"the target sets differ in how they associate with {a} and {b}"

    def verdict(self) -> str:
        """The result in one sentence, with the sets' own names.

        Two-sided (the default), typing the target sets (or the attribute sets) in the other order changes
        only the sign of ``d`` in it."""
        r = self.result
        p = format_p_value(r.p_value)
        p_text = f"p {p}" if p.startswith("<") else f"p = {p}"
        stats = f"effect size d = {r.effect_size:.2f}, {p_text}, {self.test_text()}"
        if self.significant:
            return f"{self.direction()}, more than chance would give ({stats}; below α = {self.alpha:g})."
        why = (
            f" With these set sizes no result could be significant at α = {self.alpha:g}."
            if not self.can_reach_alpha
            else ""
        )
        s = r.statistic
        if (self.alternative == "greater" and s < 0) or (self.alternative == "less" and s > 0):
            return (
                f"No evidence at α = {self.alpha:g} that {self.claim()} ({stats}): in these vectors it is "
                f"the other way round, {self.direction()}.{why}"
            )
        return (
            f"No evidence at α = {self.alpha:g} that {self.claim()} ({stats}): in these vectors "
            f"{self.direction()}, but a random re-split of the target words often gives as large a "
            f"difference.{why}"
        )

    def reading(self) -> str:
        """How to read the sign of d and the test, in one sentence."""
        if self.alternative == "two-sided":
            return (
                "d is positive when the first target set is the one more associated with the first attribute "
                "set, so typing the sets in the other order flips its sign; the p-value and the verdict stay."
            )
        return (
            f"This one-sided test asks only whether {self.claim()}: a difference the other way cannot be "
            "significant (choose the two-sided test to look for either)."
        )

    def __str__(self) -> str:
        return "\n".join([self.verdict(), self.reading(), *self.notes])

    __repr__ = __str__  # what a console shows: the verdict and the notes, never the word lists

    def _repr_html_(self) -> str:
        notes = "".join(f"<li>{escape_html(n)}</li>" for n in self.notes)
        return (
            f"<div class='bk-seed-weat'><p><b>{escape_html(self.verdict())}</b></p>"
            f"<p class='bk-seed-reading'>{escape_html(self.reading())}</p>"
            + (f"<ul class='bk-seed-notes'>{notes}</ul>" if notes else "")
            + self.result.to_html(self.alpha)
            + "</div>"
        )

    def to_dict(self) -> dict[str, Any]:
        """The run as plain values (for a results file)."""
        return {
            "names": dict(zip(ROLES, self.names, strict=True)),
            "alternative": self.alternative,
            "dropped": self.dropped,
            "sizes": {n: len(ws) for n, ws in self.used.items()},
            "smallest_p": self.min_p,
            "can_reach_alpha": self.can_reach_alpha,
            "effect_size_d": self.result.effect_size,
            "p_value": self.result.p_value,
            "verdict": self.verdict(),
        }


def seed_weat(
    sets: Mapping[str, Sequence[str]],
    vectors: Any,
    *,
    alpha: float = 0.05,
    alternative: str = "two-sided",
    test: WEAT | None = None,
) -> SeedWeat:
    """Run WEAT on the reader's four sets ``{name: words}`` (X, Y, A, B in this order) and say what it means.

    ``alternative`` is the test's direction: ``"two-sided"`` (default), or the one-sided ``"greater"`` (X
    more associated with A than Y is) or ``"less"`` (X more associated with B), when the reader chose it.
    Words without a vector are left out and named (:attr:`SeedWeat.notes`); when the target sets are too
    small for any p-value below ``alpha`` the notes say so and give the smallest p the test can reach.  A set
    that is empty, or empty once the unknown words are left out, raises :class:`ValueError` naming it.
    ``test`` is the :class:`~biaskit.metrics.weat.WEAT` to run (default settings otherwise; its own
    ``alternative`` is replaced by ``alternative``).
    """
    if len(sets) != 4:
        raise ValueError(f"WEAT needs four word sets (X, Y, A, B), got {len(sets)}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    names = tuple(str(n).strip() for n in sets)
    if any(not n for n in names):
        raise ValueError("every set needs a name")
    if len(set(names)) < 4:
        raise ValueError(f"two sets have the same name ({_words(names)}): give each set its own name")
    test = dataclasses.replace(test or WEAT(), alternative=alternative)
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
                f"none of the words of {name} is in the vocabulary of these vectors (left out: "
                f"{_words(ws)}); check the spelling and the case (Paris is not paris)"
            )
    x, y, a, b = names
    result = test.run(used[x], used[y], used[a], used[b], vectors, names=names)
    n_x, n_y = len(used[x]), len(used[y])
    n_splits = math.comb(n_x + n_y, n_x)
    min_p = smallest_p_value(
        n_x,
        n_y,
        alternative=alternative,
        n_permutations=test.n_permutations,
        exact_threshold=test.exact_threshold,
    )
    exact = result.details.get("permutation_method") == "exact"
    # notes in the order of the set names, so that typing the sets in another order gives the same notes
    notes = [
        f"Left out of {name} (no vector for {'it' if len(ws) == 1 else 'them'}): {_words(ws)}."
        for name, ws in sorted(dropped.items())
        if ws
    ]
    if min_p >= alpha:
        (first, k1), (second, k2) = sorted([(x, n_x), (y, n_y)])
        bound = "2" if alternative == "two-sided" and n_x == n_y else "1"
        notes.append(
            f"Too few words to reach α = {alpha:g}: the {k1} + {k2} target words of {first} and {second} can "
            f"be split in only {n_splits:,} ways, so the smallest p-value this exact test can give is "
            f"{bound}/{n_splits:,} = {min_p:.3g}, and nothing can be significant at α = {alpha:g}. Add words "
            f"to {first} and {second}."
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
        alternative=alternative,
    )


def weat_form(namespace: Mapping[str, Any] | None = None) -> Any:
    """The guided tour's seed-word form: WEAT 7's sets in editable boxes, the test's direction (two-sided by
    default) and a run button; displays the result of the default sets first (a headless run has it too).

    ``namespace`` is the notebook's ``globals()``: the form uses its ``vectors``, ``weat7`` and ``alpha``
    when the cells above made them, and otherwise loads the tour's defaults itself (the vectors named by
    ``vectors_name``, default :data:`TOUR_VECTORS`; Caliskan et al.'s WEAT 7; α = 0.05), so the cell also
    runs on its own in a fresh kernel.  Returns the form (``None`` without ipywidgets).
    """
    from IPython.display import display

    from biaskit.report.widgets import seed_word_form

    ns = dict(namespace or {})
    vectors = ns.get("vectors")
    if vectors is None:
        from biaskit.embeddings.vectors import load_reference_vectors

        vectors = load_reference_vectors(ns.get("vectors_name", TOUR_VECTORS))
    weat7 = ns.get("weat7")
    if weat7 is None:
        from biaskit.metrics.weat import load_caliskan_weat

        weat7 = load_caliskan_weat()["weat7"]
    alpha = float(ns.get("alpha", 0.05))

    def run(word_sets: dict[str, list[str]], alternative: str = "two-sided") -> SeedWeat:
        return seed_weat(word_sets, vectors, alpha=alpha, alternative=alternative)

    defaults = dict(
        zip(weat7.names, (list(weat7.X), list(weat7.Y), list(weat7.A), list(weat7.B)), strict=True)
    )
    display(run(defaults))  # computed also when nobody can click (papermill, the report)
    return seed_word_form(
        defaults,
        on_run=run,
        roles=["X (targets)", "Y (targets)", "A (attributes)", "B (attributes)"],
        choices={"alternative": ("Test", list(ALTERNATIVE_CHOICES))},
    )
