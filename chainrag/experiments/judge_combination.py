"""The ``combined`` sufficiency judge of the judge-steps probe: a logistic regression over the
other judges' scores (logit P(yes), similarity, overlap), fit on the training probes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from chainrag.experiments.step_probe import StepProbe

FEATURES = ("P(yes)", "similarity", "overlap")
"""The scores the combined judge is fit on."""


def features(probes: Sequence[StepProbe]) -> NDArray[np.float64]:
    """The combined judge's inputs: logit P(yes) (clipped to 1e-6), similarity, overlap."""
    p = np.clip([x.p_yes for x in probes], 1e-6, 1 - 1e-6)
    return np.column_stack(
        [np.log(p / (1 - p)), [x.similarity for x in probes], [x.overlap for x in probes]]
    )


def combination(train: Sequence[StepProbe]) -> Callable[[Sequence[StepProbe]], list[float]]:
    """A logistic regression over :func:`features`, standardised, fit on ``train``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression())
    model.fit(features(train), [p.sufficient for p in train])

    def score(probes: Sequence[StepProbe]) -> list[float]:
        return [float(v) for v in model.predict_proba(features(probes))[:, 1]]

    return score
