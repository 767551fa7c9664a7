"""Reading what one `asv run` left behind (results, machine, benchmarks, tewatch sidecar) into the store."""
