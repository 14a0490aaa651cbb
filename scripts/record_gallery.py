"""Record a gallery from a ``make reproduce`` results folder into docs/records/gallery/.

Usage: python scripts/record_gallery.py --results results [--commit SHA] [--out docs/records/gallery]

For each notebook ``NN_name`` whose JSON (``NN_name.json``) is in the results folder, the gallery gets
``NN_name.json`` = ``{"notebook", "finding", "headline", "figures": [{"file", "alt"}], "created"}`` and
at most ``--max-figures`` of its figures (``NN_name_*.png``, in the order the executed notebook shows
them), downscaled to at most ``--max-width`` pixels wide, reduced to a palette of ``--colors`` colours
and saved as optimised PNGs.  The alternative
text of a figure is the ``Description`` that ``save_figure`` writes into the PNG, else the ``alt`` of
the executed notebook's output showing it, else its file name made readable.  ``gallery.json`` (the
manifest: commit, date, machine, command, files and bytes) and ``README.md`` describe the run.

``make docs`` shows the gallery on a study's page when the results folder has no executed copy of
that notebook (docs/_ext/biaskit_docs.py), so a fresh clone shows every study's figures and numbers.
Every file is written atomically; files of an earlier gallery that this run did not write are removed.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import io
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from biaskit.studies.run_provenance import git_commit, machine

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "records" / "gallery"
NOTEBOOK_JSON = re.compile(r"^\d\d_\w+\.json$")


def readable(file: str, notebook: str) -> str:
    """``03_weat_permutation_null.png`` -> ``Figure: permutation null`` (the last resort for alt text)."""
    stem = Path(file).stem
    if stem.startswith(notebook + "_"):
        stem = stem[len(notebook) + 1 :]
    return "Figure: " + (" ".join(stem.replace("-", " ").split("_")).strip() or stem)


def notebook_images(executed: Path) -> list[tuple[str, str]]:
    """``(sha256 of the PNG, alt text or "")`` of every PNG the executed notebook shows, in order."""
    if not executed.is_file():
        return []
    try:
        nb = json.loads(executed.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    shown = []
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            png = (out.get("data") or {}).get("image/png")
            if not png:
                continue
            raw = base64.b64decode("".join(png) if isinstance(png, list) else png)
            meta = (out.get("metadata") or {}).get("image/png") or {}
            shown.append(
                (
                    hashlib.sha256(raw).hexdigest(),
                    str(meta.get("alt") or "") if isinstance(meta, dict) else "",
                )
            )
    return shown


def _png_description(data: bytes) -> str:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        return str(im.info.get("Description") or "").strip()


def shrink(data: bytes, max_width: int, alt: str, colors: int = 256) -> bytes:
    """The PNG at most ``max_width`` pixels wide (aspect kept), on white, reduced to a palette of ``colors``
    colours (0: kept as they are), optimised, with its alt text as ``Description``."""
    from PIL import Image, PngImagePlugin

    with Image.open(io.BytesIO(data)) as im:
        im.load()
        if im.mode != "RGB":  # a transparent background becomes white, as the page shows it
            rgba = im.convert("RGBA")
            im = Image.new("RGBA", rgba.size, "white")
            im.alpha_composite(rgba)
            im = im.convert("RGB")
        if im.width > max_width:
            im.thumbnail(
                (max_width, max(1, round(im.height * max_width / im.width))), Image.Resampling.LANCZOS
            )
        if colors:
            im = im.quantize(colors, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        info = PngImagePlugin.PngInfo()
        info.add_text("Description", alt)
        buf = io.BytesIO()
        im.save(buf, format="PNG", optimize=True, pnginfo=info)
    return buf.getvalue()


def select_figures(results: Path, notebook: str, max_figures: int) -> list[tuple[Path, str]]:
    """The notebook's figures ``(path, alt)``: those the executed notebook shows first, in its order,
    then the others by name; at most ``max_figures``."""
    files = sorted(p for p in results.glob(f"{notebook}_*.png") if p.is_file())
    shown = notebook_images(results / f"{notebook}.ipynb")
    order = {digest: (k, alt) for k, (digest, alt) in reversed(list(enumerate(shown)))}
    ranked = []
    for path in files:
        data = path.read_bytes()
        k, nb_alt = order.get(hashlib.sha256(data).hexdigest(), (len(shown), ""))
        alt = _png_description(data) or nb_alt or readable(path.name, notebook)
        ranked.append((k, path.name, path, " ".join(alt.split())))
    ranked.sort(key=lambda r: (r[0], r[1]))
    return [(path, alt) for _, _, path, alt in ranked[:max_figures]]


def record(
    results: Path,
    out: Path,
    *,
    commit: str,
    command: str,
    max_figures: int = 4,
    max_width: int = 900,
    colors: int = 256,
) -> dict[str, Any]:
    from biaskit.core.io import atomic_write_bytes, atomic_write_text

    results, out = Path(results), Path(out)
    if not results.is_dir():
        raise SystemExit(f"no results folder {results}")
    out.mkdir(parents=True, exist_ok=True)
    written: set[str] = set()
    notebooks, created_dates, total = [], [], 0
    for path in sorted(results.glob("[0-9][0-9]_*.json")):
        if not NOTEBOOK_JSON.match(path.name):
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            print(f"skipped {path.name}: not JSON", file=sys.stderr)
            continue
        name = path.stem
        if not isinstance(data, dict) or "headline" not in data or data.get("notebook", name) != name:
            continue
        figures = []
        for fig, alt in select_figures(results, name, max_figures):
            png = shrink(fig.read_bytes(), max_width, alt, colors)
            atomic_write_bytes(out / fig.name, png)
            written.add(fig.name)
            total += len(png)
            figures.append({"file": fig.name, "alt": alt})
        entry = {
            "notebook": name,
            "finding": str(data.get("finding") or ""),
            "headline": data.get("headline") or {},
            "figures": figures,
            "created": data.get("created"),
        }
        text = json.dumps(entry, indent=2, ensure_ascii=False) + "\n"
        atomic_write_text(out / f"{name}.json", text)
        written.add(f"{name}.json")
        total += len(text.encode("utf-8"))
        notebooks.append({"notebook": name, "figures": len(figures), "created": data.get("created")})
        if data.get("created"):
            created_dates.append(str(data["created"]))
    date = max(created_dates)[:10] if created_dates else datetime.date.today().isoformat()
    manifest = {
        "commit": commit,
        "date": date,
        "recorded": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": "{cpu}, {cores} cores".format(**machine()),
        "command": command,
        "results": str(results),
        "max_figures": max_figures,
        "max_width": max_width,
        "colors": colors,
        "notebooks": notebooks,
        "bytes": total,
    }
    atomic_write_text(out / "gallery.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    readme = (
        "# Gallery of a recorded run\n\n"
        "Generated by `scripts/record_gallery.py`; do not edit by hand. `make docs` shows these figures and "
        "numbers on a study's page when the results folder has no executed copy of the notebook.\n\n"
        f"- commit: `{commit}`\n- date of the run: {date}\n- machine: {manifest['machine']}\n"
        f"- command: `{command}`\n- notebooks: {len(notebooks)}, figures: "
        f"{sum(n['figures'] for n in notebooks)}, {total / 1e6:.2f} MB\n"
    )
    atomic_write_text(out / "README.md", readme)
    for stale in sorted(out.iterdir()):
        if (
            stale.is_file()
            and stale.suffix in (".png", ".json")
            and stale.name != "gallery.json"
            and stale.name not in written
        ):
            stale.unlink()
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--results", required=True, type=Path, help="the results folder of a make reproduce run"
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="the gallery folder (default docs/records/gallery)"
    )
    parser.add_argument(
        "--commit", help="the commit the run was made from (default: git rev-parse HEAD here)"
    )
    parser.add_argument("--max-figures", type=int, default=4)
    parser.add_argument("--max-width", type=int, default=900, help="pixels; wider figures are downscaled")
    parser.add_argument("--colors", type=int, default=256, help="palette size of the PNGs (0: full colour)")
    args = parser.parse_args(argv)
    command = shlex.join(["python", "scripts/record_gallery.py", *(sys.argv[1:] if argv is None else argv)])
    manifest = record(
        args.results, args.out, commit=args.commit or git_commit() or "unknown", command=command,
        max_figures=args.max_figures, max_width=args.max_width, colors=args.colors,
    )  # fmt: skip
    figures = sum(n["figures"] for n in manifest["notebooks"])
    print(
        f"{len(manifest['notebooks'])} notebooks, {figures} figures, {manifest['bytes'] / 1e6:.2f} MB in "
        f"{args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
