"""`tewatch run`: drive `asv run` over the installed Transformer Engine and lay out the sidecar.

Never imports torch: the GPU and software probe and the benchmarks run in subprocesses, in the
benchmark interpreter.
"""
