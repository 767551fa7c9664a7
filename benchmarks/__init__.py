"""asv suites for Transformer Engine's low-precision paths (quantize, RHT, GEMM, Linear, contracts).

Modules import torch and Transformer Engine lazily (in `setup`), so discovery and skipped cases stay
cheap and no CUDA work happens at import.
"""
