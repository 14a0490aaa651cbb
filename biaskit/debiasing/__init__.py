"""Debiasing methods for word vectors and language models, and what they cost.

Each method is checked against its authors' reference code (debiaswe, Ravfogel's INLP, bias-bench); notebook
17 judges them against a bias planted on purpose, compared with the balanced control. Imports the layers
below.

========================================  =================================================================
:mod:`biaskit.debiasing.hard_debias`      Bolukbasi et al.'s hard debiasing: neutralise, then equalise
:mod:`biaskit.debiasing.inlp`             Iterative Nullspace Projection (Ravfogel et al. 2020)
:mod:`biaskit.debiasing.glpp`             Global-Locality Preserving Projection for refining word vectors
:mod:`biaskit.debiasing.sentence_debias`  SentenceDebias and INLP on a language model's sentence
                                          representation
:mod:`biaskit.debiasing.cds`              counterfactual data substitution fine-tuning and seed 002's
                                          fine-tuning experiments
:mod:`biaskit.debiasing.dropout`          dropout debiasing: continued pre-training with more dropout
:mod:`biaskit.debiasing.costs`            what debiasing costs: word similarity (SimLex-999) and the Google
                                          analogies
========================================  =================================================================
"""
