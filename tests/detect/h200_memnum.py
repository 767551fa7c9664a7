"""The kept H200 memory and numerics runs (tests/fixtures/h200-memnum-*) as values per case and metric."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CAMPAIGN = FIXTURES / "h200-memnum-ab"  # base, head and A/A arm, one round each
ROUNDS = FIXTURES / "h200-memnum-rounds"  # the same arms, rounds 1 and 2 of an interrupted campaign

Key = tuple[str, str]  # (case, canonical params)


def _records(folder: Path) -> dict[Key, dict]:
    found = {}
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        found[(record["case"], json.dumps(record["params"], sort_keys=True))] = record
    return found


def campaign_records(arm: str) -> dict[Key, dict]:
    [cases] = CAMPAIGN.glob(f"{arm}-results/*/*.tewatch/cases")
    return _records(cases)


def rounds_records(arm: str) -> dict[Key, dict]:
    return _records(ROUNDS / arm)


def one_value_metrics(record: dict) -> dict[str, list[float]]:
    """metric -> its value in every round the record kept (round 1's first)."""
    rounds = record.get("round_values", {})
    return {
        name: rounds.get(name, [metric["value"]])
        for name, metric in record["metrics"].items()
        if "samples" not in metric
    }


def values_by_arm(arms: tuple[str, ...]) -> dict[Key, dict[str, dict[str, list[float]]]]:
    """case -> metric -> arm -> values, over both kept campaigns (arm `base` of the campaign and of the
    rounds are the same code; the rounds' base kept one round: its second ran other code)."""
    table: dict[Key, dict[str, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(dict))
    for arm in arms:
        for source in (campaign_records(arm), rounds_records(arm)):
            for key, record in source.items():
                for metric, values in one_value_metrics(record).items():
                    table[key][metric].setdefault(arm, []).extend(values)
    return table


def family(key: Key) -> str:
    """The suite a case belongs to: gemm, linear, quantize, offload, checks, contracts, rht."""
    return key[0].split(".")[0]
