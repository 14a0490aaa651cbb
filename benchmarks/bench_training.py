"""Training steps of the bundled recipes: bfloat16 mixed precision (the recipes' setting) vs float32.

Same recipe, data, starting weights and steps: the first ``n`` steps of the ``en-mlm`` recipe (masked,
continued from ``en-mlm-balanced``) and of the ``en-clm`` recipe (causal, continued from ``en-clm-balanced``),
2 layers x 128, batches of 32 BUG / GAP / BOLD sentences, run by
:func:`biaskit.training.pretrain.train_masked_lm` / :func:`~biaskit.training.pretrain.train_causal_lm`
themselves (``train_seconds``: the loop only, not the data loading):

* naive: ``precision="float32"``, the recipes' setting before bfloat16;
* fast: ``precision="bfloat16"`` (``torch.autocast``, eager attention on a CPU), the recipes' setting
  (:data:`biaskit.training.recipes.SPEED`);
* a third row adds ``length_grouped=True`` to the fast setting (not used by the recipes: see ``SPEED``).

The note gives ms per step and the mean training loss of the last 10 steps (the two precisions round
differently, so the losses differ a little).  Wall clock, best of ``repeats``.  bfloat16 pays on CPUs with
AVX512-BF16 or AMX and on GPUs; the row names the CPU capability torch reports, or the GPU.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import torch


def run(quick: bool = False) -> list[dict]:
    from biaskit.training import recipes as tm
    from biaskit.training.pretrain import train_causal_lm, train_masked_lm

    n_steps, repeats = (30, 1) if quick else (300, 2)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    where = (
        f"GPU {torch.cuda.get_device_name()}"
        if device == "cuda"
        else f"CPU {torch.backends.cpu.get_cpu_capability()}"
    )
    rows = []
    for name, trainer in (("en-mlm", train_masked_lm), ("en-clm", train_causal_lm)):
        config, init = tm.recipe(name)
        train, _, _ = tm.recipe_data(name)
        base = replace(config, max_steps=n_steps, checkpoint_every=0, device=device)
        settings = {
            "float32": replace(base, precision="float32"),
            "bfloat16": replace(base, precision="bfloat16"),
            "bfloat16 + grouped": replace(base, precision="bfloat16", length_grouped=True),
        }
        best: dict[str, tuple[float, float]] = {}
        for _ in range(repeats):
            for label, cfg in settings.items():
                with tempfile.TemporaryDirectory() as tmp:
                    res = trainer(
                        train, Path(tmp), cfg, init_model=tm.model_path(init), progress=False, resume=False
                    )
                if label not in best or res.train_seconds < best[label][0]:
                    best[label] = (res.train_seconds, float(res.final_loss))
        naive = best["float32"]
        for label in ("bfloat16", "bfloat16 + grouped"):
            fast = best[label]
            rows.append(
                {
                    "name": f"training, {name} recipe ({n_steps} steps), {label} vs float32, {where}",
                    "naive_s": naive[0],
                    "fast_s": fast[0],
                    "note": (
                        f"{1000 * naive[0] / n_steps:.0f} -> {1000 * fast[0] / n_steps:.0f} ms/step; "
                        f"loss of the last 10 steps {naive[1]:.3f} (float32) vs {fast[1]:.3f}"
                    ),
                }
            )
    return rows
