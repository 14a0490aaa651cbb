"""biaskit in ten lines: WEAT on bundled word vectors, CrowS-Pairs on the bundled masked LM en-mlm.

Run it anywhere biaskit and biaskit-data are installed (README, docs/getting_started.md; a test runs it
from a fresh environment outside the repository). It prints two test results."""

from biaskit.data.counterfactual import assign_directions
from biaskit.data.datasets import load_crows_pairs_en
from biaskit.embeddings.vectors import load_trained_vectors
from biaskit.lm import get_lm, score_pairs
from biaskit.lm.catalogue import CONTROL_TARGETS
from biaskit.metrics.crows import crows_proportion_test
from biaskit.metrics.weat import weat

# 1. WEAT on bundled word2vec vectors, trained on text with a planted gender skew s = 0.8
plan = assign_directions(CONTROL_TARGETS)  # profession -> the gender it was planted with
male = [w for w, g in plan.items() if g == "male"]
female = [w for w, g in plan.items() if g == "female"]
vectors = load_trained_vectors("en-planted-w2v", s=0.8)
print(weat(male, female, ["he", "him", "his", "man"], ["she", "her", "hers", "woman"], vectors).summary())

# 2. CrowS-Pairs on the bundled masked language model en-mlm (the first 200 pairs)
pairs = load_crows_pairs_en().head(200)
pll = score_pairs(get_lm("en-mlm"), pairs["sent_more"], pairs["sent_less"], "cp", progress=False)
print(crows_proportion_test(pll.scores["sent_more_score"], pll.scores["sent_less_score"]).summary())
