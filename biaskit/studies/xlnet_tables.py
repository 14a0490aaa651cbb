"""Louis-Alexandre (2022, seed 004) Tables A.3-A.4 and Table 3.5's XLNet rows, on an XLNet read as Table 3.2
reads it.

The thesis gives, for each of its four models, the correlation of the direct and the indirect score over
all (target, feature) pairs of a category pair (Tables 3.6 and A.1-A.4: 4 target categories x 10 feature
categories = 40 category pairs) and, for occupations x gender, the same with the female and the male
gender words apart (Table 3.5).  Its XLNet rows (xlnet-base, A.3; xlnet-large, A.4) need those
checkpoints.  This module computes the same tables on any XLNet :class:`~biaskit.lm.xlnet.BridgeLM`,
by default the bundled ``en-xlnet`` with the bridge scoring that drives notebook 13's Table 3.2: the
padding text of the thesis in front of every sentence, the masked word read as XLNet was trained to
predict it (``xlnet_mode="perm_mask"``), every 4th first name that is one token of the model, and the
first 4 templates of each set.

=====================================  ==========================================================
:func:`category_pair_grid`             one :class:`~biaskit.metrics.indirect_bias.IndirectBiasResult`
                                       per category pair (direct and indirect scores)
:func:`table_3_5_row`                  Table 3.5's three correlations for occupation x gender
:func:`xlnet_appendix_tables`          both, on ``en-xlnet`` (or another XLNet), beside the thesis
=====================================  ==========================================================

The values describe the model they ran on: ``en-xlnet`` is a 2-layer XLNet trained by biaskit, so its
tables test the procedure on a real XLNet, not xlnet-base or xlnet-large.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from biaskit.core.stats import correlation
from biaskit.data.louis_alexandre import load_louis_alexandre_tables, load_louis_alexandre_words
from biaskit.lm.xlnet import BridgeLM, load_bridge_lm
from biaskit.metrics import indirect_bias as ib
from biaskit.studies import run_provenance as rp

__all__ = [
    "CATEGORY_PAIRS",
    "RECORD_FILE",
    "TARGET_CATEGORIES",
    "WHAT",
    "XLNetTablesRecord",
    "category_pair_grid",
    "default_record_dir",
    "load_xlnet_tables_record",
    "run_xlnet_tables_record",
    "table_3_5_row",
    "xlnet_appendix_tables",
]

RECORD_FILE = rp.RECORD_FILE
WHAT = "seed 004 (Louis-Alexandre 2022) Tables A.3-A.4 and Table 3.5's XLNet rows on en-xlnet, recorded run"

#: the thesis's target categories (seed 004 section 3.4, Tables 3.6 and A.1-A.4)
TARGET_CATEGORIES: tuple[str, ...] = ("beverage", "country", "occupation", "sport")
#: the 40 category pairs (target category, feature category) of Tables 3.6 and A.1-A.4, each target
#: category against every other category
CATEGORY_PAIRS: tuple[tuple[str, str], ...] = tuple(
    (tc, fc) for tc in TARGET_CATEGORIES for fc in ib.CATEGORY_LABELS if fc != tc
)


def category_pair_grid(
    bridge: BridgeLM,
    *,
    names: Sequence[str],
    targets: Mapping[str, Sequence[str]] | None = None,
    features: Mapping[str, Sequence[str]] | None = None,
    max_templates: int | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
    progress: bool = False,
) -> list[ib.IndirectBiasResult]:
    """Direct and indirect scores for every (target category, feature category) pair of seed 004.

    ``pairs`` defaults to the 40 of Tables A.1-A.4 (:data:`CATEGORY_PAIRS`); ``targets`` / ``features`` give a
    word list per category (default: the bundled lists); ``names`` is the bridge (the first names).
    """
    targets = dict(targets or {})
    features = dict(features or {})
    pairs = CATEGORY_PAIRS if pairs is None else pairs
    out = []
    for tc, fc in pairs:
        out.append(
            ib.indirect_bias(
                bridge,
                tc,
                fc,
                targets=targets.get(tc),
                features=features.get(fc),
                names=names,
                max_templates=max_templates,
                progress=progress,
            )
        )
    return out


def table_3_5_row(occupation_gender: ib.IndirectBiasResult) -> dict[str, float]:
    """Table 3.5's three numbers for one model (seed 004 section 3.4.1).

    ``gender_defining_words``: Pearson r of the direct and indirect scores over all occupation x gender
    word pairs; ``female_gender`` / ``male_gender``: as notebook 13 computes them, the Pearson r of the
    occupations' direct and indirect scores toward the female / male words
    (:func:`biaskit.metrics.indirect_bias.gender_rank_table`, columns ``female`` and ``male``).
    """
    if occupation_gender.direct is None:
        raise ValueError("Table 3.5 needs direct scores: compute the result with direct=True")
    r_all = occupation_gender.direct_indirect_correlation()
    ranks_i = ib.gender_rank_table(occupation_gender.ibs)
    ranks_d = ib.gender_rank_table(occupation_gender.direct)
    return {
        "gender_defining_words": float(r_all.statistic),
        "female_gender": float(correlation(ranks_d["female"], ranks_i["female"]).statistic),
        "male_gender": float(correlation(ranks_d["male"], ranks_i["male"]).statistic),
    }


def xlnet_appendix_tables(
    model: str | BridgeLM = "en-xlnet",
    *,
    xlnet_mode: str = "perm_mask",
    name_step: int = 4,
    max_templates: int | None = 4,
    pairs: Sequence[tuple[str, str]] | None = None,
    batch_size: int = 128,
    progress: bool = False,
) -> dict[str, Any]:
    """Tables A.3-A.4 (the 40 category pairs) and Table 3.5's XLNet rows on one XLNet, beside the thesis.

    Defaults reproduce notebook 13's Table 3.2 reading of ``en-xlnet`` (section 6c′): ``xlnet_mode``
    ``perm_mask``, every ``name_step``-th name that is one token of the model, the first ``max_templates``
    templates of each set (``None``: all).  Returns ``agreement`` (one row per category pair: ``r`` and
    ``p`` of this model, the thesis's ``thesis xl-base`` / ``thesis xl-large`` and its BERT columns;
    :func:`biaskit.metrics.indirect_bias.direct_indirect_agreement`), ``table_3_5`` (this model's row and
    the thesis's four; ``None`` when occupation x gender is not among ``pairs``), ``settings`` and
    ``seconds`` (wall time of the scoring).
    """
    t0 = time.perf_counter()
    bridge = (
        model
        if isinstance(model, BridgeLM)
        else load_bridge_lm(model, xlnet_mode=xlnet_mode, batch_size=batch_size)  # type: ignore[arg-type]
    )
    words = load_louis_alexandre_words()
    names = [n for n in words["name"] if bridge.word_id(n) is not None][::name_step]
    grid = category_pair_grid(
        bridge,
        names=names,
        features={"trait": words["trait"]},
        max_templates=max_templates,
        pairs=pairs,
        progress=progress,
    )
    agreement = ib.direct_indirect_agreement(grid)
    occ = next((r for r in grid if (r.target_category, r.feature_category) == ("occupation", "gender")), None)
    table_3_5 = None
    if occ is not None:
        published = load_louis_alexandre_tables()["table_3_5"]
        rows = {bridge.name: table_3_5_row(occ)}
        rows.update(
            {m: dict(zip(published["columns"], v, strict=True)) for m, v in published["rows"].items()}
        )
        table_3_5 = pd.DataFrame(rows).T
    return {
        "agreement": agreement,
        "table_3_5": table_3_5,
        "settings": {
            "model": bridge.name,
            "xlnet_mode": xlnet_mode,
            "n_names": len(names),
            "name_step": name_step,
            "max_templates": max_templates,
            "category_pairs": len(grid),
        },
        "seconds": time.perf_counter() - t0,
    }


def default_record_dir() -> Path | None:
    """``<repository>/records/xlnet_tables`` in a checkout; ``None`` when installed from a wheel."""
    return rp.record_dir("xlnet_tables")


@dataclass
class XLNetTablesRecord:
    """A recorded run of :func:`xlnet_appendix_tables`: ``meta`` is the whole ``record.json``."""

    path: Path
    meta: dict[str, Any]

    @property
    def agreement(self) -> pd.DataFrame:
        """One row per category pair: this model's ``r``, ``p``, ``n_pairs`` beside the thesis's columns."""
        return pd.DataFrame(self.meta["results"]["agreement"])

    @property
    def table_3_5(self) -> pd.DataFrame:
        """Table 3.5: this model's row and the thesis's four (columns gender_defining_words, female, male)."""
        return pd.DataFrame(self.meta["results"]["table_3_5"]).T

    def provenance(self) -> str:
        s, m = self.meta["settings"], self.meta
        return (
            f"Recorded run (`records/{self.path.name}/{RECORD_FILE}`, {m['finished']}): "
            f"`{s['model']}` read with `{s['xlnet_mode']}`, {s['n_names']} first names "
            f"(every {s['name_step']}th name that is one token of the model), "
            f"the first {s['max_templates']} templates of each set, "
            f"{s['category_pairs']} category pairs, {rp.ran_on(m, minute_digits=1)}; "
            "en-xlnet is a 2-layer XLNet trained by biaskit, so the tables test the procedure on a real "
            "XLNet, not xlnet-base or xlnet-large."
        )


def load_xlnet_tables_record(path: str | Path | None = None) -> XLNetTablesRecord | None:
    """Read a record folder (default :func:`default_record_dir`); ``None`` when there is none; ``ValueError``
    for a file that is not such a record or lacks its provenance."""
    folder = Path(path) if path is not None else default_record_dir()
    need = ("settings", *rp.PROVENANCE_KEYS, "results")
    meta = rp.read_record(folder, what=WHAT, kind="an XLNet-tables record", need=need)
    return None if meta is None or folder is None else XLNetTablesRecord(path=folder, meta=meta)


def _model_files(model: str, bridge: BridgeLM) -> dict[str, str]:
    """sha256 of the model's files: a bundled model's folder (verified against its manifest), else the folder
    the model was loaded from."""
    from biaskit.lm.catalogue import model_path, verified_model_path

    try:
        folder = model_path(model)
    except (KeyError, FileNotFoundError):  # not a bundled model: a folder or a checkpoint of one's own
        folder = None
    if folder is not None and folder.is_dir():
        return rp.model_files(str(verified_model_path(model)))
    return rp.model_files(bridge.lm)


def run_xlnet_tables_record(
    out_dir: str | Path,
    model: str = "en-xlnet",
    *,
    xlnet_mode: str = "perm_mask",
    name_step: int = 4,
    max_templates: int | None = 4,
    pairs: Sequence[tuple[str, str]] | None = None,
    progress: bool = False,
) -> XLNetTablesRecord:
    """Run :func:`xlnet_appendix_tables` on ``model`` and keep it as ``<out_dir>/record.json`` with its
    provenance (commit, date, machine, versions, the model files' sha256, wall time), written atomically."""
    t0 = time.perf_counter()
    started = rp.now()
    bridge = load_bridge_lm(model, xlnet_mode=xlnet_mode, batch_size=128)
    out = xlnet_appendix_tables(
        bridge, xlnet_mode=xlnet_mode, name_step=name_step, max_templates=max_templates, pairs=pairs,
        progress=progress,
    )  # fmt: skip
    table_3_5 = out["table_3_5"]
    meta = {
        "what": WHAT,
        "settings": out["settings"],
        **rp.run_fields(model, _model_files(model, bridge), started),
        "results": {
            "agreement": out["agreement"].to_dict(orient="records"),
            "table_3_5": None if table_3_5 is None else table_3_5.T.to_dict(),
        },
        "scoring_seconds": out["seconds"],
        "finished": rp.now(),
        "wall_seconds": time.perf_counter() - t0,
    }
    if not meta["model"]["files_sha256"]:
        meta["model"]["files_sha256"] = {"(not a folder)": str(bridge.name)}
    return XLNetTablesRecord(path=Path(out_dir), meta=rp.write_record(out_dir, meta))
