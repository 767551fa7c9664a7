import pytest
from tewatch.dashboards.templating import format_value


@pytest.mark.parametrize(("seconds", "shown"), [
    (1.19e-3, "1.19 ms"), (874.4e-6, "874 µs"), (999.6e-6, "1 ms"), (0.99996, "1 s"), (42.0, "42 s"),
    (3.2e-9, "3.2 ns"), (0.0, "0 ns"),
])
def test_seconds_take_the_unit_of_their_rounded_value(seconds: float, shown: str) -> None:
    assert format_value(seconds) == shown


def test_other_units_and_missing_values() -> None:
    assert format_value(0.781, "fraction") == "78.1 %"
    assert format_value(612.34, "TFLOP/s") == "612.3 TFLOP/s"
    assert format_value(None) == "—" and format_value(float("nan")) == "—"
