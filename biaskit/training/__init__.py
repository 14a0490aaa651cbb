"""Training: the small models biaskit trains and bundles, fine-tuning, and their recipes.

Runs on a 2-core CPU; checkpoints are safetensors and a resumed run gives the same weights as an uninterrupted
one. Imports the layers below.

==================================  =======================================================================
:mod:`biaskit.training.recipes`     the bundled models' recipes: how each was trained, loading, retraining
:mod:`biaskit.training.pretrain`    train a WordPiece tokenizer and a small masked or causal language model
:mod:`biaskit.training.fine_tune`   fine-tune a masked or causal language model on a list of sentences
:mod:`biaskit.training.loop`        the training loop both kinds share: batches, checkpoints, resuming
:mod:`biaskit.training.objectives`  the two training objectives, batch by batch: padding, masking, losses
:mod:`biaskit.training.evaluation`  held-out quality: (pseudo-)perplexity of a trained model
:mod:`biaskit.training.config`      the settings of a training run and its record
==================================  =======================================================================
"""
