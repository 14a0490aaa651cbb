"""The Chromium binary the browser tests drive (the docs site, the static report, the explorers in
JupyterLab, the live hints' script).

``BIASKIT_CHROMIUM`` names one; otherwise the first of ``chromium``, ``chromium-browser``, ``google-chrome``
and ``google-chrome-stable`` on ``PATH`` (``scripts/install_chromium.sh`` installs one), or ``None``: each
test then skips and says how to install it.
"""

from __future__ import annotations

import os
import shutil

CHROMIUM: str | None = os.environ.get("BIASKIT_CHROMIUM") or next(
    (
        shutil.which(n)
        for n in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
        if shutil.which(n)
    ),
    None,
)
