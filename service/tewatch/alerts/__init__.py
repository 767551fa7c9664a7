"""Alerts with a lifecycle, webhook subscriptions, typed events, signing, and the durable outbox worker."""
