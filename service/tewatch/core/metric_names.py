"""The metrics of a case record that detection treats apart, by the names the suites record them under
(benchmarks/harness; docs/records.md). The suites may not import the service: tests/core/test_metric_names.py
checks that they record every name here."""

TRACK_SECONDS = "track_seconds"  # the call's own (event) time, asv's benchmark
KERNEL_SECONDS = "kernel_seconds"
HOST_OVERHEAD_SECONDS = "host_overhead_seconds"  # event time minus kernel time
CPU_SECONDS = "cpu_seconds"
COMPILE_SECONDS = "compile_seconds"
CAPTURE_SECONDS = "capture_seconds"
GRAPH_BREAKS = "graph_breaks"
SHARE_OF_CEILING = "share_of_ceiling"

# seconds that are no measure of a case's call: the host's CPU time, compile and capture, event minus kernel
NOT_CALL_TIMES = frozenset({CPU_SECONDS, COMPILE_SECONDS, CAPTURE_SECONDS, HOST_OVERHEAD_SECONDS})
# timings of the host or the compiler: kernels do not explain them
NOT_ATTRIBUTED = frozenset({COMPILE_SECONDS, CPU_SECONDS, HOST_OVERHEAD_SECONDS})
# record metrics with samples of their own, appended round by round in A/B rounds
SAMPLED_METRICS = (KERNEL_SECONDS,)

SUITE_METRICS = (
    TRACK_SECONDS,
    KERNEL_SECONDS,
    HOST_OVERHEAD_SECONDS,
    CPU_SECONDS,
    COMPILE_SECONDS,
    CAPTURE_SECONDS,
    GRAPH_BREAKS,
    SHARE_OF_CEILING,
)
