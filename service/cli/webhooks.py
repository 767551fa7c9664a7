"""`tewatch webhooks`: not written yet."""
