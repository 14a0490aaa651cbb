"""The documentation site: ``make docs`` builds with zero warnings, the API reference covers
the registry's metrics and the lm layer, every internal link resolves, nothing is loaded from the
network, numbers from runs are generated from their records, and headless Chromium opens the pages
with no console error.  Also the README: at most 12 KB, the quickstart verbatim, no run numbers.

The build runs once per module, like ``make docs`` (same Sphinx options, read from the Makefile), into a
temporary folder, on a small results folder made here: one executed notebook with its JSON, standing
for a ``make reproduce`` folder, so the studies page renders it and takes its finding from the JSON;
and on a small gallery of a recorded run (``scripts/record_gallery.py`` run on a made-up results
folder), shown on the page of a study that the results folder lacks.
"""

from __future__ import annotations

import base64
import importlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from browser_support import CHROMIUM

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
FINDING = "A planted finding sentence from the fixture JSON, 0.731 of the pairs."


def _makefile_sphinx_options() -> list[str]:
    recipe = re.search(
        r"^docs:.*\n\t\$\(PY\) -m sphinx (.+) docs docs/_build/html$", (ROOT / "Makefile").read_text(), re.M
    )
    assert recipe, "the Makefile's docs target no longer runs sphinx"
    options = shlex.split(recipe.group(1))
    assert "-W" in options, "make docs must turn warnings into errors"
    return options


def _fixture_results(folder: Path) -> None:
    """An executed notebook (stream, table, figure, a widget without state, math) and its JSON."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=40)
    plt.close(fig)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell(
            "# 03 · The WEAT, executed\n\nThe effect size $d = 1.2$ and\n\n$$s(w, A, B) = 1$$"
        ),
        nbformat.v4.new_code_cell(
            "print('hello')",
            outputs=[
                nbformat.v4.new_output("stream", name="stdout", text="hello\n"),
                nbformat.v4.new_output(
                    "display_data",
                    data={"text/html": "<table><tr><td>0.5</td></tr></table>", "text/plain": "table"},
                ),
                nbformat.v4.new_output(
                    "display_data",
                    data={"image/png": base64.b64encode(buf.getvalue()).decode(), "text/plain": "fig"},
                ),
                nbformat.v4.new_output(
                    "display_data",
                    data={
                        "application/vnd.jupyter.widget-view+json": {
                            "model_id": "x",
                            "version_major": 2,
                            "version_minor": 0,
                        },
                        "text/plain": "HBox()",
                    },
                ),
            ],
            execution_count=1,
        ),
        nbformat.v4.new_markdown_cell("## What this shows\n\nA fixture."),
    ]
    nbformat.write(nb, folder / "03_weat.ipynb")
    (folder / "03_weat.json").write_text(
        json.dumps(
            {
                "notebook": "03_weat",
                "finding": FINDING,
                "headline": {"WEAT d": 1.2345, "pairs": 1503},
                "results": {"x": 1},
            }
        ),
        encoding="utf-8",
    )


GALLERY_FINDING = "<script>alert('planted')</script> A *recorded* finding"
GALLERY_ALT = 'Figure: alt text of the planted "gallery" figure <b>, d = 0.5'
GALLERY_COMMIT = "abc123def4567890abc123def4567890abc12345"


def _record_gallery_module():
    spec = importlib.util.spec_from_file_location("record_gallery", ROOT / "scripts" / "record_gallery.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _png(
    path: Path, size: tuple[int, int], description: str | None = None, color: str = "steelblue"
) -> bytes:
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    if description:
        info.add_text("Description", description)
    Image.new("RGB", size, color).save(path, format="PNG", pnginfo=info)
    return path.read_bytes()


def _fixture_gallery(base: Path) -> Path:
    """A gallery recorded from a made-up run of 06_stereoset (a study the fixture results folder lacks)
    and of 03_weat (which it has: the executed notebook wins)."""
    run = base / "recorded_run"
    run.mkdir()
    for name, finding in (
        ("06_stereoset", GALLERY_FINDING),
        ("03_weat", "A gallery finding the executed notebook hides."),
    ):
        (run / f"{name}.json").write_text(
            json.dumps(
                {
                    "notebook": name,
                    "created": "2026-01-02T03:04:05+00:00",
                    "python": "3.11",
                    "finding": finding,
                    "headline": {"Recorded score | planted": 0.43219, "pairs": 1503},
                    "parameters": {},
                    "results": {},
                }
            ),
            encoding="utf-8",
        )
        _png(run / f"{name}_planted.png", (1200, 300), GALLERY_ALT)
    gallery = base / "gallery"
    _record_gallery_module().record(
        run, gallery, commit=GALLERY_COMMIT, command="python scripts/record_gallery.py --results x"
    )
    return gallery


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sphinx", reason="the docs extra is not installed (make setup installs it)")
    pytest.importorskip("myst_nb", reason="the docs extra is not installed (make setup installs it)")
    base = tmp_path_factory.mktemp("docs")
    results = base / "results"
    results.mkdir()
    _fixture_results(results)
    out = base / "html"
    env = {
        **os.environ,
        "BIASKIT_DOCS_RESULTS": str(results),
        "BIASKIT_DOCS_GALLERY": str(_fixture_gallery(base)),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            *_makefile_sphinx_options(),
            "-E",
            "-w",
            str(base / "warnings.txt"),
            "docs",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    warnings = (
        (base / "warnings.txt").read_text(encoding="utf-8") if (base / "warnings.txt").is_file() else ""
    )
    assert done.returncode == 0 and not warnings.strip(), (
        f"make docs failed or warned:\n{warnings[-6000:]}\n{done.stderr[-3000:]}"
    )
    return out


@pytest.mark.slow
def test_docs_build_with_zero_warnings_and_the_pages_asked_for(site):
    for page in (
        "index.html",
        "getting_started.html",
        "user_guide/index.html",
        "user_guide/corpus_pmi.html",
        "user_guide/word_vectors.html",
        "user_guide/language_models.html",
        "user_guide/calibration.html",
        "user_guide/debiasing.html",
        "user_guide/grids_and_dask.html",
        "user_guide/explorers.html",
        "user_guide/bad_input.html",
        "studies/index.html",
        "metrics.html",
        "validation.html",
        "measurements.html",
        "errata.html",
        "coverage.html",
        "adding_a_metric.html",
        "changelog.html",
        "installing.html",
        "_generated/api/index.html",
        "search.html",
    ):
        assert (site / page).is_file(), f"no {page}"
    if sorted((DOCS.parent / "benchmarks" / "records").glob("*-peers.json")):
        page = (site / "_generated" / "benchmarks.html").read_text(encoding="utf-8")
        assert "lm-evaluation-harness" in page and "Targets" in page and "Roofline" in page


def _ids(html: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', html))


@pytest.mark.slow
def test_api_reference_has_every_registered_metric_and_every_public_name_of_the_lm_layer(site):
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import biaskit_docs
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    from biaskit.metrics import registered_metrics

    api = site / "_generated" / "api"
    missing = []
    for metric in registered_metrics():
        if metric.package != "biaskit":  # a plug-in package's metric has no page in biaskit's API reference
            continue
        module, _, name = metric.entry_point.partition(":")
        page = api / f"{module}.html"
        if not page.is_file() or f"{module}.{name}" not in _ids(page.read_text(encoding="utf-8")):
            missing.append(f"{metric.name}: {module}.{name}")
    lm_modules = [
        m for m in biaskit_docs.public_modules() if m == "biaskit.lm" or m.startswith("biaskit.lm.")
    ]
    assert len(lm_modules) > 8
    for module in lm_modules:
        own, _, _ = biaskit_docs.module_members(module)
        ids = _ids((api / f"{module}.html").read_text(encoding="utf-8"))
        missing += [f"{module}.{n}" for n in own if f"{module}.{n}" not in ids]
        mod = importlib.import_module(module)
        public = [
            n
            for n, o in vars(mod).items()
            if not n.startswith("_") and callable(o) and getattr(o, "__module__", "") == module
        ]
        missing += [f"{module}.{n} (public, not documented)" for n in public if f"{module}.{n}" not in ids]
    assert not missing, missing
    # the formulas keep their math: MathML, no TeX left over and no MathJax
    weat = (api / "biaskit.metrics.weat.html").read_text(encoding="utf-8")
    assert "<math" in weat and "mathjax" not in weat.lower()


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value and (
                (tag == "a" and key == "href") or key == "src" or (tag == "link" and key == "href")
            ):
                self.links.append((tag, value))


@pytest.mark.slow
def test_every_internal_link_resolves_and_nothing_comes_from_the_network(site):
    broken, remote = [], []
    id_cache: dict[Path, set[str]] = {}
    pages = sorted(
        p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts
    )  # theme templates
    assert len(pages) > 80
    for page in pages:
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for tag, link in parser.links:
            parts = urlsplit(link)
            if parts.scheme in ("http", "https"):
                if tag in ("script", "link", "img", "iframe"):
                    remote.append(f"{page.relative_to(site)}: {link}")
                continue
            if parts.scheme in ("mailto", "data", "javascript"):
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {link}")
                continue
            if parts.fragment and target.suffix == ".html":
                if target not in id_cache:  # each page read once (setdefault would read it for every link)
                    id_cache[target] = _ids(target.read_text(encoding="utf-8"))
                ids = id_cache[target]
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(site)}: {link} (no such anchor)")
    assert not broken, "\n".join(broken[:30])
    assert not remote, "pages load resources from the network:\n" + "\n".join(remote[:30])


@pytest.mark.slow
def test_numbers_from_runs_are_generated_from_their_records(site):
    studies = (site / "studies" / "index.html").read_text(encoding="utf-8")
    assert FINDING in studies and "1.23" in studies  # the fixture JSON's finding and headline
    rendered = (site / "_generated" / "studies" / "03_weat.html").read_text(encoding="utf-8")
    assert "hello" in rendered and "<img" in rendered  # the executed outputs, not re-run
    assert "no executed" in (site / "_generated" / "studies" / "05_crows_pairs_pll.html").read_text(
        encoding="utf-8"
    )
    assert "GALLERY" not in rendered.upper()  # the executed notebook replaces the recorded gallery
    record = json.loads((ROOT / "data" / "models" / "en-mlm" / "training.json").read_text(encoding="utf-8"))
    models = (site / "user_guide" / "bundled_models.html").read_text(encoding="utf-8")
    assert f"PPPL {record['bundled_held_out_pppl']:.1f}" in models
    timings = json.loads((DOCS / "records" / "timings.json").read_text(encoding="utf-8"))
    assert timings["entries"][0]["wall clock"] in (site / "measurements.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_study_not_in_the_results_folder_shows_the_recorded_gallery_escaped(site):
    page = (site / "_generated" / "studies" / "06_stereoset.html").read_text(encoding="utf-8")
    assert "recorded run of commit" in page and GALLERY_COMMIT[:12] in page and "2026-01-02" in page
    assert '<span class="pre">reproduce</span>' in page  # `make reproduce`, as code
    images = re.findall(r"<img\b[^>]*>", page)
    assert any(
        'alt="Figure: alt text of the planted &quot;gallery&quot; figure &lt;b&gt;, d = 0.5"' in img
        for img in images
    ), images
    src = re.search(r'<img\b[^>]*src="([^"]+)"', page).group(1)
    assert (site / "_generated" / "studies" / unquote(src)).resolve().is_file()
    # the headline numbers as a table, through _number; the "|" of a name stays text
    assert "0.432" in page and "1,503" in page and "Recorded score | planted" in page and "<table" in page
    # the finding is text: no script element, no emphasis from the asterisks
    assert "&lt;script&gt;alert(" in page and "planted’)&lt;/script&gt; A *recorded* finding" in page
    assert "<script>alert" not in page and "<em>recorded</em>" not in page and "*recorded*" in page
    studies = (site / "studies" / "index.html").read_text(encoding="utf-8")
    assert "recorded run" in studies and "<script>alert" not in studies and "0.432" in studies


def test_record_gallery_copies_findings_numbers_and_at_most_four_small_figures(tmp_path):
    import nbformat
    from PIL import Image

    record_gallery = _record_gallery_module()
    results = tmp_path / "results"
    results.mkdir()
    payload = {
        "notebook": "07_x",
        "created": "2026-03-04T05:06:07+00:00",
        "python": "3.11.9",
        "finding": "A finding.",
        "headline": {"d": 0.5, "n": 12},
        "parameters": {"quick": True},
        "results": {"big": list(range(100))},
    }
    (results / "07_x.json").write_text(json.dumps(payload), encoding="utf-8")
    (results / "08_no_headline.json").write_text(json.dumps({"notebook": "08_no_headline"}), encoding="utf-8")
    (results / "gpu_benchmarks.json").write_text("{}", encoding="utf-8")
    _png(results / "07_x_a_wide.png", (1800, 600), "Planted description of the wide figure")
    shown = _png(results / "07_x_second_plot.png", (200, 100), color="red")
    for k in range(3):
        _png(results / f"07_x_z{k}.png", (100, 50), color="green")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("show()", outputs=[nbformat.v4.new_output(
        "display_data", data={"image/png": base64.b64encode(shown).decode(), "text/plain": "<Image>"},
        metadata={"image/png": {"alt": "Alt from the notebook"}})])]  # fmt: skip
    nbformat.write(nb, results / "07_x.ipynb")
    out = tmp_path / "gallery"
    out.mkdir()
    (out / "99_old.json").write_text("{}", encoding="utf-8")  # from an earlier gallery: removed
    manifest = record_gallery.record(
        results, out, commit="f" * 40, command="python scripts/record_gallery.py --results results"
    )

    entry = json.loads((out / "07_x.json").read_text(encoding="utf-8"))
    assert set(entry) == {"notebook", "finding", "headline", "figures", "created"}
    assert entry["finding"] == "A finding." and entry["headline"] == {"d": 0.5, "n": 12}
    assert entry["created"] == payload["created"]
    # the notebook's figures first, in its order, then by name; at most four
    assert entry["figures"] == [
        {"file": "07_x_second_plot.png", "alt": "Alt from the notebook"},
        {"file": "07_x_a_wide.png", "alt": "Planted description of the wide figure"},
        {"file": "07_x_z0.png", "alt": "Figure: z0"},
        {"file": "07_x_z1.png", "alt": "Figure: z1"},
    ]
    assert not (out / "07_x_z2.png").exists() and not (out / "99_old.json").exists()
    assert not (out / "08_no_headline.json").exists() and not (out / "gpu_benchmarks.json").exists()
    with Image.open(out / "07_x_a_wide.png") as im:
        assert im.size == (900, 300) and im.info["Description"] == "Planted description of the wide figure"
    assert manifest["commit"] == "f" * 40 and manifest["date"] == "2026-03-04" and manifest["machine"]
    assert manifest["command"].endswith("--results results") and [
        n["notebook"] for n in manifest["notebooks"]
    ] == ["07_x"]
    assert manifest["bytes"] == sum(
        p.stat().st_size for p in out.iterdir() if p.name not in ("gallery.json", "README.md")
    )
    assert json.loads((out / "gallery.json").read_text(encoding="utf-8")) == manifest
    assert "f" * 40 in (out / "README.md").read_text(encoding="utf-8")
    leftovers = [p.name for p in out.iterdir() if p.name.startswith(".") or "tmp" in p.name]
    assert not leftovers, leftovers  # atomic writes leave no temporary file


def test_makefile_serves_the_docs_on_a_local_port():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^\.PHONY:.*\bdocs-serve\b", makefile, re.M)
    assert re.search(r"^DOCS_PORT \?= 8000$", makefile, re.M)
    assert "-m http.server --bind 127.0.0.1 --directory docs/_build/html $(DOCS_PORT)" in makefile
    assert re.search(r'^\t@echo "make docs-serve ', makefile, re.M)
    assert "make docs-serve" in README.read_text(encoding="utf-8")


@pytest.mark.slow
def test_pages_open_in_chromium_without_console_errors(site):
    if CHROMIUM is None or not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (run scripts/install_chromium.sh or set BIASKIT_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
    pages = [
        "index.html",
        "user_guide/word_vectors.html",
        "_generated/api/biaskit.metrics.weat.html",
        "search.html",
    ]
    problems = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            page = browser.new_page()
            page.route(
                "http*://**",
                lambda route: (problems.append(f"network request: {route.request.url}"), route.abort()),
            )
            page.on(
                "console",
                lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
            )
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            for rel in pages:
                page.goto((site / rel).as_uri(), wait_until="load")
                page.wait_for_timeout(300)
                assert page.title(), f"{rel} has no title"
            page.goto((site / "_generated/api/biaskit.metrics.weat.html").as_uri())
            assert page.locator("math").count() > 0
            width = page.evaluate("document.querySelector('math').getBoundingClientRect().width")
            assert width > 0, "MathML not laid out"
        finally:
            browser.close()
    assert not problems, "\n".join(problems)


# ----------------------------------------------------------------------------- the README
def test_readme_is_short_and_has_the_quickstart_verbatim():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 12 * 1024, f"README.md is {len(text.encode())} bytes (at most 12 KB)"
    code = (DOCS / "examples" / "quickstart.py").read_text(encoding="utf-8")
    code = code[code.index("from biaskit") :]
    assert code.strip() in text, "README's quickstart differs from docs/examples/quickstart.py"
    for cmd in ("make setup", "make reproduce", "make test", "python -m biaskit notebooks"):
        assert cmd in text


#: how a number from a run reads: a time, a speed-up, a percentage of a result
RUN_NUMBER = re.compile(r"\b\d+(\.\d+)?\s?(min|minutes|seconds|s|ms|×|x faster|h)\b(?!-)|\b\d+(\.\d+)?\s?%")


def test_no_run_number_is_typed_into_the_readme_or_the_guide_pages():
    pages = [
        README,
        *sorted((DOCS / "user_guide").glob("*.md")),
        *(
            DOCS / n
            for n in (
                "getting_started.md",
                "index.md",
                "installing.md",
                "measurements.md",
                "studies/index.md",
            )
        ),
    ]
    found = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        found += [f"{page.relative_to(ROOT)}: {m.group(0)!r}" for m in RUN_NUMBER.finditer(text)]
    assert not found, (
        "numbers from runs belong in a record (docs/records/*.json) or results/*.json:\n" + "\n".join(found)
    )
