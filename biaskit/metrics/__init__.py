"""Bias metrics, one module per family (pmi, direct_bias, weat, analogies, ...)."""
