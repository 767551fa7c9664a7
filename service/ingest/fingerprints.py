"""Identity of cases and series: sha256 of canonical JSON; asv-compatible case ids for sidecar files."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def digest_of(value: Any) -> str:
    return sha256_hex(canonical_json(value))


def case_id(case_name: str, params: dict[str, Any]) -> str:
    """`<module.Class>-<sha1 of canonical params JSON, first 12 hex>` as docs/records.md defines it."""
    params_json = json.dumps(params, sort_keys=True, separators=(",", ":"))
    return f"{case_name}-{hashlib.sha1(params_json.encode('utf-8')).hexdigest()[:12]}"


def case_fingerprint(case_name: str, params: dict[str, Any], gpu_model: str, compute_capability: str) -> str:
    return digest_of(
        {
            "case": case_name,
            "params": params,
            "gpu_model": gpu_model,
            "compute_capability": compute_capability,
        }
    )


def series_fingerprint(benchmark: str, case_fingerprint: str) -> str:
    """The case fingerprint already covers case name, params, GPU model and capability."""
    return digest_of({"benchmark": benchmark, "case": case_fingerprint})
