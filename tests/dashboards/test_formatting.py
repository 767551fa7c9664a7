import pytest

from tewatch_dashboards.series_chart import gpu_summary
from tewatch_dashboards.templating import breakable, format_value


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (1.19e-3, "1.19 ms"),
        (874.4e-6, "874 µs"),
        (999.6e-6, "1 ms"),
        (0.99996, "1 s"),
        (42.0, "42 s"),
        (3.2e-9, "3.2 ns"),
        (0.0, "0 ns"),
    ],
)
def test_seconds_take_the_unit_of_their_rounded_value(seconds: float, shown: str) -> None:
    assert format_value(seconds) == shown


def test_other_units_and_missing_values() -> None:
    assert format_value(0.781, "fraction") == "78.1 %"
    assert format_value(612.34, "TFLOP/s") == "612.3 TFLOP/s"
    assert format_value(None) == "—" and format_value(float("nan")) == "—"


@pytest.mark.parametrize(
    ("name", "html"),
    [
        ("ShapeContractMismatch", "Shape<wbr>Contract<wbr>Mismatch"),
        ("RecursionError", "Recursion<wbr>Error"),
        ("HTTPError", "HTTP<wbr>Error"),
        ("NVFP4TensorError", "NVFP4<wbr>Tensor<wbr>Error"),
        ("torch.exc.Unsupported", "torch.<wbr>exc.<wbr>Unsupported"),
        ("oom", "oom"),
        ("", ""),
        ("<b>BadName</b>", "&lt;b&gt;Bad<wbr>Name&lt;/b&gt;"),
    ],
)
def test_identifiers_may_wrap_only_between_words(name: str, html: str) -> None:
    assert str(breakable(name)) == html


def test_gpu_state_keeps_only_what_was_recorded() -> None:
    empty = {
        "sm_clock_mhz": [],
        "mem_clock_mhz": [],
        "power_w": [],
        "temperature_c": [],
        "throttle_reasons": [],
    }
    assert gpu_summary(empty) == {} and gpu_summary({}) == {}
    recorded = {
        "sm_clock_mhz": [1980, 1515],
        "power_w": [162.2, 228.3],
        "throttle_reasons": ["none", "sw_power_cap"],
    }
    assert gpu_summary(recorded) == {
        "sm_clock_mhz": [1515, 1980],
        "power_w": [162.2, 228.3],
        "throttle_reasons": ["none", "sw_power_cap"],
    }


def test_a_case_is_shown_by_its_event_time_before_its_kernel_time_and_the_hosts_share():
    from tewatch.store.reads.case_reads import primary_rank

    names = {
        "linear.LinearFwdBwd.host_overhead_seconds": "seconds",
        "linear.LinearFwdBwd.tflops": "TFLOP/s",
        "linear.LinearFwdBwd.kernel_seconds": "seconds",
        "linear.LinearFwdBwd.compile_seconds": "seconds",
        "linear.LinearFwdBwd.track_seconds": "seconds",
    }
    ordered = sorted(names, key=lambda name: primary_rank(name, names[name]))
    assert ordered[:3] == [
        "linear.LinearFwdBwd.track_seconds",
        "linear.LinearFwdBwd.kernel_seconds",
        "linear.LinearFwdBwd.tflops",
    ]


def test_a_commit_is_named_with_its_te_version_and_a_stand_in_says_it_is_one() -> None:
    from tewatch.runner.commit import version_hash
    from tewatch_dashboards.templating import commit_text

    assert commit_text("b447576a" * 5, "2.19.0") == "2.19.0 · b447576"
    assert commit_text(version_hash("2.20.2"), "2.20.2") == "TE 2.20.2 (no commit)"
    assert commit_text("0123456789abcdef" * 2, "") == "0123456789"
