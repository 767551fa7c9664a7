"""`tewatch campaign` and `tewatch demo`: the whole product end to end, the way a GPU runner uses it.

A campaign starts a real service, runs the suites twice (a base state and a deliberately perturbed
head, sent as a pull request against the base), uploads both, runs detection, waits for the signed
`pr.report` webhook and renders the dashboard pages to files. Never imports torch: the suites run in
subprocesses through `tewatch.runner`.
"""
