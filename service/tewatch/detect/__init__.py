"""Regression detection: a pure library (numpy/scipy), no database.

changepoint: level changes on a branch's history of one series; compare: a pull request against its
merge base on samples, with FDR control (fdr); environment: labelling shifts that coincide with a new
driver/CUDA/torch/TE stack; ratios: paired ratios as derived series; direction: which way is better.
compare also reads A/B rounds; modes finds two-speed samples, speeds two-speed series (and their share
test); evaluation replays steps on H200 noise (noise) and the shapes of shapes; known_steps makes histories
with known steps; returns finds regressions a series has undone, shared_shifts the shifts most series of
an environment share (and when such a shift has come back or gone). The rules tewatch.pipeline applies to
what it reads: flips (new failures, passing again, fixes, the replay of a branch's verdicts),
change_point_alerts (what change points do to stored ones and their alerts), release_steps (which runs a
release's steps compare); docs/decisions/0010. tewatch.pipeline reads the store, calls these and writes
detections and alerts; this package imports neither the store nor the alerts.
"""

from tewatch.detect.changepoint import ChangePoint, detect_change_points
from tewatch.detect.compare import CompareVerdict, Comparison, compare_sweep
from tewatch.detect.config import ChangePointConfig, CompareConfig
from tewatch.detect.direction import Direction, direction_of, higher_is_better
from tewatch.detect.version import DETECTOR_VERSION

__all__ = [
    "DETECTOR_VERSION",
    "ChangePoint",
    "ChangePointConfig",
    "CompareConfig",
    "CompareVerdict",
    "Comparison",
    "Direction",
    "compare_sweep",
    "detect_change_points",
    "direction_of",
    "higher_is_better",
]
