"""The detector's version: stored with every verdict, bumped whenever a change alters what it finds."""

# at most 120 characters: the store's detector_version columns
DETECTOR_VERSION = "tewatch-detect/3.1 (outliers aside; window-z + whole-history split; rank confirm at 1 % FA; A/B rounds mod-t, BH)"
