"""The pages' view models, built from the store's typed rows (tewatch.store.*_reads)."""
