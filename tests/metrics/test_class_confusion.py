"""Sayenju (seed 003, chapter 3): DPCCB on the printed 15-class confusion matrix, and the mitigators.

Expected values: the pairs and values the dissertation names (Coverage->Document 0.543,
Billing->Payment 0.212, Coverage->Quote 0.197, EverythingElse->Escalation 0.154, with
the row-normalised variant) and the two pairs the printed Eq. 3.1 gives
(Document->Coverage 0.179, Payment->Billing 0.159), recomputed by hand from the printed
matrix; plus naive loops.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaskit.metrics import class_confusion as cc


@pytest.fixture(scope="module")
def cm() -> pd.DataFrame:
    return cc.load_sayenju_confusion_matrix()


def _naive(c: np.ndarray, axis: str) -> np.ndarray:
    n = c.shape[0]
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            m = max(c[k, j] for k in range(n)) if axis == "pred" else max(c[i, k] for k in range(n))
            out[i, j] = c[i, j] / m if m > 0 else 0.0
    return out


def test_bundled_matrix(cm):
    assert cm.shape == (15, 15)
    assert int(cm.to_numpy().sum()) == 17656
    assert np.trace(cm.to_numpy()) == 14906  # accuracy 0.8442, not the "74.4%" of the text
    assert cm.loc["Coverage_Related", "Document_Related"] == 127
    assert cm.loc["deny"].sum() == 1 and cm["deny"].sum() == 0


@pytest.mark.parametrize("axis", ["pred", "true"])
def test_dpccb_equals_naive_loop(cm, axis):
    beta = cc.dpccb_matrix(cm, normalize=axis)
    np.testing.assert_allclose(beta.to_numpy(), _naive(cm.to_numpy(float), axis), atol=1e-12)
    assert np.all(np.diag(beta.to_numpy()) == 0)
    assert beta.to_numpy().min() >= 0 and beta.to_numpy().max() <= 1


def test_literal_formula_pairs(cm):
    """Eq. 3.1 as printed (column max): only two pairs exceed 0.15."""
    pairs = cc.dpccb_pairs(cc.dpccb_matrix(cm, normalize="pred"), threshold=0.15)
    got = {(s, d): b for s, d, b in pairs.itertuples(index=False)}
    assert set(got) == {("Document_Related", "Coverage_Related"), ("Payment_Related", "Billing_Related")}
    assert got[("Document_Related", "Coverage_Related")] == pytest.approx(0.179, abs=5e-4)
    assert got[("Payment_Related", "Billing_Related")] == pytest.approx(0.159, abs=5e-4)


def test_row_variant_reproduces_the_named_pairs(cm):
    pairs = cc.dpccb_pairs(cc.dpccb_matrix(cm, normalize="true"), threshold=0.15)
    got = {(s, d): b for s, d, b in pairs.itertuples(index=False)}
    expected = {
        ("Coverage_Related", "Document_Related"): 0.543,  # the strongest pair named in the text
        ("Billing_Related", "Payment_Related"): 0.212,
        ("Coverage_Related", "Quote_Related"): 0.197,
        ("EverythingElse", "Escalation"): 0.154,
        ("deny", "EverythingElse"): 1.0,  # a class with one test sample
    }
    assert set(got) == set(expected)
    for k, v in expected.items():
        assert got[k] == pytest.approx(v, abs=5.01e-4)  # printed to 3 decimals (68/320 = 0.2125)
    assert pairs.iloc[0].tolist()[:2] == ["deny", "EverythingElse"]
    assert pairs.iloc[1].tolist()[:2] == ["Coverage_Related", "Document_Related"]
    # two further pairs the text calls significant are below 0.15 under both normalisations
    for axis in ("pred", "true"):
        b = cc.dpccb_matrix(cm, normalize=axis)
        assert b.loc["EverythingElse", "Document_Related"] < 0.15
        assert b.loc["Quote_Related", "Document_Related"] < 0.15
    # row-normalised, their values at the printed precision (docs/records/validation.json)
    b = cc.dpccb_matrix(cm, normalize="true")
    assert b.loc["EverythingElse", "Document_Related"] == pytest.approx(0.083, abs=5e-4)
    assert b.loc["Quote_Related", "Document_Related"] == pytest.approx(0.069, abs=5e-4)


def test_prune(cm):
    pruned = cc.prune_dpccb(cc.dpccb_matrix(cm, normalize="true"), threshold=0.15)
    assert list(pruned.index) == ["Billing_Related", "Coverage_Related", "EverythingElse", "deny"]
    assert list(pruned.columns) == [
        "Document_Related",
        "Escalation",
        "EverythingElse",
        "Payment_Related",
        "Quote_Related",
    ]
    lit = cc.prune_dpccb(cc.dpccb_matrix(cm, normalize="pred"))
    assert list(lit.index) == ["Document_Related", "Payment_Related"]
    assert list(lit.columns) == ["Billing_Related", "Coverage_Related"]


def test_fig_3_4_keeps_the_diagonal(cm):
    b = cc.dpccb_matrix(cm, normalize="pred", zero_diagonal=False).to_numpy()
    # every diagonal cell is its column maximum, except the never-predicted 'deny' (0/0 -> 0)
    np.testing.assert_allclose(np.diag(b)[:-1], 1.0)
    assert b[-1, -1] == 0.0


def test_class_report_against_sklearn_and_fig_3_8(cm):
    from sklearn.metrics import precision_recall_fscore_support

    c = cm.to_numpy()
    y_true = np.repeat(np.repeat(np.arange(15), 15), c.ravel())
    y_pred = np.repeat(np.tile(np.arange(15), 15), c.ravel())
    p, r, f, _ = precision_recall_fscore_support(y_true, y_pred, labels=range(15), zero_division=0)
    rep = cc.class_report_from_confusion(cm)
    np.testing.assert_allclose(rep[["precision", "recall", "f1"]].to_numpy(), np.c_[p, r, f], atol=1e-12)
    from biaskit.core.paths import data_dir

    printed = pd.read_csv(data_dir() / "sayenju" / "fig3_8_classification_report.csv", index_col=0)
    # Fig. 3.8 was printed from a slightly different matrix (supports differ by 11, 1, 11 for
    # Coverage, Document, Policy): recalls agree to 0.01, precisions to 0.015
    assert np.abs(rep["recall"] - printed["recall"]).max() <= 0.01
    assert np.abs(rep["precision"] - printed["precision"]).max() <= 0.015


def test_input_validation():
    with pytest.raises(ValueError, match="square"):
        cc.dpccb_matrix(np.ones((2, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        cc.dpccb_matrix(np.array([[1, -1], [0, 2]]))
    with pytest.raises(ValueError, match="normalize"):
        cc.dpccb_matrix(np.eye(2), normalize="rows")
    b = cc.dpccb_matrix(np.array([[3, 0, 1], [1, 0, 0], [0, 0, 4]]))  # column 1 never predicted
    assert np.all(np.isfinite(b)) and b[0, 1] == 0


# --------------------------------------------------------------------------- mitigation
@pytest.fixture(scope="module")
def synthetic():
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    X, y = cc.make_pairwise_confusion_data(2000, random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, random_state=0, stratify=y)
    primary = LogisticRegression(max_iter=1000).fit(Xtr, ytr)
    return Xtr, Xte, ytr, yte, primary.predict(Xtr), primary.predict(Xte)


def test_synthetic_data_has_directional_confusion(synthetic):
    from sklearn.metrics import confusion_matrix

    _, _, _, yte, _, pte = synthetic
    pairs = cc.dpccb_pairs(cc.dpccb_matrix(confusion_matrix(yte, pte), normalize="true"), threshold=0.15)
    top = {(int(s), int(d)) for s, d in pairs[["source", "destination"]].astype(int).itertuples(index=False)}
    assert {(0, 1), (2, 3)} <= top


@pytest.mark.parametrize("strategy", ["priori", "posteriori"])
def test_mitigators_raise_source_recall(synthetic, strategy):
    from sklearn.metrics import recall_score

    Xtr, Xte, ytr, yte, ptr, pte = synthetic
    ms = [
        cc.PairwiseMitigator(s, d, strategy=strategy, random_state=0).fit(Xtr, ytr, ptr)
        for s, d in ((0, 1), (2, 3))
    ]
    new = cc.mitigate_sequentially(ms, Xte, pte)
    before = recall_score(yte, pte, labels=[0, 2], average=None)
    after = recall_score(yte, new, labels=[0, 2], average=None)
    assert np.all(after > before + 0.05)
    # only predictions of the destination classes may change
    changed = new != pte
    assert np.all(np.isin(pte[changed], [1, 3]))
    table = cc.source_class_metrics(yte, {"original": pte, strategy: new}, [0, 2])
    assert table.loc[strategy, ("0", "recall")] == pytest.approx(after[0])


def test_mitigator_training_sets(synthetic):
    Xtr, _, ytr, _, ptr, _ = synthetic
    pri = cc.PairwiseMitigator(0, 1, strategy="priori").fit(Xtr, ytr)
    assert pri.n_train_ == int(np.isin(ytr, [0, 1]).sum())
    post = cc.PairwiseMitigator(0, 1, strategy="posteriori").fit(Xtr, ytr, ptr)
    assert post.n_train_ == int((np.isin(ptr, [0, 1]) & np.isin(ytr, [0, 1])).sum())
    with pytest.raises(ValueError, match="predictions"):
        cc.PairwiseMitigator(0, 1, strategy="posteriori").fit(Xtr, ytr)
    with pytest.raises(RuntimeError):
        cc.PairwiseMitigator(0, 1).apply(Xtr, ptr)
    with pytest.raises(ValueError):
        cc.PairwiseMitigator(1, 1)


def test_heatmap_smoke(cm):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = cc.plot_confusion_heatmap(cc.prune_dpccb(cc.dpccb_matrix(cm, normalize="true")), title="t")
    assert ax.get_xlabel().startswith("predicted")
    ax = cc.plot_confusion_heatmap(pd.DataFrame([[0.5, 0.0], [0.0, 1.0]]), blank_zeros=True)
    assert sorted(t.get_text() for t in ax.texts) == ["", "", "0.50", "1.00"]
    plt.close("all")


def test_heatmap_blank_zeros_tells_tiny_values_from_zeros():
    """With blank cells meaning exactly 0, a value that is not 0 but rounds to 0.00 must not print as 0.00."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = pd.DataFrame([[0.0, 0.004, 0.0051], [-0.003, 1.0, 0.0]])
    ax = cc.plot_confusion_heatmap(m, blank_zeros=True)
    assert [t.get_text() for t in ax.texts] == ["", "<0.01", "0.01", ">-0.01", "1.00", ""]
    ax = cc.plot_confusion_heatmap(m, blank_zeros=True, fmt=".3f")
    assert [t.get_text() for t in ax.texts][:3] == ["", "0.004", "0.005"]
    plt.close("all")


# ------------------------------------------------------------------------- intermediate steps (Figs. 3.4-3.6)
def test_dpccb_steps_hand_computed_3x3():
    """A 3-class matrix worked out by hand: column maxima 6, 5, 0 (a class never predicted); row
    maxima 6, 5, 2."""
    labels = ["a", "b", "c"]
    c = pd.DataFrame([[6, 1, 0], [3, 5, 0], [2, 1, 0]], index=labels, columns=labels)
    pred = cc.dpccb_steps(c, normalize="pred", threshold=0.3)
    assert pred.denominators.tolist() == [6, 5, 0]
    fig_3_4 = [[1, 1 / 5, 0], [3 / 6, 1, 0], [2 / 6, 1 / 5, 0]]  # C / column max, diagonal kept
    fig_3_5 = [[0, 1 / 5, 0], [3 / 6, 0, 0], [2 / 6, 1 / 5, 0]]  # the same, diagonal muted
    np.testing.assert_allclose(pred.normalized.to_numpy(), fig_3_4, atol=1e-12)
    np.testing.assert_allclose(pred.beta.to_numpy(), fig_3_5, atol=1e-12)
    # above 0.3: b->a (0.5) and c->a (0.333): rows b, c and column a
    assert pred.pruned.index.tolist() == ["b", "c"] and pred.pruned.columns.tolist() == ["a"]
    np.testing.assert_allclose(pred.pruned.to_numpy(), [[0.5], [2 / 6]])
    pd.testing.assert_frame_equal(pred.confusion, c.astype(float), check_names=False)

    true = cc.dpccb_steps(c, normalize="true", threshold=0.3)
    assert true.denominators.tolist() == [6, 5, 2]
    np.testing.assert_allclose(
        true.normalized.to_numpy(), [[1, 1 / 6, 0], [3 / 5, 1, 0], [1, 1 / 2, 0]], atol=1e-12
    )
    np.testing.assert_allclose(
        true.beta.to_numpy(), [[0, 1 / 6, 0], [3 / 5, 0, 0], [1, 1 / 2, 0]], atol=1e-12
    )
    assert true.pruned.index.tolist() == ["b", "c"] and true.pruned.columns.tolist() == ["a", "b"]

    # arrays in, arrays out
    arr = cc.dpccb_steps(c.to_numpy(), normalize="pred", threshold=0.3)
    assert isinstance(arr.normalized, np.ndarray) and arr.pruned.shape == (2, 1)
    np.testing.assert_allclose(arr.denominators, [6, 5, 0])
    with pytest.raises(ValueError, match="normalize"):
        cc.dpccb_steps(c, normalize="rows")


@pytest.mark.parametrize("axis", ["pred", "true"])
def test_dpccb_steps_on_the_printed_matrix(cm, axis):
    """Fig. 3.4: 'most of the diagonal elements have the largest value 1' (all but deny); Fig. 3.5 = Fig. 3.4
    off the diagonal."""
    s = cc.dpccb_steps(cm, normalize=axis)
    off = ~np.eye(15, dtype=bool)
    naive = _naive(cm.to_numpy(float), axis)  # the loop above, diagonal zeroed
    np.testing.assert_allclose(s.normalized.to_numpy()[off], naive[off], atol=1e-12)
    diag = np.diag(s.normalized.to_numpy())
    assert np.all(diag[:14] == 1.0) and diag[14] == 0.0  # deny: never predicted / never right
    np.testing.assert_array_equal(s.beta.to_numpy()[off], s.normalized.to_numpy()[off])
    assert np.all(np.diag(s.beta.to_numpy()) == 0)
    pd.testing.assert_frame_equal(s.beta, cc.dpccb_matrix(cm, normalize=axis))
    pd.testing.assert_frame_equal(s.pruned, cc.prune_dpccb(s.beta, threshold=0.15))
    if axis == "true":
        assert s.normalized.loc["Coverage_Related", "Document_Related"] == pytest.approx(127 / 234)
        assert s.pruned.shape == (4, 5)
    else:
        assert s.normalized.loc["Document_Related", "Coverage_Related"] == pytest.approx(42 / 234)
        assert s.denominators["deny"] == 0 and s.pruned.shape == (2, 2)


# --------------------------------------------------------------------------- summary()
def test_dpccb_steps_summary_lists_the_pairs_over_the_threshold(cm):
    steps = cc.dpccb_steps(cm, normalize="true", threshold=0.15)
    pd.testing.assert_frame_equal(steps.pairs, cc.dpccb_pairs(steps.beta, threshold=0.15))
    text = steps.summary()
    assert f"over {cm.shape[0]} classes: 5 directed pair(s) above the threshold 0.15" in text
    assert "Coverage_Related -> Document_Related: beta = 0.543" in text
    assert "deny -> EverythingElse: beta = 1.000" in text
    assert "largest count of the true class (its row)" in text
    assert "no statistical test: a descriptive number" in text
    arr = cc.dpccb_steps(cm.to_numpy(), normalize="pred", threshold=0.15).summary(alpha=0.01)
    assert "2 directed pair(s)" in arr and "predicted class (its column)" in arr
