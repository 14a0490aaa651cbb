"""Word vectors and sentence representations: what the static and the sentence-level metrics read.

Imports the layers below (:mod:`biaskit.lm`, :mod:`biaskit.data`, :mod:`biaskit.core`).

====================================  =======================================================================
:mod:`biaskit.embeddings.vectors`     word vectors: load from disk, the offline English references, train
                                      word2vec, look up words
:mod:`biaskit.embeddings.encoders`    sentence and word embeddings for SEAT: static vectors or BERT-family
                                      encoders
:mod:`biaskit.embeddings.contextual`  sentence and word representations read from a masked or causal language
                                      model
====================================  =======================================================================
"""
