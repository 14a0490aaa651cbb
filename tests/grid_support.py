"""The toy batch grid that several test modules share: word sets, texts, the files of a small grid
(static vectors, a tiny masked LM, WEAT / SEAT / LPBS / CrowS datasets) and a configuration over them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import torch

from biaskit.embeddings.vectors import from_dict, save_vectors

WORDS = {
    "X": ["math", "algebra", "geometry"],
    "Y": ["poetry", "art", "dance"],
    "A": ["he", "man", "boy"],
    "B": ["she", "woman", "girl"],
}
TEXTS = [
    "This is math. That is poetry. he likes algebra and she likes dance",
    "the man and the woman like geometry and art ; a boy and a girl",
    "people are here ; is this a sentence ?",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
] * 3


def make_toy_grid(d):
    """Write the toy grid's files into the folder ``d`` (also used by tests/studies/test_distributed.py)."""
    from biaskit.lm import tiny_masked_lm

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    vocab = [w for ws in WORDS.values() for w in ws] + ["This", "is", "That"]
    save_vectors(from_dict({w: rng.normal(size=8) for w in vocab}), d / "toy.kv")
    lm = tiny_masked_lm(seed=2, texts=TEXTS, vocab_size=120)
    (d / "tiny").mkdir()
    lm.model.save_pretrained(d / "tiny")
    lm.tokenizer.save_pretrained(d / "tiny")
    seat_file = {
        k: {
            "category": r,
            "examples": [f"This is {w}." for w in WORDS[r]] + [f"That is {w}." for w in WORDS[r]],
        }
        for k, r in zip(("targ1", "targ2", "attr1", "attr2"), "XYAB", strict=True)
    }
    (d / "toy_seat.jsonl").write_text(json.dumps(seat_file), encoding="utf-8")
    (d / "toy_weat.txt").write_text("\n".join(", ".join(WORDS[r]) for r in "XYAB"), encoding="utf-8")
    lpbs = {
        "targ1": {"singular": ["he"]},
        "targ2": {"singular": ["she"]},
        "attr1": WORDS["X"],
        "attr2": WORDS["Y"],
        "templates": {"singular": ["TARGET likes ATTRIBUTE."]},
    }
    (d / "LPBS").mkdir()
    (d / "LPBS" / "toy_lpbs.jsonl").write_text(json.dumps(lpbs), encoding="utf-8")
    pd.DataFrame(
        {
            "sent_more": ["he likes math", "she likes dance", "the man likes art", "a girl likes poetry"],
            "sent_less": ["she likes math", "he likes dance", "the woman likes art", "a boy likes poetry"],
            "bias_type": ["gender", "gender", "age", "age"],
        }
    ).to_csv(d / "toy_crows.csv", index=False)
    return d


def toy_grid_config(d, **options):
    """A grid configuration of the toy files in ``d``: three models (one missing), four datasets, four
    metrics."""
    return {
        "name": "toy_grid",
        "models": [
            {"name": "toy-static", "path": str(d / "toy.kv")},
            {"name": "tiny-mlm", "path": str(d / "tiny"), "methods": ["cls", "target_pooled"]},
            {"name": "broken", "path": str(d / "no-such-model")},
        ],
        "datasets": [
            {"name": "seat", "path": str(d / "toy_seat.jsonl")},
            {"name": "weat", "path": str(d / "toy_weat.txt")},
            {"name": "lpbs", "path": str(d / "LPBS" / "toy_lpbs.jsonl")},
            {"name": "crows", "path": f"crows:{d / 'toy_crows.csv'}"},
        ],
        "metrics": ["weat", "seat", "lpbs", "crows"],
        "options": {
            "n_permutations": 200,
            "crows_cache": False,
            "methods": ["cls", "target_first"],
            **options,
        },
    }
