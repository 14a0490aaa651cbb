"""LPBS: asc values against direct two-forward-pass computations; s_log, effect size, permutation test."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from biaskit.metrics.lpbs import (
    BARE_TEMPLATE,
    LPBS,
    LPBSQuery,
    available_lpbs_tests,
    load_lpbs,
    lpbs_effect_size,
)

TEXTS = [
    "he likes math .",
    "she likes art .",
    "he is interested in poetry",
    "she is interested in algebra",
    "boys like dance and men like drama",
    "girls like novels and women like sculpture",
    "he she he she boys girls men women math art poetry algebra dance drama",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
] * 3


@pytest.fixture(scope="module")
def tiny():
    from biaskit.lm import tiny_masked_lm

    torch.set_num_threads(1)
    return tiny_masked_lm(seed=5, texts=TEXTS, vocab_size=150)


def _probs(lm, text: str) -> tuple[list[int], torch.Tensor]:
    """Softmax over the vocabulary at every position, one unbatched forward of the full model."""
    ids = lm.tokenizer(text)["input_ids"]
    with torch.no_grad():
        logits = lm.model(input_ids=torch.tensor([ids])).logits[0]
    return ids, torch.softmax(logits.double(), dim=-1)


def _direct_asc(
    lm, tgt_text: str, prior_text: str, target: str, which_mask_tgt: int, which_mask_prior: int
) -> float:
    """log(p_tgt / p_prior) from two forward passes on hand-written masked sentences
    (single-token target; the target's mask is the ``which_mask``-th [MASK] of each sentence)."""
    tok = lm.tokenizer
    tid = tok.convert_tokens_to_ids(target)
    assert tid != tok.unk_token_id
    ids, p = _probs(lm, tgt_text)
    m = [i for i, t in enumerate(ids) if t == tok.mask_token_id][which_mask_tgt]
    p_tgt = float(p[m, tid])
    ids, p = _probs(lm, prior_text)
    m = [i for i, t in enumerate(ids) if t == tok.mask_token_id][which_mask_prior]
    p_prior = float(p[m, tid])
    return float(np.log(p_tgt / p_prior))


def test_asc_equals_direct_two_forward_passes(tiny):
    q = LPBSQuery.from_lists(
        ["he"], ["she"], ["math", "poetry"], ["art", "dance"], ["TARGET likes ATTRIBUTE."]
    )
    df = LPBS(batch_size=3).associations(q, tiny)
    assert len(df) == 8
    for r in df.itertuples():
        want = _direct_asc(tiny, f"[MASK] likes {r.attribute}.", "[MASK] likes [MASK].", r.target, 0, 0)
        assert r.asc == pytest.approx(want, rel=1e-5, abs=1e-5)


def test_asc_when_the_attribute_comes_first_and_has_several_subtokens(tiny):
    # "sculptures" is not in the vocabulary: several sub-tokens, replaced by ONE [MASK] in p_prior
    assert len(tiny.tokenizer.tokenize("sculptures")) > 1
    q = LPBSQuery.from_lists(["he"], ["she"], ["sculptures"], ["math"], ["ATTRIBUTE is liked by TARGET"])
    df = LPBS().associations(q, tiny)
    for r in df.itertuples():
        want = _direct_asc(
            tiny, f"{r.attribute} is liked by [MASK]", "[MASK] is liked by [MASK]", r.target, 0, 1
        )
        assert r.asc == pytest.approx(want, rel=1e-5, abs=1e-5)


def test_multi_subtoken_target_masks_and_single(tiny):
    tok = tiny.tokenizer
    target = "mathematics"  # not in the vocabulary
    sub = tok.convert_tokens_to_ids(tok.tokenize(target))
    assert len(sub) > 1
    k = len(sub)
    q = LPBSQuery.from_lists([target], ["she"], ["art"], ["poetry"], [BARE_TEMPLATE])
    # "masks": K masks, sum of the log-probabilities of the sub-tokens at their own masks
    df = LPBS(multi_token="masks").associations(q, tiny)
    row = df[(df.target == target) & (df.attribute == "art")].iloc[0]
    masks = " ".join(["[MASK]"] * k)

    def lp_k(text):
        ids, p = _probs(tiny, text)
        pos = [i for i, t in enumerate(ids) if t == tok.mask_token_id][:k]
        return sum(math.log(float(p[m, s])) for m, s in zip(pos, sub, strict=True))

    want = lp_k(f"{masks} art") - lp_k(f"{masks} [MASK]")
    assert row.asc == pytest.approx(want, rel=1e-5, abs=1e-5)
    # "single": one mask, product of the sub-token probabilities there (the framework's code)
    df1 = LPBS(multi_token="single").associations(q, tiny)
    row1 = df1[(df1.target == target) & (df1.attribute == "art")].iloc[0]

    def lp_1(text):
        ids, p = _probs(tiny, text)
        m = ids.index(tok.mask_token_id)
        return sum(math.log(float(p[m, s])) for s in sub)

    assert row1.asc == pytest.approx(lp_1("[MASK] art") - lp_1("[MASK] [MASK]"), rel=1e-5, abs=1e-5)
    with pytest.raises(ValueError, match="no combination"):
        LPBS(multi_token="raise").associations(
            LPBSQuery.from_lists([target], [target], ["art"], ["poetry"]), tiny
        )


def test_effect_size_and_two_sided_permutation_test_against_brute_force(tiny):
    q = LPBSQuery.from_lists(
        {"singular": ["he"], "plural": ["boys", "men"]},
        {"singular": ["she"], "plural": ["girls", "women"]},
        ["math", "algebra", "drama"],
        ["poetry", "art", "dance", "novels"],
        {
            "singular": ["TARGET likes ATTRIBUTE.", "TARGET is interested in ATTRIBUTE."],
            "plural": ["TARGET like ATTRIBUTE."],
        },
    )
    res = LPBS(exact=True).run(q, tiny)
    asc = res.details["associations"]
    # naive s_log: mean over (target, template) rows of X minus the same for Y, per attribute
    s = {}
    for a in q.A + q.B:
        rows = asc[asc.attribute == a]
        s[a] = rows[rows.role == "X"].asc.mean() - rows[rows.role == "Y"].asc.mean()
    sa = np.array([s[a] for a in q.A])
    sb = np.array([s[b] for b in q.B])
    d = (sa.mean() - sb.mean()) / np.concatenate([sa, sb]).std(ddof=1)
    assert res.effect_size == pytest.approx(d, rel=1e-9)
    assert res.estimate == pytest.approx(sa.mean() - sb.mean(), rel=1e-9)
    assert res.statistic == pytest.approx(sa.sum() - sb.sum(), rel=1e-9)
    # brute force: all partitions of A u B into sizes 3 and 4, two-sided on |difference of means|
    pool = np.concatenate([sa, sb])
    obs = abs(sa.mean() - sb.mean())
    diffs = []
    for idx in itertools.combinations(range(7), 3):
        m = np.zeros(7, bool)
        m[list(idx)] = True
        diffs.append(abs(pool[m].mean() - pool[~m].mean()))
    p = np.mean(np.array(diffs) >= obs - 1e-12)
    assert res.p_value == pytest.approx(p, rel=1e-12)
    assert res.details["permutation_method"] == "exact"
    assert res.details["sizes"] == {"X": 3, "Y": 3, "A": 3, "B": 4}
    # each target only meets the templates of its number: 3 templates... he x 2, boys/men x 1
    assert set(asc[asc.target == "he"].template) == set(q.templates["singular"])
    assert set(asc[asc.target == "men"].template) == set(q.templates["plural"])
    # restricting to singular reproduces the framework's code path
    only = LPBS(groups=("singular",)).associations(q, tiny)
    assert set(only.target) == {"he", "she"}


def test_lpbs_effect_size_ddof_and_degenerate():
    a, b = np.array([1.0, 2.0]), np.array([0.0, -1.0])
    pooled = np.concatenate([a, b])
    assert lpbs_effect_size(a, b, ddof=0) == pytest.approx(2.0 / pooled.std())
    assert lpbs_effect_size(a, b, ddof=1) == pytest.approx(2.0 / pooled.std(ddof=1))
    assert np.isnan(lpbs_effect_size(np.ones(2), np.ones(2)))


def test_bundled_lpbs_files():
    assert {"bfh:en/LPBS/LPBS_1", "bfh:en/LPBS/LPBS_7", "es:seat_math_arts/lpbs"} <= set(
        available_lpbs_tests()
    )
    q = load_lpbs("bfh:en/LPBS/LPBS_7")
    assert q.X == {"singular": ("he",), "plural": ("boys", "men")}
    assert q.A[:2] == ("math", "algebra") and len(q.B) == 8
    assert q.templates["plural"] == ("TARGET like ATTRIBUTE.",)
    assert q.names == ("Male", "Female", "Math", "Arts")
    q1 = load_lpbs("bfh:en/LPBS/LPBS_1")
    assert len(q1.A) == 25 and len(q1.B) == 25


def test_bad_templates_and_inputs():
    with pytest.raises(ValueError, match="exactly one"):
        LPBSQuery.from_lists(["he"], ["she"], ["a"], ["b"], ["TARGET likes stuff"])
    with pytest.raises(ValueError, match="no templates"):
        LPBSQuery.from_lists({"plural": ["men"]}, ["she"], ["a"], ["b"], {"singular": ["TARGET ATTRIBUTE"]})
    with pytest.raises(ValueError, match="multi_token"):
        LPBS(multi_token="avg")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        load_lpbs("bfh:en/LPBS/nope")


def test_spanish_lpbs_from_seat_sets_swaps_roles_and_uses_the_bare_template():
    from biaskit.data.wordlists import load_seed_groups

    g = load_seed_groups()
    q = load_lpbs("es:seat_math_arts/lpbs")
    assert q.X == {"all": tuple(g["espacio_m"])} and q.Y == {"all": tuple(g["espacio_f"])}
    assert q.A == tuple(g["math 1"]) and q.B == tuple(g["arts 1"])
    assert q.templates == {"all": (BARE_TEMPLATE,)}
    assert q.names == ("male", "female", "math", "arts") and q.language == "es"
