"""The outbox worker as the service and `tewatch webhooks deliver` run it: webhooks, and GitHub where the
settings configure it."""
