"""tewatch: benchmark and regression tracking for Transformer Engine's low-precision paths."""

__version__ = "0.1.0"
