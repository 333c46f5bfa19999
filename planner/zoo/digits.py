"""The bundled scikit-learn digits dataset (8x8 grayscale) and the default model trained on it.

`digits.onnx` is produced by `scripts/train_digits.py`; this module only needs numpy and
scikit-learn, so the project can evaluate and calibrate the default model without torch.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

DIGITS_MODEL_PATH: Path = Path(__file__).parent / "digits.onnx"
"""The default model: a small int8-friendly CNN, input `(batch, 1, 8, 8)`, output logits `(batch, 10)`."""

TEST_SIZE = 0.25
SPLIT_SEED = 0


def load_digits_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return `(x_train, y_train, x_test, y_test)`: images float32 `(N, 1, 8, 8)` in [0, 1], labels int64.

    The split is deterministic and stratified (25% held out).
    """
    from sklearn.datasets import load_digits  # scikit-learn costs ~3 s to import: only when the data is read
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images.astype(np.float32) / 16.0)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=TEST_SIZE, random_state=SPLIT_SEED, stratify=labels
    )
    return x_train, y_train, x_test, y_test


def calibration_inputs(count: int = 64) -> np.ndarray:
    """The first `count` training images, float32 `(count, 1, 8, 8)`, for int8 calibration."""
    x_train = load_digits_split()[0]
    if not 0 < count <= len(x_train):
        raise ValueError(f"count must be in [1, {len(x_train)}], got {count}")
    return np.ascontiguousarray(x_train[:count])
