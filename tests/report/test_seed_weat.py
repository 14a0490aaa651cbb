"""The seed-word form of the guided tour says what it did in the reader's words:
:func:`biaskit.report.seed_weat.seed_weat` on the tour's real vectors (word2vec GoogleNews, the 13,000-word
subset) and Caliskan et al.'s WEAT 7 sets, and the form (:mod:`biaskit.report.widgets`) with name boxes."""

from __future__ import annotations

import math
import re

import pytest

from biaskit.metrics.weat import WEAT, load_caliskan_weat
from biaskit.report.seed_weat import seed_weat, smallest_p_value


@pytest.fixture(scope="module")
def vectors():
    from biaskit.embeddings.vectors import load_reference_vectors

    try:
        return load_reference_vectors("word2vec-googlenews-wefe")
    except (FileNotFoundError, ImportError) as exc:  # pragma: no cover - the wefe data package is missing
        pytest.skip(f"the tour's vectors are not installed: {exc}")


@pytest.fixture(scope="module")
def weat7():
    return load_caliskan_weat()["weat7"]


def _sets(weat7, x=None, y=None):
    return {
        "Math": list(x if x is not None else weat7.X),
        "Arts": list(y if y is not None else weat7.Y),
        "MaleTerms": list(weat7.A),
        "FemaleTerms": list(weat7.B),
    }


def test_smallest_p_value_of_the_exact_and_the_sampled_test():
    one = {"alternative": "greater"}
    assert smallest_p_value(3, 3, **one) == pytest.approx(1 / 20)  # C(6, 3) = 20
    assert smallest_p_value(1, 1, **one) == pytest.approx(1 / 2)
    assert smallest_p_value(8, 8, **one) == pytest.approx(1 / 12_870)
    assert smallest_p_value(4, 2, **one) == pytest.approx(1 / 15)
    # two-sided with equal sizes, a split and its mirror image are equally extreme: twice the floor
    assert smallest_p_value(3, 3) == pytest.approx(2 / 20)
    assert smallest_p_value(4, 2) == pytest.approx(1 / 15)  # no mirror split with unequal sizes
    # 20 + 20 words: C(40, 20) re-splits is far above the exact threshold, so 10,000 are drawn
    assert smallest_p_value(20, 20, n_permutations=10_000) == pytest.approx(1 / 10_001)
    with pytest.raises(ValueError, match="at least one word"):
        smallest_p_value(0, 3)
    with pytest.raises(ValueError, match="alternative"):
        smallest_p_value(3, 3, alternative="bigger")


def test_the_verdict_uses_the_readers_set_names(vectors, weat7):
    run = seed_weat(_sets(weat7), vectors, alpha=0.05)
    verdict = run.verdict()
    assert run.significant and run.result.p_value < 0.05 and run.alternative == "two-sided"
    assert verdict.startswith(
        "Math is more associated with MaleTerms than Arts is (and Arts more with FemaleTerms)"
    )
    assert "two-sided test" in verdict
    assert f"d = {run.result.effect_size:.2f}" in verdict
    page = run._repr_html_()
    for role in ("'X'", "'Y'", "'A'", "'B'", "X (targets)"):
        assert role not in page and role not in verdict
    assert "Math" in page and "FemaleTerms" in page
    assert not run.notes  # every word has a vector, 8 + 8 words are plenty


def test_every_dropped_word_is_named_set_by_set(vectors, weat7):
    math_words = [*weat7.X, "qwxzqy", "computer programmer"]
    male = [*weat7.A, "zzmalezz"]
    run = seed_weat({**_sets(weat7, x=math_words), "MaleTerms": male}, vectors)
    assert run.dropped == {
        "Math": ["qwxzqy", "computer programmer"],
        "Arts": [],
        "MaleTerms": ["zzmalezz"],
        "FemaleTerms": [],
    }
    assert "Left out of Math (no vector for them): qwxzqy and computer programmer." in run.notes
    assert "Left out of MaleTerms (no vector for it): zzmalezz." in run.notes
    assert run.used["Math"] == list(weat7.X)
    assert "qwxzqy and computer programmer" in run._repr_html_()


def test_three_and_three_words_cannot_be_significant_at_005_and_the_form_says_so(vectors, weat7):
    run = seed_weat(_sets(weat7, x=weat7.X[:3], y=weat7.Y[:3]), vectors, alpha=0.05)
    assert run.n_splits == 20 and run.min_p == pytest.approx(0.1) and not run.can_reach_alpha
    assert run.result.p_value >= run.min_p - 1e-12  # the test really cannot go lower
    assert not run.significant
    warning = next(n for n in run.notes if n.startswith("Too few words"))
    assert "the 3 + 3 target words of Arts and Math" in warning and "2/20 = 0.1" in warning
    assert "nothing can be significant at α = 0.05" in warning
    assert "With these set sizes no result could be significant" in run.verdict()
    assert run.verdict().startswith(
        "No evidence at α = 0.05 that the target sets differ in how they associate with MaleTerms and "
        "FemaleTerms"
    )
    # one-sided, the floor is 1/20 = 0.05: still not below 0.05
    one = seed_weat(run.given, vectors, alternative="greater")
    assert one.min_p == pytest.approx(0.05) and any("1/20 = 0.05" in n for n in one.notes)
    # at a looser level the one-sided test can reach it: no warning
    assert not any(
        n.startswith("Too few") for n in seed_weat(run.given, vectors, alpha=0.1, alternative="greater").notes
    )
    # 4 + 3 words: C(7, 4) = 35 re-splits, 1/35 < 0.05: no warning
    assert seed_weat(_sets(weat7, x=weat7.X[:4], y=weat7.Y[:3]), vectors).can_reach_alpha


@pytest.mark.parametrize("alternative", ["two-sided", "greater"])
@pytest.mark.parametrize(("n_x", "n_y"), [(2, 2), (3, 2), (3, 3), (4, 4)])
def test_no_p_value_below_the_announced_floor(vectors, weat7, n_x, n_y, alternative):
    run = seed_weat(_sets(weat7, x=weat7.X[:n_x], y=weat7.Y[:n_y]), vectors, alternative=alternative)
    mirror = alternative == "two-sided" and n_x == n_y
    assert run.min_p == pytest.approx((2 if mirror else 1) / math.comb(n_x + n_y, n_x))
    assert run.result.p_value >= run.min_p - 1e-12


def test_swapping_the_target_sets_flips_the_sign_and_nothing_else(vectors, weat7):
    """Two-sided (the default): the verdict does not depend on the order the sets were typed in; only the
    sign of the statistic and of d flips (the form once said "no evidence, p = 1.000" in one order and
    "p = 0.001" in the other, a one-sided test whose direction the reader never chose)."""
    run = seed_weat(_sets(weat7), vectors)
    swapped = seed_weat(
        {
            "Arts": list(weat7.Y),
            "Math": list(weat7.X),
            "MaleTerms": list(weat7.A),
            "FemaleTerms": list(weat7.B),
        },
        vectors,
    )
    assert swapped.result.p_value == pytest.approx(run.result.p_value, abs=1e-12)
    assert swapped.result.effect_size == pytest.approx(-run.result.effect_size, abs=1e-12)
    assert swapped.result.statistic == pytest.approx(-run.result.statistic, abs=1e-12)
    assert swapped.significant == run.significant
    d = f"{run.result.effect_size:.2f}"
    assert swapped.verdict() == run.verdict().replace(f"d = {d}", f"d = -{d}")
    assert swapped.notes == run.notes and swapped.reading() == run.reading()
    # the attribute sets swapped: the same test, the sign flipped
    attr = seed_weat({**_sets(weat7), "MaleTerms": list(weat7.B), "FemaleTerms": list(weat7.A)}, vectors)
    assert attr.result.p_value == pytest.approx(run.result.p_value, abs=1e-12)
    assert attr.result.effect_size == pytest.approx(-run.result.effect_size, abs=1e-12)
    # small sets with left-out words: still the same verdict and notes in both orders
    x, y = [*weat7.X[:3], "qwxzqy"], weat7.Y[:4]
    a = seed_weat(_sets(weat7, x=x, y=y), vectors)
    b = seed_weat({"Arts": y, "Math": x, "MaleTerms": list(weat7.A), "FemaleTerms": list(weat7.B)}, vectors)
    da = f"{a.result.effect_size:.2f}"
    db = f"{b.result.effect_size:.2f}"
    assert b.verdict() == a.verdict().replace(f"d = {da}", f"d = {db}") and float(db) == -float(da)
    assert b.notes == a.notes


def test_one_sided_only_when_chosen_and_said_so(vectors, weat7):
    """A one-sided test runs only on request; its verdict says which direction was chosen, and a result the
    other way round is said to be the other way round, not 'no evidence' of nothing."""
    greater = seed_weat(_sets(weat7), vectors, alternative="greater")
    two = seed_weat(_sets(weat7), vectors)
    assert greater.result.alternative == "greater" and two.result.alternative == "two-sided"
    assert greater.result.p_value < two.result.p_value  # half of it, in the observed direction
    assert "one-sided test, as chosen" in greater.verdict()
    less = seed_weat(_sets(weat7), vectors, alternative="less")
    assert less.result.p_value > 0.9 and not less.significant
    assert less.verdict().startswith("No evidence at α = 0.05 that Math is more associated with FemaleTerms")
    assert "it is the other way round, Math is more associated with MaleTerms" in less.verdict()
    assert "cannot be significant" in less.reading()
    with pytest.raises(ValueError, match="alternative"):
        seed_weat(_sets(weat7), vectors, alternative="both")


def test_unusable_sets_are_named(vectors, weat7):
    with pytest.raises(ValueError, match=r"^Arts has no word"):
        seed_weat(_sets(weat7, y=[]), vectors)
    with pytest.raises(ValueError, match=r"none of the words of Arts .*left out: qwxzqy and zzqq"):
        seed_weat(_sets(weat7, y=["qwxzqy", "zzqq"]), vectors)
    with pytest.raises(ValueError, match="two sets have the same name"):
        seed_weat(dict(zip(["Math", "Math ", "A", "B"], _sets(weat7).values(), strict=True)), vectors)
    with pytest.raises(ValueError, match="four word sets"):
        seed_weat({"Math": ["math"]}, vectors)


def test_a_sampled_test_uses_the_tests_own_settings(vectors, weat7):
    test = WEAT(n_permutations=500, exact_threshold=100)  # 8 + 8 words: 12,870 re-splits > 100: sampled
    run = seed_weat(_sets(weat7), vectors, test=test)
    assert not run.exact and run.min_p == pytest.approx(1 / 501)
    assert run.result.details["n_partitions_evaluated"] <= 501 and run.result.alternative == "two-sided"


# ----------------------------------------------------------------------------- the form
def test_the_form_runs_the_readers_names_and_words(vectors, weat7):
    pytest.importorskip("ipywidgets")
    from biaskit.report.widgets import seed_word_form

    roles = ["X (targets)", "Y (targets)", "A (attributes)", "B (attributes)"]
    form = seed_word_form(_sets(weat7), lambda s: seed_weat(s, vectors), roles=roles)
    assert not form.menus  # no choices: on_run gets the words only
    assert [b.description for b in form.name_boxes.values()] == [f"{r}: name" for r in roles]
    assert [b.value for b in form.name_boxes.values()] == ["Math", "Arts", "MaleTerms", "FemaleTerms"]
    form.name_boxes["Math"].value = "Care"
    form.boxes["Math"].value = "nurse, teacher, secretary, qwxzqy"
    form.name_boxes["Arts"].value = "Technical"
    form.boxes["Arts"].value = "engineer, pilot, carpenter"
    form.button.click()
    run = form.last_result
    assert form.last_error is None and run.names == ("Care", "Technical", "MaleTerms", "FemaleTerms")
    assert "Left out of Care (no vector for it): qwxzqy." in run.notes
    assert any("3 + 3 target words of Care and Technical" in n for n in run.notes)
    assert re.match(r"No evidence at α = 0\.05 that the target sets differ", run.verdict())
    assert "Technical is more associated with MaleTerms than Care is" in run.verdict()
    # two sets with one name: a readable message, not a traceback
    form.name_boxes["Arts"].value = "Care"
    form.button.click()
    assert isinstance(form.last_error, ValueError) and "both named 'Care'" in str(form.last_error)


def test_the_tours_form_is_two_sided_by_default_and_offers_the_one_sided_tests(vectors, weat7, monkeypatch):
    """:func:`weat_form` (the tour's cell): the default sets' result first, then the form with a Test menu
    whose first (default) entry is two-sided; choosing a one-sided entry runs that test."""
    pytest.importorskip("ipywidgets")
    import IPython.display

    from biaskit.report.seed_weat import ALTERNATIVE_CHOICES, weat_form

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **_: shown.append(obj))
    form = weat_form({"vectors": vectors, "weat7": weat7, "alpha": 0.05})
    (first,) = shown
    assert first.alternative == "two-sided" and first.names == ("Math", "Arts", "MaleTerms", "FemaleTerms")
    menu = form.menus["alternative"]
    assert menu.value == "two-sided" and [v for _, v in menu.options] == [v for _, v in ALTERNATIVE_CHOICES]
    form.button.click()
    assert form.last_result.alternative == "two-sided"
    menu.value = "greater"
    form.button.click()
    assert form.last_result.alternative == "greater" and "one-sided" in form.last_result.verdict()
    form.boxes["Math"].value = "nurse"
    form.reset()
    assert menu.value == "two-sided" and form.boxes["Math"].value == ", ".join(weat7.X)
