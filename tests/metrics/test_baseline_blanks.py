"""Items without a BLANK: the thesis's baseline E^Comp and the StereoSet scorer leave them
out with a WARNING naming their real rows (file lines or input positions), never counting them as
stereotypical; a side with no scorable word has no probability (NaN), not 0."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from biaskit.lm import baseline_probabilities, tiny_masked_lm
from biaskit.metrics import stereoset as st

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CONTEXTS = [
    "BLANK is a competent nurse",
    "BLANK performed poorly as a nurse",
    "The nurse is here.",
    "El BLANK llegó.",
]
STER = [["she", "maria"], ["he", "mario"], ["she", "maria"], ["médico", "这"]]  # 这: [UNK] for the tiny model
ANTI = [["he", "mario"], ["she", "maria"], ["he", "mario"], ["enfermera"]]
LINES = [10, 11, 12, 13]  # where each context sits in its file


@pytest.fixture(scope="module")
def lm():
    return tiny_masked_lm(seed=0)


def _warnings(caplog, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno == logging.WARNING]


def test_a_context_without_blank_is_left_out_and_named_by_its_file_line(lm, caplog):
    with caplog.at_level(logging.WARNING):
        table, test = st.comp_baseline_sets(lm, CONTEXTS, STER, ANTI, lines=LINES)
    # no probability for the context without BLANK: NaN on both sides, not 0 and 0
    assert np.isnan(table.loc[2, "p_ster"]) and np.isnan(table.loc[2, "p_anster"])
    assert (table.loc[2, "n_ster"], table.loc[2, "n_anster"]) == (0, 0)
    assert table["stereotypical_preferred"].tolist()[2] is None
    # left out of N, not counted as stereotypical (0 >= 0 was counted before)
    usable = [0, 1, 3]
    preferred = [table.loc[i, "p_ster"] >= table.loc[i, "p_anster"] for i in usable]
    ref = st.comp_baseline_test(table.loc[usable, "p_ster"], table.loc[usable, "p_anster"])
    assert test.n == 3 and test.estimate == pytest.approx(sum(preferred) / 3)
    assert test.p_value == pytest.approx(ref.p_value) and test.details["excluded"] == ["line 12"]
    # the WARNINGs name the file lines of the contexts, not positions in the flattened word list
    (fill,) = _warnings(caplog, "biaskit.lm.fill_mask")
    assert "context does not contain 'BLANK': no probability, left out (lines 12)" in fill
    assert "word tokenises to [UNK] (lines 13)" in fill
    (comp,) = _warnings(caplog, "biaskit.metrics.stereoset")
    assert "1 of 4 sentence(s) have no probability on a side" in comp and "(line 12)" in comp
    rep = table.attrs["report"]
    assert sorted(rep.issues["line"].tolist()) == [12, 13] and sorted(rep.issues["row"].tolist()) == [2, 3]


def test_without_lines_the_rows_are_the_input_positions(lm, caplog):
    with caplog.at_level(logging.WARNING, logger="biaskit.lm.fill_mask"):
        res = baseline_probabilities(lm, CONTEXTS, STER, ANTI, progress=False)
    (fill,) = _warnings(caplog, "biaskit.lm.fill_mask")
    # one issue for the context without BLANK (not one per word), and the [UNK] word named by its context's
    # row 3, not its position 7 in the list of (context, word) pairs
    assert "left out (rows 2)" in fill and "[UNK] (rows 3)" in fill and "rows 7" not in fill
    assert res.attrs["report"].issues["row"].tolist() == [2, 3]
    with pytest.raises(ValueError, match="lines must give one line per context"):
        baseline_probabilities(lm, CONTEXTS, STER, ANTI, lines=[1, 2])


def test_comp_baseline_test_leaves_out_sentences_without_probability(caplog):
    with caplog.at_level(logging.WARNING, logger="biaskit.metrics.stereoset"):
        res = st.comp_baseline_test([0.5, np.nan, 0.3, 0.9, 0.2], [0.4, 0.1, 0.4, np.nan, 0.1])
    assert res.n == 3 and res.details["count"] == 2 and res.details["excluded"] == [1, 3]
    assert "2 of 5 sentence(s) have no probability on a side" in caplog.text and "(rows 1, 3)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="biaskit.metrics.stereoset"):
        labelled = st.comp_baseline_test([0.5, np.nan], [0.4, 0.1], rows=["ex-a", "ex-b"])
    assert labelled.n == 1 and "(ex-b)" in caplog.text
    with pytest.raises(ValueError, match="no sentence has a probability on both sides"):
        st.comp_baseline_test([np.nan], [0.1])
    with pytest.raises(ValueError, match="rows must label every sentence"):
        st.comp_baseline_test([0.1, 0.2], [0.1, 0.2], rows=[1])


def test_the_stereoset_scorer_leaves_out_an_example_without_blank_and_names_its_row(
    caplog, stereoset_example
):
    gold = {
        "version": "test",
        "data": {
            "intrasentence": [
                stereoset_example(0),
                stereoset_example(1, "The man is here."),
                stereoset_example(2),
            ],
            "intersentence": [],
        },
    }
    # the example without BLANK would count as stereotypical (its stereotype option scores highest)
    preds = {
        "intrasentence": [
            {"id": f"s{i}{k}", "score": [0.2, 0.5, 0.1][k] if i != 1 else [0.9, 0.1, 0.0][k]}
            for i in range(3)
            for k in range(3)
        ]
    }
    with caplog.at_level(logging.WARNING):
        res = st.ss_proportion_test(preds, gold, missing="drop")
    assert res.n == 2 and res.estimate == 0.0  # ex0 and ex2 only, neither stereotypical
    assert "no BLANK in the context (rows 1)" in caplog.text
    with pytest.raises(ValueError, match="malformed in the gold data"):
        st.ss_proportion_test(preds, gold)  # missing="raise" (default): stops, naming the problem
