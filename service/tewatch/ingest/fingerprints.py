"""Identity of cases and series: sha256 of canonical JSON; asv-compatible case ids for sidecar files."""

from __future__ import annotations

import functools
import hashlib
import json
from json.encoder import encode_basestring as encode_json_string
from typing import Any

from tewatch.core.asv_env import is_existing


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


def cached_case_id(case_name: str, params: dict[str, Any]) -> str:
    """case_id, remembered: every upload of a suite names the same cases again.

    The key is repr(params): for values parsed from JSON, equal reprs mean equal JSON (1, True, 1.0 and
    '1' all differ), and repr costs a fraction of the canonical JSON and its hash."""
    key = (case_name, repr(params))
    found = _case_ids.get(key)
    if found is None:
        if len(_case_ids) >= _CASE_IDS_KEPT:
            _case_ids.clear()
        found = _case_ids[key] = case_id(case_name, params)
    return found


_case_ids: dict[tuple[str, str], str] = {}
_CASE_IDS_KEPT = 1 << 15


def case_fingerprint(
    case_name: str, params: dict[str, Any], gpu_model: str, compute_capability: str, environment: str = ""
) -> str:
    """The case on any machine of its GPU model: its machine group (cases.group_key), the fingerprint cases
    had before the machine took part. `environment` is `asv_environment`'s identity: empty for an
    `existing` environment (TE's runners), and then the fingerprint is what it was before environments
    took part."""
    identity = {
        "case": case_name,
        "params": params,
        "gpu_model": gpu_model,
        "compute_capability": compute_capability,
    }
    if environment:
        identity["asv_environment"] = environment
    return digest_of(identity)


def machine_case_fingerprint(group_key: str, machine: str) -> str:
    """A case on one asv machine (machine.json's `machine`, asv's identity of a machine): the fingerprint of
    a case first stored since machines took part. Cases stored before keep theirs (migration 0012)."""
    return digest_of({"case_group": group_key, "machine": machine})


def asv_environment(env_name: str, python: str, requirements: dict[str, str]) -> tuple[str, str]:
    """(identity, name) of the asv environment a results file was measured in; ("", "") for asv's
    `existing` environment, the interpreter a runner has installed, whose name is only its path (the two
    sides of an A/B session run in two of them and measure the same cases)."""
    if is_existing(env_name):
        return "", ""
    return canonical_json({"name": env_name, "python": python, "requirements": requirements}), env_name


@functools.lru_cache(maxsize=1 << 16)
def series_fingerprint(benchmark: str, case_fingerprint: str) -> str:
    """The case fingerprint already covers case name, params, GPU model, capability, asv environment and
    machine.

    Equal to `digest_of({"benchmark": benchmark, "case": case_fingerprint})`, written out because ingest
    computes one per result row: the json module's string encoder without its object machinery."""
    text = '{"benchmark":' + encode_json_string(benchmark) + ',"case":' + encode_json_string(case_fingerprint)
    return sha256_hex(text + "}")
