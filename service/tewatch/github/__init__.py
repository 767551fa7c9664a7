"""GitHub pull requests: each `pr.report` becomes one comment per pull request (created, then updated in
place) and a commit status on the head commit, sent from the webhook outbox through githubkit."""
