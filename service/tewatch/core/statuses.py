"""The verdict vocabulary the service shares (docs/records.md): the statuses, which of them fail, and
their order of severity. No dependencies, so the runner (which runs without the service's packages)
and the store, detection and pages all read the same words. The suites keep their own copy in
benchmarks/harness/records.py: they never import the service."""

VERDICT_STATUSES = ("pass", "fail_accuracy", "error", "unsupported", "timeout", "oom")
# a correctness failure; `unsupported` (a capability gate) never is one
FAILING_STATUSES = frozenset({"fail_accuracy", "error", "timeout", "oom"})
# a case's verdict is its most severe check
SEVERITY = {"pass": 0, "unsupported": 1, "fail_accuracy": 2, "timeout": 3, "oom": 3, "error": 4}
