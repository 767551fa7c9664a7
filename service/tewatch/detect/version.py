"""The detector's version: stored with every verdict, bumped whenever a change alters what it finds."""

# at most 120 characters: the store's detector_version columns
DETECTOR_VERSION = "tewatch-detect/3.4 (short levels kept; segments split again; rank or 2-speed share 1% FA; A/B mod-t/backend, F, BH)"
