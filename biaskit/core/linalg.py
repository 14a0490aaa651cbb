"""Small linear-algebra helpers shared by the word-vector metrics."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["unit_rows"]


def unit_rows(
    mat: np.ndarray,
    what: str,
    *,
    labels: Sequence[str] | None = None,
    check_finite: bool = False,
) -> np.ndarray:
    """Scale every vector along the last axis of ``mat`` to unit length (cosine geometry).

    Zero vectors have no direction (and no cosine similarity): they raise ``ValueError``
    naming ``what`` and, when ``labels`` are given (one per row of a 2-D ``mat``), the
    offending words.  ``check_finite=True`` also rejects NaN / infinite entries.
    """
    mat = np.asarray(mat, dtype=np.float64)
    if check_finite and not np.all(np.isfinite(mat)):
        raise ValueError(f"{what}: some vectors contain NaN or infinite values")
    norms = np.linalg.norm(mat, axis=-1, keepdims=True)
    if np.any(norms == 0):
        if labels is not None:
            zero = [w for w, n in zip(labels, norms.ravel(), strict=True) if n == 0]
            raise ValueError(f"{what}: zero vectors have no direction or cosine similarity: {zero}")
        raise ValueError(f"{what}: zero vectors have no direction or cosine similarity")
    return mat / norms
