"""What a detection did (counted as it stores), and how much of it one write transaction stores."""

from __future__ import annotations

from dataclasses import dataclass, field

WRITE_BATCH = 200  # series (or cases) stored per write transaction


@dataclass
class DetectSummary:
    series: int = 0
    change_points: int = 0
    new_regressions: int = 0
    new_improvements: int = 0
    environment_shifts: int = 0
    withdrawn: int = 0
    returned: int = 0  # regression alerts resolved because their series came back
    environment_alerts: int = 0  # shifts shared by most series of an environment, one alert each
    correctness_alerts: int = 0
    kernel_alerts: int = 0  # cases whose kernels changed on the branch (docs/kernels.md)
    resolved_alerts: int = 0
    comparisons: dict[str, int] = field(default_factory=dict)
    events: int = 0
