"""unit_rows: the one row-normalisation used by the word-vector metrics."""

from __future__ import annotations

import numpy as np
import pytest

from biaskit.core.linalg import unit_rows


def test_unit_rows_norms_and_directions():
    m = np.array([[3.0, 4.0], [0.0, -2.0]])
    out = unit_rows(m, "m")
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, -1.0]])
    cube = np.arange(1, 25, dtype=float).reshape(2, 3, 4)
    np.testing.assert_allclose(np.linalg.norm(unit_rows(cube, "cube"), axis=-1), np.ones((2, 3)))


def test_unit_rows_rejects_zero_and_non_finite():
    with pytest.raises(ValueError, match=r"m: zero vectors .*\['b'\]"):
        unit_rows(np.array([[1.0, 0.0], [0.0, 0.0]]), "m", labels=["a", "b"])
    with pytest.raises(ValueError, match="NaN"):
        unit_rows(np.array([[np.nan, 1.0]]), "m", check_finite=True)
