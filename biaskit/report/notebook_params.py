"""The parameters of a study notebook, checked before anything runs (fail loudly, before any work).

Every numbered notebook calls :func:`check_parameters` at the top of the code cell right after its
``parameters`` cell, with one rule per parameter::

    check_parameters(globals(), {
        "quick": Flag(False),
        "n_permutations": Int(100_000, min=1, quick=2000),
        "mode": Choice("replay", ("replay", "compute")),
        "model": Model("auto"),
    })

**One line per mistake.**  A value outside its rule stops the notebook at once with a
:class:`ParameterError` that names the parameter, the value and what is allowed
(``n_permutations = -5 is not allowed: a whole number >= 1 (default 100000)``); Jupyter shows it as that
one line, not as a traceback, and ``python -m biaskit notebook`` prints it as its error.  A model that names
nothing on this machine (a typo, a folder that is not there, a hub id not downloaded) is such a mistake too,
with "did you mean ...?" and how to get the model.

**A quick run shrinks defaults, never a value the user gave.**  A rule's ``quick=`` value replaces the
parameter in a quick run (``quick=True``) only when the user did not give the parameter.  What the user gave
is known from two sources: the names listed in the environment variable ``BIASKIT_USER_PARAMETERS`` (a
JSON list; ``python -m biaskit notebook`` sets it to its ``-p`` / ``-r`` names before the kernel starts) and,
without it (JupyterLab, papermill called directly), every parameter whose value differs from the rule's
default.  ``-p quick True -p n_permutations 300`` therefore runs 300 permutations, and so does editing the
parameters cell to ``n_permutations = 300`` in JupyterLab.

**Relative paths** (a model folder, a vector file, a corpus) are checked from the folder the user started
from (:func:`biaskit.core.paths.resolve_user_path`: ``BIASKIT_CALLER_CWD``, which the command line sets,
else the working directory); the value itself is kept as given, and biaskit's loaders resolve it the same way.

The rules are written as a literal dict in the notebook, so that :func:`notebook_rules` can read them from
the ``.ipynb`` file without running it: the command line checks the ``-p`` values before it starts a kernel
(:func:`check_values`), and the tests compare each rule's default with the parameters cell.
"""

from __future__ import annotations

import ast
import difflib
import json
import math
import os
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "USER_PARAMETERS_ENV",
    "Choice",
    "Corpus",
    "Distribution",
    "Flag",
    "Int",
    "ListOf",
    "Model",
    "NameOrPath",
    "ParameterError",
    "ReferenceDataNeeded",
    "Real",
    "Rule",
    "require_reference_data",
    "Text",
    "VectorFormat",
    "Vectors",
    "check_parameters",
    "check_values",
    "given_parameters",
    "notebook_rules",
    "parameters_cell_values",
]

#: names of the parameters the user gave (a JSON list), set by ``python -m biaskit notebook``
USER_PARAMETERS_ENV = "BIASKIT_USER_PARAMETERS"


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


class ParameterError(ValueError):
    """A notebook parameter outside its rule: one line naming the parameter, the value and what is allowed.

    In Jupyter (IPython) it is shown as that line alone, without a traceback: the mistake is in the
    parameters, not in the code.
    """

    def _render_traceback_(self) -> list[str]:  # IPython's hook for a custom error display
        return [f"\x1b[0;31mParameterError\x1b[0m: {self}"]


def _shown(value: Any) -> str:
    """A value in an error line: text quoted, numbers as typed."""
    return repr(value)


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value)) if abs(value) >= 1 else repr(value)
    return repr(value) if isinstance(value, float) else str(value)


class Rule:
    """What one parameter may be: its ``default`` (the parameters cell's value), the value a quick run uses
    when the user did not give one (``quick``), and :meth:`problem`, why a value is not allowed."""

    default: Any
    quick: Any

    def __init__(self, default: Any, *, quick: Any = _UNSET) -> None:
        self.default = default
        self.quick = quick

    def allowed(self) -> str:
        """What is allowed, in words (the end of the error line)."""
        raise NotImplementedError

    def problem(self, value: Any) -> str | None:
        """``None`` when ``value`` is allowed, else what is allowed (or what is wrong), in words."""
        raise NotImplementedError

    def __repr__(self) -> str:
        quick = "" if self.quick is _UNSET else f", quick={self.quick!r}"
        return f"{type(self).__name__}({self.default!r}{quick})"


class Flag(Rule):
    """``True`` or ``False``."""

    def allowed(self) -> str:
        return "True or False"

    def problem(self, value: Any) -> str | None:
        return None if isinstance(value, bool) else self.allowed()


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Int(Rule):
    """A whole number in ``[min, max]`` (either bound optional); ``none=True`` also allows ``None``."""

    def __init__(
        self,
        default: Any,
        *,
        min: int | None = None,
        max: int | None = None,
        none: bool = False,
        quick: Any = _UNSET,
    ) -> None:
        super().__init__(default, quick=quick)
        self.min, self.max, self.none = min, max, none

    def allowed(self) -> str:
        if self.min is not None and self.max is not None:
            text = f"a whole number from {self.min} to {self.max}"
        elif self.min is not None:
            text = f"a whole number >= {self.min}"
        elif self.max is not None:
            text = f"a whole number <= {self.max}"
        else:
            text = "a whole number"
        return f"None or {text}" if self.none else text

    def problem(self, value: Any) -> str | None:
        if value is None and self.none:
            return None
        whole = _is_real(value) and float(value).is_integer()
        if not whole:
            return self.allowed()
        if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
            return self.allowed()
        return None


class Real(Rule):
    """A finite number; ``gt``/``ge``/``lt``/``le`` bound it; ``also`` lists words allowed too
    (``"median"``)."""

    def __init__(
        self,
        default: Any,
        *,
        gt: float | None = None,
        ge: float | None = None,
        lt: float | None = None,
        le: float | None = None,
        also: Sequence[str] = (),
        quick: Any = _UNSET,
    ) -> None:
        super().__init__(default, quick=quick)
        self.gt, self.ge, self.lt, self.le, self.also = gt, ge, lt, le, tuple(also)

    def allowed(self) -> str:
        bounds = [f"{op} {_number(b)}" for op, b in ((">", self.gt), (">=", self.ge)) if b is not None]
        bounds += [f"{op} {_number(b)}" for op, b in (("<", self.lt), ("<=", self.le)) if b is not None]
        text = "a number" + (" " + " and ".join(bounds) if bounds else "")
        if self.also:
            text += " or " + " or ".join(repr(a) for a in self.also)
        return text

    def problem(self, value: Any) -> str | None:
        if isinstance(value, str) and value in self.also:
            return None
        if not _is_real(value):
            return self.allowed()
        ok = (
            (self.gt is None or value > self.gt)
            and (self.ge is None or value >= self.ge)
            and (self.lt is None or value < self.lt)
            and (self.le is None or value <= self.le)
        )
        return None if ok else self.allowed()


def _suggest(value: Any, options: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for a near-miss of one of ``options``, else ``""``."""
    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, list(options), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


class Choice(Rule):
    """One of ``options``."""

    def __init__(self, default: Any, options: Sequence[Any], *, quick: Any = _UNSET) -> None:
        super().__init__(default, quick=quick)
        self.options = tuple(options)

    def allowed(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)

    def problem(self, value: Any) -> str | None:
        if value in self.options and type(value) is type(next(o for o in self.options if o == value)):
            return None
        return self.allowed() + "." + _suggest(value, [str(o) for o in self.options])


class Text(Rule):
    """A text; ``empty=False`` refuses ``""``."""

    def __init__(self, default: Any, *, empty: bool = True, quick: Any = _UNSET) -> None:
        super().__init__(default, quick=quick)
        self.empty = empty

    def allowed(self) -> str:
        return "a text" if self.empty else "a non-empty text"

    def problem(self, value: Any) -> str | None:
        if not isinstance(value, str) or (not self.empty and not value.strip()):
            return self.allowed()
        return None


def _user_path(value: str) -> Path:
    """``value`` as the user meant it: relative to the folder they started from (``BIASKIT_CALLER_CWD``)."""
    try:
        from biaskit.core.paths import resolve_user_path
    except ImportError:  # pragma: no cover - without the library's path resolver
        p = Path(value).expanduser()
        base = os.environ.get("BIASKIT_CALLER_CWD", "").strip()
        return p if p.is_absolute() else Path(base or os.getcwd()) / p
    return resolve_user_path(value)


class NameOrPath(Rule):
    """One of the known ``names``, a ``prefixes`` form (``"word2vec:<corpus>"``) or an existing file or folder
    (``must="file"`` / ``"folder"`` / ``"any"``), relative paths taken from the user's folder; ``empty=True``
    also allows ``""``."""

    def __init__(
        self,
        default: Any,
        names: Sequence[str] = (),
        *,
        must: str = "any",
        empty: bool = False,
        prefixes: Sequence[str] = (),
        what: str = "a file",
        quick: Any = _UNSET,
    ) -> None:
        super().__init__(default, quick=quick)
        if must not in ("file", "folder", "any"):
            raise ValueError("must is 'file', 'folder' or 'any'")
        self.names, self.must, self.empty = tuple(names), must, empty
        self.prefixes, self.what = tuple(prefixes), what

    def allowed(self) -> str:
        parts = [", ".join(repr(n) for n in self.names)] if self.names else []
        parts += [f"'{p}...'" for p in self.prefixes]
        parts.append(f"the path of {self.what}")
        if self.empty:
            parts.append('""')
        return " or ".join(parts)

    def problem(self, value: Any) -> str | None:
        if not isinstance(value, str):
            return self.allowed()
        if value == "":
            return None if self.empty else self.allowed()
        if value in self.names or any(value.startswith(p) and len(value) > len(p) for p in self.prefixes):
            return None
        path = _user_path(value)
        if path.exists():
            if self.must == "file" and not path.is_file():
                return f"{path} is a folder; give {self.what}"
            if self.must == "folder" and not path.is_dir():
                return f"{path} is a file; give a folder"
            return None
        guess = _suggest(value, self.names)
        return f"{self.allowed()}. There is no {path}.{guess}"


class Corpus(NameOrPath):
    """A corpus: a name of :data:`biaskit.data.corpus.CORPORA` or the path of a text file."""

    def __init__(self, default: Any = "europarl-es-sample", *, quick: Any = _UNSET) -> None:
        super().__init__(default, must="file", what="a text file", quick=quick)

    def problem(self, value: Any) -> str | None:
        from biaskit.data.corpus import CORPORA

        self.names = tuple(CORPORA)
        return super().problem(value)


#: the offline reference vectors (:data:`biaskit.embeddings.vectors.REFERENCE_VECTORS`, whose module loads
#: for seconds; a test keeps the two equal)
REFERENCE_VECTOR_NAMES = ("word2vec-googlenews-wefe", "word2vec-googlenews-bolukbasi", "glove-6b-50d")
#: the formats of :func:`biaskit.embeddings.vectors.load_vectors`
#: (:data:`~biaskit.embeddings.vectors.FORMATS`)
VECTOR_FORMATS = ("auto", "word2vec", "word2vec-binary", "glove", "fasttext", "fasttext-bin", "kv")


class Vectors(NameOrPath):
    """Offline reference vectors by name (:data:`REFERENCE_VECTOR_NAMES`); ``files=True`` also allows the path
    of a vector file, ``prefixes`` other forms (``"word2vec:<corpus>"``).  A name whose files are neither
    fetched nor installed is refused with the command that fetches them
    (:func:`biaskit.data.reference_data.reference_problem`)."""

    def __init__(
        self, default: Any, *, files: bool = False, prefixes: Sequence[str] = (), quick: Any = _UNSET
    ) -> None:
        super().__init__(
            default, REFERENCE_VECTOR_NAMES, must="file", prefixes=prefixes, what="a vector file", quick=quick
        )
        self.files = files

    def allowed(self) -> str:
        if self.files or self.prefixes:
            return super().allowed()
        return "one of " + ", ".join(repr(n) for n in self.names)

    def problem(self, value: Any) -> str | None:
        if isinstance(value, str) and value in self.names:
            # a known name whose files are not on this machine: the one command that fetches them, up front
            from biaskit.data.reference_data import reference_problem

            return reference_problem(value)
        if self.files or self.prefixes:
            return super().problem(value)
        return self.allowed() + "." + _suggest(value, self.names)


class VectorFormat(Choice):
    """A format of :func:`biaskit.embeddings.vectors.load_vectors` (:data:`VECTOR_FORMATS`)."""

    def __init__(self, default: Any = "auto", *, quick: Any = _UNSET) -> None:
        super().__init__(default, VECTOR_FORMATS, quick=quick)


#: the random stand-ins a notebook may ask for by name (biaskit.lm.builtin, biaskit.lm.xlnet)
STAND_INS = ("tiny", "tiny-causal")


class Model(Rule):
    """A language model: ``"auto"`` (and the other ``also`` words), a stand-in of ``stand_ins``, a bundled
    model (:data:`biaskit.lm.catalogue.MODEL_NAMES`, word vectors excepted), a model folder (relative to the
    user's folder) or a hub id in the local Hugging Face cache; ``empty=True`` also allows ``""`` (no model).

    A name that is none of these is refused before anything loads, with what was looked for, "did you
    mean ...?" for a near-miss of a bundled name, and how to get the model
    (:func:`biaskit.lm.builtin.model_not_found_error` where the library has it).
    """

    def __init__(
        self,
        default: Any,
        *,
        also: Sequence[str] = ("auto",),
        stand_ins: Sequence[str] = STAND_INS,
        kind: str | None = None,
        empty: bool = False,
        quick: Any = _UNSET,
    ) -> None:
        super().__init__(default, quick=quick)
        self.also, self.stand_ins, self.kind, self.empty = tuple(also), tuple(stand_ins), kind, empty

    def allowed(self) -> str:
        words = ", ".join(repr(w) for w in (*self.also, *self.stand_ins))
        return f"{words}, a bundled model, a model folder or a hub id in the local Hugging Face cache" + (
            ' or ""' if self.empty else ""
        )

    def problem(self, value: Any) -> str | None:
        if not isinstance(value, str):
            return self.allowed()
        if value == "":
            return None if self.empty else self.allowed()
        if value in self.also or value in self.stand_ins:
            return None
        if value in (*STAND_INS, "tiny-xlnet"):  # a stand-in of another kind than this notebook runs
            return f"{value!r} is a random stand-in this notebook does not run; allowed: {self.allowed()}"
        from biaskit.lm import catalogue

        path = _user_path(value)
        if value in catalogue.MODEL_NAMES and not path.exists():
            if value.endswith("-w2v"):
                return f"{value!r} is a bundled set of word vectors, not a language model"
            try:
                catalogue.model_path(value)
            except (FileNotFoundError, KeyError):
                return self._not_found(value)
            return None
        if path.exists():
            if path.is_dir() and (path / "config.json").is_file():
                return None
            what = "a folder without config.json" if path.is_dir() else "a file"
            return f"{path} is {what}, not a model folder (a Hugging Face model saved with save_pretrained)"
        if _in_hf_cache(value):
            return None
        return self._not_found(value)

    def _not_found(self, value: str) -> str:
        try:  # the library's message: what was looked for, did you mean, how to get it
            from biaskit.lm.builtin import model_not_found_error
        except ImportError:  # pragma: no cover - before the library side is in
            model_not_found_error = None
        if model_not_found_error is not None:
            kind = self.kind if self.kind in ("masked", "causal") else None
            return " ".join(str(model_not_found_error(value, kind)).split())  # type: ignore[arg-type]
        from biaskit.lm import catalogue

        names = [n for n in catalogue.MODEL_NAMES if not n.endswith("-w2v")]
        guess = _suggest(value, [*names, *self.stand_ins])
        return (
            f"no such model.{guess} Looked for: a bundled model ({', '.join(names)}), a folder "
            f"{_user_path(value)} (not there) and the local Hugging Face cache (not there). Give a model "
            "folder, or download the model first (huggingface-cli download NAME) and run again."
        )


def _in_hf_cache(name: str) -> bool:
    """True when ``name`` is a hub id whose ``config.json`` is in the local Hugging Face cache (no
    network)."""
    if name.count("/") > 1 or name.startswith(("/", ".", "~")):
        return False
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(name, "config.json")
    except Exception:  # an id the hub library refuses: not in the cache
        return False
    return isinstance(hit, str) and Path(hit).is_file()


class ListOf(Rule):
    """A list (or tuple) of ``min_len`` or more items, each allowed by ``item`` (a rule)."""

    def __init__(self, default: Any, item: Rule, *, min_len: int = 1, quick: Any = _UNSET) -> None:
        super().__init__(default, quick=quick)
        self.item, self.min_len = item, min_len

    def allowed(self) -> str:
        return f"a list of at least {self.min_len} item(s), each {self.item.allowed()}"

    def problem(self, value: Any) -> str | None:
        if not isinstance(value, (list, tuple)) or len(value) < self.min_len:
            return self.allowed()
        for v in value:
            why = self.item.problem(v)
            if why is not None:
                return f"item {_shown(v)} is not allowed: {why}"
        return None


class Distribution(Text):
    """The name of a continuous distribution of :mod:`scipy.stats` (``"genextreme"``)."""

    def allowed(self) -> str:
        return "the name of a continuous distribution of scipy.stats (e.g. 'norm', 'genextreme')"

    def problem(self, value: Any) -> str | None:
        import scipy.stats

        names = [
            n for n in dir(scipy.stats) if isinstance(getattr(scipy.stats, n), scipy.stats.rv_continuous)
        ]
        if isinstance(value, str) and value in names:
            return None
        return self.allowed() + "." + _suggest(value, names)


#: the rules a notebook may use (what :func:`notebook_rules` evaluates)
RULES: dict[str, type[Rule]] = {
    c.__name__: c
    for c in (
        Flag,
        Int,
        Real,
        Choice,
        Text,
        NameOrPath,
        Corpus,
        Vectors,
        VectorFormat,
        Model,
        ListOf,
        Distribution,
    )
}


def _default_text(rule: Rule) -> str:
    d = rule.default
    return _number(d) if _is_real(d) else repr(d)


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "?", "!")) else text + "."


def check_values(values: Mapping[str, Any], rules: Mapping[str, Rule]) -> None:
    """Check every value of ``values`` that has a rule; :class:`ParameterError` naming each bad one, one line
    each (``n_permutations = -5 is not allowed (the default is 100000): it must be a whole number >= 1.``)."""
    problems = []
    for name, rule in rules.items():
        if name not in values:
            continue
        why = rule.problem(values[name])
        if why is not None:
            if why == rule.allowed() or why.startswith(rule.allowed() + "."):
                why = "it must be " + why
            problems.append(
                f"{name} = {_shown(values[name])} is not allowed (the default is {_default_text(rule)}): "
                + _sentence(why)
            )
    if problems:
        raise ParameterError(" ".join(problems))


def _same(a: Any, b: Any) -> bool:
    """``a == b`` as a parameter value: ``1 == 1.0``, but ``True != 1``, ``"1" != 1`` and lists item by
    item."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - an odd object: count it as given
        return False


def given_parameters(namespace: Mapping[str, Any], rules: Mapping[str, Rule]) -> set[str]:
    """The parameters the user gave: the names in ``BIASKIT_USER_PARAMETERS`` (set by the command line)
    and every parameter whose value differs from its rule's default."""
    names: set[str] = set()
    env = os.environ.get(USER_PARAMETERS_ENV, "").strip()
    if env:
        try:
            listed = json.loads(env)
        except json.JSONDecodeError:
            listed = []
        names |= {str(n) for n in listed} if isinstance(listed, list) else set()
    names |= {n for n, r in rules.items() if n in namespace and not _same(namespace[n], r.default)}
    return names & set(rules)


def _quick_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(_quick_text(v) for v in value) if value else "none"
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,g}"
    return f"`{value}`" if value != "" else '""'


def check_parameters(
    namespace: MutableMapping[str, Any], rules: Mapping[str, Rule], *, show: bool | None = None
) -> dict[str, Any]:
    """Check a notebook's parameters, then give a quick run its smaller defaults; return the values in force.

    ``namespace`` is the notebook's ``globals()`` (the parameters cell and papermill's injected values ran
    into it); ``rules`` has one :class:`Rule` per parameter.  A value outside its rule raises
    :class:`ParameterError` (one line, see the module docstring).  With ``quick`` true, every rule's
    ``quick`` value replaces its parameter in ``namespace`` unless the user gave that parameter
    (:func:`given_parameters`); in a Jupyter kernel (``show=None``) one line says which parameters took their
    quick values and that the values the user set are kept.
    """
    missing = [n for n in rules if n not in namespace]
    if missing:
        raise TypeError(f"the parameters cell defines no {', '.join(missing)} (a rule without its parameter)")
    for name, rule in rules.items():  # the notebook's own rules must hold for its own values
        if rule.quick is not _UNSET and rule.problem(rule.quick) is not None:
            raise TypeError(f"the quick value {rule.quick!r} of {name} breaks its own rule")
    check_values(namespace, rules)
    shrunk: list[tuple[str, Any, Any]] = []
    if namespace.get("quick") is True:
        given = given_parameters(namespace, rules)
        for name, rule in rules.items():
            if rule.quick is _UNSET or name in given or _same(namespace[name], rule.quick):
                continue
            shrunk.append((name, namespace[name], rule.quick))
            namespace[name] = rule.quick
    if shrunk and (show if show is not None else _in_kernel()):
        from IPython.display import Markdown, display

        parts = [f"`{n}` {_quick_text(new)} (default {_quick_text(old)})" for n, old, new in shrunk]
        display(
            Markdown(
                "**Quick run:** for a fast check, the parameters you did not set take their quick values: "
                + "; ".join(parts)
                + ". The values you set are kept."
            )
        )
    return {n: namespace[n] for n in rules}


class ReferenceDataNeeded(RuntimeError):
    """A notebook needs third-party reference data that is not on this machine
    (:func:`require_reference_data`).

    In Jupyter it is shown as its message alone, which names the one command that fetches the data."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31mReferenceDataNeeded\x1b[0m: {self}"]


def require_reference_data(*names: str) -> None:
    """Stop a notebook before any work when reference data it reads later is neither fetched nor installed.

    ``names`` are keys of :data:`biaskit.data.reference_data.REFERENCE_DATA` (e.g. ``"fair-llm-benchmark"``,
    the GAP and BUG sentences); the error gives, per missing name, the message of
    :func:`~biaskit.data.reference_data.reference_problem`, which names the fetch command.  Nothing is read.

    Examples
    --------
    >>> require_reference_data()  # nothing asked, nothing missing
    """
    from biaskit.data.reference_data import reference_problem

    problems = [p for p in (reference_problem(n) for n in names) if p]
    if problems:
        raise ReferenceDataNeeded(" ".join(problems))


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


# ----------------------------------------------------------------------------- reading a notebook's rules
def _literal(node: ast.AST) -> Any:
    """Evaluate the rules' literal: constants, lists, tuples, dicts, a minus sign and calls of
    :data:`RULES`."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_literal(e) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict):
        return {
            _literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True) if k is not None
        }
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_literal(node.operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in RULES:
        args = [_literal(a) for a in node.args]
        kwargs = {k.arg: _literal(k.value) for k in node.keywords if k.arg}
        return RULES[node.func.id](*args, **kwargs)
    raise ValueError(f"not a literal rule: {ast.unparse(node)}")


def _cells(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    cells = nb.get("cells", [])
    for c in cells:
        src = c.get("source", "")
        c["source"] = "".join(src) if isinstance(src, list) else str(src)
    return cells


def notebook_rules(path: str | os.PathLike[str]) -> dict[str, Rule] | None:
    """The rules a notebook passes to :func:`check_parameters`, read from the ``.ipynb`` without running it
    (``None`` when no code cell calls it)."""
    for cell in _cells(path):
        if cell.get("cell_type") != "code" or "check_parameters(" not in cell["source"]:
            continue
        try:
            tree = ast.parse(cell["source"])
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "check_parameters"
                and len(node.args) >= 2
            ):
                rules = _literal(node.args[1])
                if isinstance(rules, dict):
                    return rules
    return None


def parameters_cell_values(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The names and values the ``parameters`` cell of a notebook defines, in order (a value that is not a
    literal is left unset)."""
    for cell in _cells(path):
        if cell.get("cell_type") == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            out: dict[str, Any] = {}
            for node in ast.parse(cell["source"]).body:
                target = node.target if isinstance(node, ast.AnnAssign) else None
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                if isinstance(target, ast.Name) and getattr(node, "value", None) is not None:
                    try:
                        out[target.id] = ast.literal_eval(node.value)  # type: ignore[arg-type]
                    except ValueError:  # not a literal (an expression): the name is still a parameter
                        out[target.id] = _UNSET
            return out
    return {}
