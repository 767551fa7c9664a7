"""The detector's version: stored with every verdict, bumped whenever a change alters what it finds."""

DETECTOR_VERSION = "tewatch-detect/1.0 (winsorized-window-z + segment-confirm; hl-mannwhitney-bh)"
