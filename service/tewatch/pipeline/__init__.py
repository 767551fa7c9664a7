"""Detection against the store: what runs after an upload (correctness flips, then the pull request's
comparison or the branch's change points), `tewatch detect`, and the alerts, events and reports they
write, one transaction per call. The statistics themselves are tewatch.detect (numpy and scipy only)."""
