"""The branch a run is filed on when its upload names neither a branch nor a pull request."""

DEFAULT_BRANCH = "main"


def branch_of_upload(branch: str | None, pr_number: int | None) -> str | None:
    """The branch given; else, for a run that is not a pull request's, the default branch."""
    if branch:
        return branch
    return None if pr_number is not None else DEFAULT_BRANCH
