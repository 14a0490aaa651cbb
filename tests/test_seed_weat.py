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
    assert smallest_p_value(3, 3) == pytest.approx(1 / 20)  # C(6, 3) = 20
    assert smallest_p_value(1, 1) == pytest.approx(1 / 2)
    assert smallest_p_value(8, 8) == pytest.approx(1 / 12_870)
    assert smallest_p_value(4, 2) == pytest.approx(1 / 15)
    # 20 + 20 words: C(40, 20) re-splits is far above the exact threshold, so 10,000 are drawn
    assert smallest_p_value(20, 20, n_permutations=10_000) == pytest.approx(1 / 10_001)
    with pytest.raises(ValueError, match="at least one word"):
        smallest_p_value(0, 3)


def test_the_verdict_uses_the_readers_set_names(vectors, weat7):
    run = seed_weat(_sets(weat7), vectors, alpha=0.05)
    verdict = run.verdict()
    assert run.significant and run.result.p_value < 0.05
    assert verdict.startswith("Math is more associated with MaleTerms (and Arts with FemaleTerms)")
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
    assert run.n_splits == 20 and run.min_p == pytest.approx(0.05) and not run.can_reach_alpha
    assert run.result.p_value >= run.min_p - 1e-12  # the test really cannot go lower
    assert not run.significant
    warning = next(n for n in run.notes if n.startswith("Too few words"))
    assert "3 + 3 words in Math and Arts" in warning and "1/20 = 0.05" in warning
    assert "nothing can be significant at α = 0.05" in warning
    assert "With these set sizes no result could be significant" in run.verdict()
    assert run.verdict().startswith("No evidence at α = 0.05 that Math is more associated with MaleTerms")
    # at a looser level the same sets can reach it: no warning
    assert not any(n.startswith("Too few") for n in seed_weat(run.given, vectors, alpha=0.1).notes)
    # 4 + 3 words: C(7, 4) = 35 re-splits, 1/35 < 0.05: no warning
    assert seed_weat(_sets(weat7, x=weat7.X[:4], y=weat7.Y[:3]), vectors).can_reach_alpha


@pytest.mark.parametrize(("n_x", "n_y"), [(2, 2), (3, 2), (3, 3), (4, 4)])
def test_no_p_value_below_the_announced_floor(vectors, weat7, n_x, n_y):
    run = seed_weat(_sets(weat7, x=weat7.X[:n_x], y=weat7.Y[:n_y]), vectors)
    assert run.min_p == pytest.approx(1 / math.comb(n_x + n_y, n_x))
    assert run.result.p_value >= run.min_p - 1e-12


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


# ----------------------------------------------------------------------------- the form
def test_the_form_runs_the_readers_names_and_words(vectors, weat7):
    pytest.importorskip("ipywidgets")
    from biaskit.report.widgets import seed_word_form

    roles = ["X (targets)", "Y (targets)", "A (attributes)", "B (attributes)"]
    form = seed_word_form(_sets(weat7), lambda s: seed_weat(s, vectors), roles=roles)
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
    assert any("3 + 3 words in Care and Technical" in n for n in run.notes)
    assert re.match(r"No evidence at α = 0\.05 that Care is more associated with MaleTerms", run.verdict())
    # two sets with one name: a readable message, not a traceback
    form.name_boxes["Arts"].value = "Care"
    form.button.click()
    assert isinstance(form.last_error, ValueError) and "both named 'Care'" in str(form.last_error)
