"""Bisection over a git history: environments per commit, the halving, the judges, and the loop that
measures, uploads and resumes (`tewatch bisect`, `tewatch backfill`). docs/bisect.md says what each
environment strategy can find."""
