r"""Sentence Embedding Association Test (SEAT) -- WEAT on sentence embeddings.

May et al. (2019, "On Measuring Social Biases in Sentence Encoders", NAACL) insert the WEAT
target and attribute words into *semantically bleached* templates ("This is WORD.", "WORD is
here.") and run WEAT on the sentence embeddings; seed 001 (Puttick et al. 2024, the BIAS
Detection Framework) section 4.2 describes it.  With ``e(S)`` a sentence embedding
(:mod:`biaskit.embeddings.encoders`) and ``cos`` the cosine similarity::

    s(x, A, B)    = mean_{a in A} cos(e(x), e(a)) - mean_{b in B} cos(e(x), e(b))
    s(X, Y, A, B) = sum_{x in X} s(x, A, B) - sum_{y in Y} s(y, A, B)
    d             = (mean_{x in X} s(x, A, B) - mean_{y in Y} s(y, A, B)) / std_{w in X u Y} s(w, A, B)
    p             = Pr_i[ s(X_i, Y_i, A, B) >= s(X, Y, A, B) ]          (partitions of the X u Y sentences)

"SEAT scores are computed in the exact same manner as WEAT scores" (seed 001, 4.2): the
sentences play the role of the words, so this module only builds the embeddings and hands them
to :class:`biaskit.metrics.weat.WEAT` (effect size with ``ddof=1`` by default, exact or sampled
permutation test, ties counted).  The unit of the permutation test is the *sentence*, as in
May et al.'s ``sent-bias`` code.

Data (see ``data/seat/PROVENANCE.md``, ``data/bfh-bias/PROVENANCE.md``, ``wordlists/PROVENANCE.md``):

* ``may2019:<name>`` -- the SEAT files of May et al. (``sent-weat1`` ... ``sent-weat10``, the
  ``b`` variants) and their bare-word counterparts (``weat1`` ... ``weat10``);
* ``bfh:<lang>/<SEAT|WEAT>/<name>`` -- the BIAS Detection Framework's English and German sets;
* ``es:<name>`` -- Spanish SEAT sets built here from the thesis's seed groups (seed 000 appendix
  A) with bleached Spanish templates; new, not published elsewhere.

**Which word is the target?**  The ``target_first`` / ``target_pooled`` embeddings need the
target word's characters in each sentence.  The Spanish sets are generated from templates, so
the span is known exactly.  For the published English / German files, :func:`locate_target`
removes the bleached template words of the language (``this, is, a, the, here, ...``) from both
ends of the sentence and checks that what remains is one contiguous run of words (``"European
Americans"`` in "European Americans are people."); every bundled sentence is located this way
(tested).  The framework's code instead searches the first occurrence of the word's token ids.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from biaskit.core.io import decode_text, read_json
from biaskit.core.paths import data_dir, wordlists_dir
from biaskit.core.registry import (
    CalibrationCall,
    CalibrationMeasure,
    CalibrationSupport,
    GridCall,
    GridSupport,
    MetricValues,
    register_dataset_kind,
    register_dataset_loader,
    register_metric,
)
from biaskit.core.results import TestResult
from biaskit.embeddings.encoders import Encoded, SentenceEncoder
from biaskit.metrics.weat import WEAT, WEATQuery, toy_query

logger = logging.getLogger(__name__)

__all__ = [
    "BLEACHED_WORDS",
    "SEATItem",
    "SEATQuery",
    "available_seat_tests",
    "build_spanish_seat",
    "load_seat",
    "load_seat_file",
    "load_weat_words",
    "locate_target",
    "seat",
    "seat_table",
    "weat_through_encoder",
]

ROLES = ("X", "Y", "A", "B")
_FILE_KEYS = ("targ1", "targ2", "attr1", "attr2")

#: Words of the bleached templates, per language; :func:`locate_target` strips them.
BLEACHED_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        "this that there here is are a an the it these those they person people thing things name "
        "person's will can could did do does may might shall should would".split()
    ),
    "de": frozenset(
        "dies das ist dort hier die der den dem des eine ein einer eines sache sachen es sind sie "
        "person personen mensch menschen name".split()
    ),
    "es": frozenset(
        "esto eso es son aquí allí hay un una unos unas el la los las este esta ese esa estos estas "
        "esos esas está están persona personas cosa cosas vamos voy van a que de hora todo aquello".split()
    ),
}
_WORD_RE = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")


class SEATItem(NamedTuple):
    """One stimulus: a sentence (or a bare word) and the character span of its target word."""

    text: str
    start: int = -1
    end: int = -1

    @property
    def span(self) -> tuple[int, int] | None:
        return (self.start, self.end) if 0 <= self.start < self.end else None

    @property
    def target(self) -> str | None:
        sp = self.span
        return self.text[sp[0] : sp[1]] if sp else None


def locate_target(
    sentence: str, language: str = "en", *, candidates: Iterable[str] | None = None
) -> tuple[int, int] | None:
    """Character span of the target word(s) of a bleached template sentence, or ``None``.

    With ``candidates`` (e.g. the bare WEAT words), the longest candidate found at word
    boundaries (case-insensitive) wins.  Otherwise the bleached words of ``language``
    (:data:`BLEACHED_WORDS`) are stripped from both ends; the rest must be one contiguous run
    of words (``None`` when nothing or a gapped run remains).
    """
    if candidates is not None:
        best: tuple[int, int] | None = None
        for c in sorted({c.strip() for c in candidates if c and c.strip()}, key=len, reverse=True):
            m = re.search(rf"(?<![^\W_]){re.escape(c)}(?![^\W_])", sentence, flags=re.IGNORECASE)
            if m:
                best = (m.start(), m.end())
                break
        if best is not None:
            return best
    if language not in BLEACHED_WORDS:
        raise ValueError(f"no bleached-word list for language {language!r}; pass candidates= or spans")
    stop = BLEACHED_WORDS[language]
    words = [(m.group(0), m.start(), m.end()) for m in _WORD_RE.finditer(sentence)]
    keep = [k for k, (w, _, _) in enumerate(words) if w.lower() not in stop]
    if not keep or keep[-1] - keep[0] + 1 != len(keep):
        return None
    return (words[keep[0]][1], words[keep[-1]][2])


@dataclass(frozen=True)
class SEATQuery:
    """Four sets of stimuli (targets X, Y; attributes A, B) with their names.

    ``kind`` is ``"sentences"`` (SEAT) or ``"words"`` (WEAT on bare words through an encoder:
    each word is its own "sentence", ``[CLS] word [SEP]``, span = the whole word).
    """

    X: tuple[SEATItem, ...]
    Y: tuple[SEATItem, ...]
    A: tuple[SEATItem, ...]
    B: tuple[SEATItem, ...]
    names: tuple[str, str, str, str] = ("X", "Y", "A", "B")
    name: str = ""
    language: str = "en"
    kind: str = "sentences"
    source: str = ""

    def items(self, role: str) -> tuple[SEATItem, ...]:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}")
        return getattr(self, role)

    def sentences(self, role: str) -> list[str]:
        return [it.text for it in self.items(role)]

    @property
    def sizes(self) -> dict[str, int]:
        return {r: len(self.items(r)) for r in ROLES}

    @property
    def label(self) -> str:
        x, y, a, b = self.names
        return f"{x} vs {y} | {a} vs {b}"

    @classmethod
    def from_words(
        cls, query: WEATQuery | Mapping[str, Sequence[str]], *, name: str = "", language: str = "en"
    ) -> SEATQuery:
        """Bare words as stimuli (WEAT through an encoder); span = the whole word."""
        if isinstance(query, WEATQuery):
            sets, names, name = [query.X, query.Y, query.A, query.B], query.names, name or query.name
        else:
            sets, names = [query[r] for r in ROLES], ROLES
        items = [tuple(SEATItem(w, 0, len(w)) for w in ws) for ws in sets]
        return cls(*items, names=tuple(names), name=name, language=language, kind="words")  # type: ignore[arg-type]

    @classmethod
    def from_templates(
        cls,
        X: Sequence[str],
        Y: Sequence[str],
        A: Sequence[str],
        B: Sequence[str],
        templates: Sequence[str] = ("This is {}.", "That is {}.", "There is {}.", "Here is {}."),
        *,
        names: Sequence[str] = ("X", "Y", "A", "B"),
        name: str = "",
        language: str = "en",
    ) -> SEATQuery:
        """Insert every word into every template (``{}`` marks the slot); spans are exact."""
        for t in templates:
            if t.count("{}") != 1:
                raise ValueError(f"template {t!r} must contain exactly one '{{}}'")
        sets = []
        for ws in (X, Y, A, B):
            items = []
            for w in ws:
                for t in templates:
                    pre = t.split("{}")[0]
                    items.append(SEATItem(t.replace("{}", w), len(pre), len(pre) + len(w)))
            sets.append(tuple(items))
        return cls(*sets, names=tuple(names), name=name, language=language, kind="sentences")  # type: ignore[arg-type]

    def to_weat_query(self) -> WEATQuery:
        """The stimuli texts as a :class:`WEATQuery` (sentences play the role of words)."""
        return WEATQuery.from_lists(*(self.sentences(r) for r in ROLES), names=self.names, name=self.name)


# --------------------------------------------------------------------------- loading
def _items_from_sentences(
    sentences: Sequence[str], language: str, candidates: Sequence[str] | None
) -> tuple[SEATItem, ...]:
    out = []
    for s in sentences:
        if not isinstance(s, str) or not s.strip():
            raise ValueError(f"empty sentence in a SEAT file: {s!r}")
        sp = locate_target(s, language, candidates=candidates)
        out.append(SEATItem(s, *(sp if sp else (-1, -1))))
    return tuple(out)


def load_seat_file(
    path: str | Path,
    *,
    language: str = "en",
    kind: str | None = None,
    name: str | None = None,
    candidates: Mapping[str, Sequence[str]] | None = None,
) -> SEATQuery:
    """Read a SEAT / WEAT JSON file ``{"targ1": {"category", "examples"}, "targ2", "attr1", "attr2"}``.

    Files of May et al. (2019) and of the BIAS Detection Framework have this layout.  ``kind``
    ``None`` guesses ``"sentences"`` when the examples end with a full stop.  Target spans of
    sentences come from :func:`locate_target` (optionally with per-role ``candidates``);
    sentences where no target is found are kept with no span and counted in a logged message
    (``cls`` embeddings still work for them; ``target_*`` methods report them).
    """
    path = Path(path)
    data = read_json(path, "SEAT file")
    try:
        sets = [[str(x) for x in data[k]["examples"]] for k in _FILE_KEYS]
        names = [str(data[k].get("category", r)) for k, r in zip(_FILE_KEYS, ROLES, strict=True)]
    except (KeyError, TypeError) as exc:
        raise ValueError(
            f"{path}: expected keys {_FILE_KEYS}, each with 'examples' (and 'category')"
        ) from exc
    if kind is None:
        kind = (
            "sentences" if any(s.rstrip().endswith((".", "!", "?")) for s in sets[0] + sets[2]) else "words"
        )
    if kind == "words":
        items = [tuple(SEATItem(w.strip(), 0, len(w.strip())) for w in ws if w.strip()) for ws in sets]
    else:
        items = [
            _items_from_sentences(ws, language, (candidates or {}).get(r))
            for ws, r in zip(sets, ROLES, strict=True)
        ]
        n_bad = sum(1 for its in items for it in its if it.span is None)
        if n_bad:
            logger.warning("%s: the target word of %d sentence(s) could not be located", path.name, n_bad)
    return SEATQuery(
        *items,
        names=tuple(names),
        name=name or path.stem,
        language=language,
        kind=kind,
        source=str(path),  # type: ignore[arg-type]
    )


def load_weat_words(path: str | Path, *, name: str | None = None, encoding: str = "utf-8") -> WEATQuery:
    """A BIAS-Detection-Framework WEAT text file: ``#`` comments, then 4 comma-separated lines X, Y, A, B.

    Words are stripped of surrounding white space (the framework's ``split(",")`` keeps the
    space of ``"math, algebra"``; we do not) and empty entries are dropped.  Category names come
    from the ``# Target:`` / ``# Attribute:`` comment lines when present.  The file is decoded with
    ``encoding`` (a leading byte-order mark is dropped); bytes it cannot decode, or a UTF-16 file,
    raise ``ValueError`` naming the file, the line and the ``encoding=`` that reads it.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"WEAT word file not found: {path}")
    text = decode_text(path.read_bytes(), encoding, str(path), fix="pass encoding={encoding!r}")
    lines = text.splitlines()
    comments = [ln.strip("# \t").strip() for ln in lines if ln.lstrip().startswith("#")]
    rows = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if len(rows) < 4:
        raise ValueError(f"{path}: expected 4 non-comment lines (X, Y, A, B), found {len(rows)}")
    if len(rows) > 4:
        logger.warning("%s: %d extra non-comment line(s) ignored", path.name, len(rows) - 4)
    sets = [[w.strip() for w in r.split(",") if w.strip()] for r in rows[:4]]
    labels = [c.split(":", 1)[1].strip() for c in comments if re.match(r"(?i)(target|attribute)\s*:", c)]
    names = labels if len(labels) == 4 else list(ROLES)
    return WEATQuery.from_lists(*sets, names=names, name=name or path.stem)


def build_spanish_seat(spec: Mapping[str, Any], *, name: str = "") -> SEATQuery:
    """Build a Spanish SEAT query from a ``wordlists/es/seat_*.json`` specification.

    The file gives ``templates`` per word class (``"m"``, ``"f"``, ``"mass"``, ``"pl"``,
    ``"person_m"``, ``"person_f"``, ``"pron"``, ``"name"``, ``"adj"``, ``"verb"``; ``{}`` is the
    slot, ``{W}`` the slot with the word capitalised) and, for ``targ1`` / ``targ2`` / ``attr1``
    / ``attr2``, the ``category``, the thesis ``seed_group`` and ``words`` as ``[word, class]``
    pairs.  Every word is inserted into every template of its class; spans are exact.
    """
    templates: Mapping[str, Sequence[str]] = spec["templates"]
    sets, names = [], []
    for key in _FILE_KEYS:
        block = spec[key]
        names.append(str(block.get("category", key)))
        items = []
        for entry in block["words"]:
            word, cls_ = entry[0], entry[1]
            if cls_ not in templates:
                raise ValueError(
                    f"{name or 'Spanish SEAT'}: word {word!r} has class {cls_!r} without templates"
                )
            for t in templates[cls_]:
                slot = "{W}" if "{W}" in t else "{}"
                if t.count(slot) != 1:
                    raise ValueError(f"template {t!r} must contain one '{{}}' or '{{W}}'")
                filler = word[:1].upper() + word[1:] if slot == "{W}" else word
                pre = t.split(slot)[0]
                items.append(SEATItem(t.replace(slot, filler), len(pre), len(pre) + len(filler)))
        sets.append(tuple(items))
    return SEATQuery(*sets, names=tuple(names), name=name, language="es", kind="sentences")  # type: ignore[arg-type]


def _spanish_words(spec: Mapping[str, Any], *, name: str) -> WEATQuery:
    sets = [[e[0] for e in spec[k]["words"]] for k in _FILE_KEYS]
    names = [str(spec[k].get("category", r)) for k, r in zip(_FILE_KEYS, ROLES, strict=True)]
    return WEATQuery.from_lists(*sets, names=names, name=name)


def available_seat_tests() -> dict[str, str]:
    """Identifiers accepted by :func:`load_seat`, with a one-line description."""
    out: dict[str, str] = {}
    seat_dir = data_dir() / "seat"
    for p in sorted(seat_dir.glob("*.jsonl")):
        out[f"may2019:{p.stem}"] = (
            "SEAT sentences" if p.stem.startswith("sent-") else "WEAT words"
        ) + " (May et al. 2019)"
    bfh = data_dir() / "bfh-bias"
    for p in sorted(bfh.glob("*/*/*")):
        if p.suffix in (".jsonl", ".txt") and p.parent.name in ("SEAT", "WEAT"):
            rel = p.relative_to(bfh).with_suffix("")
            out[f"bfh:{rel.as_posix()}"] = f"{p.parent.name} ({rel.parts[0]}), BIAS Detection Framework"
    for n in ("SEAT_WEAT_1", "SEAT_WEAT_2", "SEAT_WEAT_3", "SEAT_WEAT_7"):
        out[f"bfh:en/SEAT/{n}"] = (
            "SEAT (en), BIAS Detection Framework (= may2019:sent-weat" + n.rsplit("_", 1)[1] + ")"
        )
    for p in sorted((wordlists_dir() / "es").glob("seat_*.json")):
        out[f"es:{p.stem}"] = "Spanish SEAT sentences built from the thesis's seed groups (new)"
        out[f"es:{p.stem}/words"] = "the same Spanish sets as bare words (WEAT)"
    return out


def load_seat(spec: str) -> SEATQuery | WEATQuery:
    """Load a bundled test by identifier (see :func:`available_seat_tests`) or a file path.

    Returns a :class:`SEATQuery` for sentence sets and a :class:`~biaskit.metrics.weat.WEATQuery`
    for bare-word sets (``may2019:weat7``, ``bfh:de/WEAT/CW1``, ``es:seat_math_arts/words``).
    ``bfh:en/SEAT/SEAT_WEAT_<n>`` are byte-identical to ``may2019:sent-weat<n>`` and read from
    there.
    """
    if ":" not in spec or Path(spec).exists():
        p = Path(spec)
        if p.suffix == ".txt":
            return load_weat_words(p)
        q = load_seat_file(p)
        return q if q.kind == "sentences" else _as_weat(q)
    src, rest = spec.split(":", 1)
    if src == "may2019":
        p = data_dir() / "seat" / f"{rest}.jsonl"
        q = load_seat_file(p, language="en", name=rest)
        return q if q.kind == "sentences" else _as_weat(q)
    if src == "bfh":
        m = re.fullmatch(r"en/SEAT/SEAT_WEAT_(\d+)", rest)
        if m:
            q = load_seat_file(data_dir() / "seat" / f"sent-weat{m.group(1)}.jsonl", language="en", name=rest)
            return dataclasses.replace(q, name=rest)
        lang = rest.split("/", 1)[0]
        base = data_dir() / "bfh-bias" / rest
        if base.with_suffix(".txt").exists():
            return load_weat_words(base.with_suffix(".txt"), name=rest)
        q = load_seat_file(base.with_suffix(".jsonl"), language=lang, name=rest)
        return q if q.kind == "sentences" else _as_weat(q)
    if src == "es":
        words = rest.endswith("/words")
        stem = rest[: -len("/words")] if words else rest
        p = wordlists_dir() / "es" / f"{stem}.json"
        if not p.exists():
            raise FileNotFoundError(
                f"Spanish SEAT file not found: {p}; known: {sorted(available_seat_tests())}"
            )
        specd = json.loads(p.read_text(encoding="utf-8"))
        return _spanish_words(specd, name=rest) if words else build_spanish_seat(specd, name=stem)
    raise ValueError(f"unknown SEAT source {src!r} in {spec!r}; use may2019:, bfh:, es: or a file path")


def _as_weat(q: SEATQuery) -> WEATQuery:
    return WEATQuery.from_lists(*(q.sentences(r) for r in ROLES), names=q.names, name=q.name)


# --------------------------------------------------------------------------- the test
def _describe(encoder: Any) -> str:
    return f"{getattr(encoder, 'name', type(encoder).__name__)}, {getattr(encoder, 'method', '?')}"


def seat(
    query: SEATQuery,
    encoder: SentenceEncoder,
    test: WEAT | None = None,
    *,
    return_embeddings: bool = False,
) -> TestResult:
    r"""Run SEAT: embed the stimuli with ``encoder``, then WEAT on the embeddings.

    Seed 001 section 4.2; May et al. (2019).  ``test`` carries the WEAT settings
    (``n_permutations``, ``exact``, ``ddof`` = 1, ``alternative``, ``comparison``, ``random_state``,
    ``oov_policy``).  A stimulus that cannot be embedded (see :class:`biaskit.embeddings.encoders.Encoded`)
    is dropped with a logged warning (``oov_policy="drop"``, listed in
    ``details["not_embedded"]``) or raises ``ValueError`` (``"raise"``).  Identical sentences
    inside a set are embedded once and kept once (WEAT removes duplicates, logged).

    The result is WEAT's :class:`~biaskit.core.results.TestResult` with ``method`` prefixed by
    "SEAT" and ``details`` extended with ``encoder``, ``pooling``, ``kind`` and the
    per-sentence associations (``details["association"]``, keyed by sentence).

    Examples
    --------
    >>> from biaskit.embeddings.encoders import StaticSentenceEncoder
    >>> from biaskit.metrics.toys import toy_vectors
    >>> from biaskit.metrics.weat import WEAT, toy_query
    >>> encoder = StaticSentenceEncoder(toy_vectors())
    >>> result = seat(SEATQuery.from_words(toy_query()), encoder, WEAT(n_permutations=200))
    >>> result.n, round(result.effect_size, 3), round(result.p_value, 4)
    (12, 1.889, 0.0011)
    """
    test = test or WEAT()
    texts: list[str] = []
    spans: list[tuple[int, int] | None] = []
    owner: list[str] = []
    for r in ROLES:
        for it in query.items(r):
            texts.append(it.text)
            spans.append(it.span)
            owner.append(r)
    if not texts:
        raise ValueError("the query has no stimuli")
    enc: Encoded = encoder.encode(texts, spans)
    if len(enc) != len(texts):  # pragma: no cover - encoder contract
        raise RuntimeError("the encoder returned a different number of rows")
    bad = enc.report[~enc.ok]
    not_embedded = {r: [] for r in ROLES}  # type: dict[str, list[str]]
    for i in np.flatnonzero(~enc.ok):
        not_embedded[owner[i]].append(f"{texts[i]} ({enc.report['problem'].iloc[i]})")
    if len(bad):
        msg = (
            f"{query.name or 'SEAT'}: {len(bad)} stimulus/stimuli could not be embedded by "
            f"{_describe(encoder)}: " + "; ".join(f"{r}: {v[:3]}" for r, v in not_embedded.items() if v)
        )
        if test.oov_policy == "raise":
            raise ValueError(msg)
        logger.warning(msg)
    mapping: dict[str, np.ndarray] = {}
    for i, t in enumerate(texts):
        if not enc.ok[i]:
            continue
        if t in mapping and not np.allclose(mapping[t], enc.vectors[i], rtol=1e-9, atol=1e-12):
            raise ValueError(f"sentence {t!r} appears twice with different target spans; fix the query")
        mapping[t] = enc.vectors[i]
    sets = [[t for t, o, k in zip(texts, owner, enc.ok, strict=True) if o == r and k] for r in ROLES]
    for r, s in zip(ROLES, sets, strict=True):
        if not s:
            raise ValueError(
                f"{query.name or 'SEAT'}: set {r} ({query.names[ROLES.index(r)]}) has no embeddable stimulus"
            )
    res = test.run(*sets, mapping, names=query.names)
    details = dict(res.details)
    details.update(
        {
            "encoder": getattr(encoder, "name", type(encoder).__name__),
            "pooling": getattr(encoder, "method", "?"),
            "kind": query.kind,
            "query": query.name,
            "language": query.language,
            "not_embedded": {r: v for r, v in not_embedded.items() if v},
            "n_stimuli": {r: len(s) for r, s in zip(ROLES, sets, strict=True)},
        }
    )
    if return_embeddings:
        details["embeddings"] = mapping
    what = "SEAT" if query.kind == "sentences" else "WEAT via encoder"
    return dataclasses.replace(res, method=f"{what} [{_describe(encoder)}] -- {res.method}", details=details)


def weat_through_encoder(query: WEATQuery, encoder: SentenceEncoder, test: WEAT | None = None) -> TestResult:
    """WEAT on bare words fed to an encoder as ``[CLS] word [SEP]`` (seed 001 section 4.2)."""
    return seat(SEATQuery.from_words(query), encoder, test)


def seat_table(
    queries: Mapping[str, SEATQuery | WEATQuery],
    encoders: Sequence[SentenceEncoder] | SentenceEncoder,
    test: WEAT | None = None,
    *,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """One row per (query, encoder): d, p, statistic, sizes, pooling; a failure is a row with ``error``."""
    encs = [encoders] if not isinstance(encoders, Sequence) else list(encoders)
    rows = []
    for key, q in queries.items():
        sq = q if isinstance(q, SEATQuery) else SEATQuery.from_words(q)
        for e in encs:
            row: dict[str, Any] = {
                "test": key,
                "encoder": getattr(e, "name", "?"),
                "pooling": getattr(e, "method", "?"),
                "kind": sq.kind,
                "targets": f"{sq.names[0]} vs {sq.names[1]}",
                "attributes": f"{sq.names[2]} vs {sq.names[3]}",
            }
            try:
                r = seat(sq, e, test)
            except (ValueError, KeyError) as exc:
                logger.warning("SEAT %s with %s not computed: %s", key, _describe(e), exc)
                row.update(d=np.nan, p_value=np.nan, statistic=np.nan, error=str(exc))
                rows.append(row)
                continue
            det = r.details
            row.update(
                **{f"n_{k}": v for k, v in det["sizes"].items()},
                statistic=r.statistic,
                d=r.effect_size,
                p_value=r.p_value,
                significant=bool(r.p_value is not None and r.p_value < alpha),
                permutation=det["permutation_method"],
                n_not_embedded=sum(len(v) for v in det["not_embedded"].values()),
                error="",
            )
            rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the batch grid and the registry
def grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid (:mod:`biaskit.studies.grid`) for WEAT or SEAT.

    WEAT on static vectors runs :meth:`WEAT.run_query` on the words; otherwise the words (WEAT) or
    sentences (SEAT) are encoded, by the static vectors (mean of the words) or by a masked LM with
    the cell's pooling method (``call.method``), and tested with :func:`seat`.
    """
    from biaskit.embeddings.encoders import StaticSentenceEncoder, TransformerEncoder
    from biaskit.metrics.weat import WEAT

    o = call.options
    test = WEAT(
        n_permutations=int(o["n_permutations"]),
        exact_threshold=int(o["exact_threshold"]),
        random_state=o["random_state"],
        alternative=o["weat_alternative"],
        ddof=int(o["ddof"]),
        oov_policy=o["oov_policy"],
    )
    if call.model_kind == "static" and not isinstance(call.data, SEATQuery):
        res = test.run_query(call.data, call.model)
    else:
        if call.model_kind == "static":
            enc: Any = StaticSentenceEncoder(call.model, name=call.model_name)
        else:
            enc = TransformerEncoder(
                call.model.model,
                call.model.tokenizer,
                call.method,
                int(o["layer"]),
                int(o["batch_size"]),
                call.model_name,
            )
        q = (
            call.data
            if isinstance(call.data, SEATQuery)
            else SEATQuery.from_words(call.data, language=call.language or "en")
        )
        res = seat(q, enc, test)
    names = res.details["names"]
    row = GridSupport.rows_from_result(
        res, targets=f"{names['X']} vs {names['Y']}", attributes=f"{names['A']} vs {names['B']}"
    )[0]
    dropped = {k: v for k, v in res.details.get("oov", {}).items() if v}
    dropped.update(res.details.get("not_embedded", {}))
    if dropped:
        row["note"] = "dropped (no vector / not embeddable): " + "; ".join(
            f"{k}: {len(v)}" for k, v in dropped.items()
        )
    return [row]


def grid_methods(model_kind: str, options: Mapping[str, Any]) -> tuple[str, ...]:
    """A masked LM encodes with each pooling method of ``options["methods"]``; static vectors average."""
    return tuple(options["methods"]) if model_kind == "masked" else ("mean",)


_NOT_CAUSAL = (
    "not for a causal language model (sentence encodings come from masked models or word vectors here)"
)


def _calibration_values(call: CalibrationCall) -> MetricValues:
    """The calibration's values: s(sentence, male sentences, female sentences) of each bleached control
    sentence naming a profession (:data:`biaskit.metrics.controls.SEAT_TEMPLATES`), [CLS] encodings."""
    from biaskit.embeddings.encoders import TransformerEncoder
    from biaskit.metrics.controls import SEAT_ATTRIBUTES, SEAT_TEMPLATES
    from biaskit.metrics.weat import association_scores

    lm = call.model
    enc = TransformerEncoder(lm.model, lm.tokenizer, method="cls", name=str(lm.name))
    sents = [(t, tpl.replace("{t}", t)) for t in call.targets for tpl in SEAT_TEMPLATES]
    emb = enc.encode([s for _, s in sents]).vectors
    a = enc.encode(list(SEAT_ATTRIBUTES["male"])).vectors
    bb = enc.encode(list(SEAT_ATTRIBUTES["female"])).vectors
    s = association_scores(np.asarray(emb), np.asarray(a), np.asarray(bb))
    return MetricValues("seat", "groups", np.array([t for t, _ in sents], object), s, unit="sentence")


def _example() -> TestResult:
    """SEAT of the toy query's bleached sentences, averaged toy word vectors as the encoder."""
    from biaskit.embeddings.encoders import StaticSentenceEncoder
    from biaskit.metrics.toys import toy_vectors

    return seat(
        SEATQuery.from_words(toy_query()), StaticSentenceEncoder(toy_vectors()), WEAT(n_permutations=200)
    )


def load_query_dataset(path: str, *, sample: int | None = None, random_state: int = 0) -> tuple[str, Any]:
    """A WEAT or SEAT dataset of the batch grid: :func:`load_seat` of the identifier or file (resolved from
    the user's folder); kind ``"sentences"`` for a :class:`SEATQuery`, ``"words"`` for a
    :class:`~biaskit.metrics.weat.WEATQuery`.  ``sample`` does not apply."""
    from biaskit.core.paths import user_file_or_identifier

    q = load_seat(user_file_or_identifier(path))
    return ("sentences" if isinstance(q, SEATQuery) else "words"), q


def _toy_sentences() -> SEATQuery:
    """The toy WEAT query's words in bleached sentences (a dataset of kind ``"sentences"``)."""
    return SEATQuery.from_words(toy_query())


register_dataset_kind(
    "sentences", "four sentence sets X, Y, A, B (a SEAT query of template sentences)", example=_toy_sentences
)
register_dataset_loader(
    name="weat / seat",
    kinds=("words", "sentences"),
    claims=lambda path: True,
    load=load_query_dataset,
    identifiers="may2019:weat7, may2019:sent-weat7, bfh:de/WEAT/CW1, bfh:de/SEAT/CW1_context, "
    "es:seat_math_arts, es:seat_math_arts/words, or a WEAT / SEAT file",
    fallback=True,
)
register_metric(
    "seat",
    label="SEAT",
    family="language models",
    inputs=("sentence sets",),
    model_kinds=("static", "masked"),
    directional=True,
    test="permutation test over the sentences (exact or sampled), effect size d",
    citation="May et al. 2019, On Measuring Social Biases in Sentence Encoders",
    section="seed 001 section 4.2",
    entry_point=seat,
    summary="WEAT on sentence encodings of bleached template sentences",
    example=_example,
    grid=GridSupport("sentences", grid_cell, grid_methods, {"causal": _NOT_CAUSAL}),
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="seat",
                label="SEAT, mean difference of s",
                kind="groups",
                model_kind="masked",
                values=_calibration_values,
            ),
        )
    ),
)
