"""HMAC-SHA256 signatures in GitHub's scheme: `X-Tewatch-Signature-256: sha256=<hex of HMAC(secret, body)>`."""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-Tewatch-Signature-256"
DELIVERY_HEADER = "X-Tewatch-Delivery"
EVENT_HEADER = "X-Tewatch-Event"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, signature: str | None) -> bool:
    """What a receiver does: recompute and compare in constant time."""
    return signature is not None and hmac.compare_digest(sign(secret, body), signature)
