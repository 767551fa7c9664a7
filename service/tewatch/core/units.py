"""Units whose higher values are better: throughputs, shares and signal-to-noise ratios. Every other unit
(seconds, bytes, counts, error values) is better lower."""

HIGHER_IS_BETTER_UNITS = frozenset({"TFLOP/s", "tokens/s", "fraction", "dB"})
