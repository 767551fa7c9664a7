"""The series chart of a byte or error metric without a server: the axis it is drawn on (auto), the
tolerance drawn in the SVG, bytes in binary prefixes."""

from __future__ import annotations

import dataclasses

import pytest

from tests.dashboards.test_plots import HEADER, chart_of, point
from tewatch_dashboards.plots import display_scale, render_series_svg, tolerance_segments
from tewatch_dashboards.templating import format_byte_change, format_error, format_value

REL_L2 = dataclasses.replace(HEADER, benchmark="linear.LinearFwdBwd.output_vs_fp32_rel_l2", unit="rel error")
SQNR = dataclasses.replace(HEADER, benchmark="linear.LinearFwdBwd.output_vs_fp32_sqnr_db", unit="dB")
BYTES = dataclasses.replace(HEADER, benchmark="gemm.Gemm.setup_allocated_bytes", unit="bytes")
MIB = 2**20


def chart(header, values, tolerance=()):
    drawn = chart_of([point(i, v) for i, v in enumerate(values)])
    drawn.header = header
    drawn.tolerance = list(tolerance)
    return drawn


@pytest.mark.parametrize(
    ("header", "values", "tolerance", "scale"),
    [
        (REL_L2, [0.0375, 0.0375, 0.0427], [(0, 0.1)], "linear"),  # 0.0375 .. 0.1 spans no decade
        (REL_L2, [0.0375, 0.0003], [], "log"),  # a fix that took the error down 100 times
        (REL_L2, [0.0375, 0.0], [], "linear"),  # a 0 has no place on a log axis
        (REL_L2, [0.005], [(0, 0.1)], "log"),  # a value far below its tolerance
        (SQNR, [300.0, 24.0], [], "linear"),  # dB are logarithmic already
        (HEADER, [1e-6, 1.0], [], "linear"),  # timings keep the linear axis unless asked
    ],
)
def test_auto_puts_error_values_spanning_a_decade_on_a_log_axis(header, values, tolerance, scale):
    drawn = chart(header, values, tolerance)
    assert drawn.scale("auto") == scale
    assert drawn.scale("linear") == "linear" and drawn.scale("log") == "log"


def test_the_svg_draws_the_tolerance_and_a_byte_axis_in_mib():
    svg = render_series_svg(chart(REL_L2, [0.0375, 0.0375, 0.0427], [(0, 0.1), (1, 0.1), (2, 0.1)]))
    assert "tolerance of its check" in svg
    assert "tolerance of its check" not in render_series_svg(chart(REL_L2, [0.0375, 0.0427]))
    assert ">MiB<" in render_series_svg(chart(BYTES, [144 * MIB, 208 * MIB])).replace("</text>", "<")


def test_a_tolerance_that_changes_is_drawn_per_stretch():
    assert tolerance_segments([(0, 0.1), (1, 0.1), (2, 0.05), (4, 0.05), (5, 0.1)]) == [
        (0, 1, 0.1),
        (2, 4, 0.05),
        (5, 5, 0.1),
    ]
    assert tolerance_segments([]) == []


def test_byte_units_read_in_binary_prefixes():
    assert display_scale("bytes", [144 * MIB, 208 * MIB]) == (1 / MIB, "MiB")
    assert display_scale("bytes", [3 * 2**30]) == (1 / 2**30, "GiB")
    assert display_scale("bytes/step", [0.0, 1024.0]) == (1 / 1024, "KiB/step")
    assert [format_value(v, "bytes") for v in (0, 512, 1000, MIB, 796 * MIB, 1023.9 * MIB, 2**30)] == [
        "0 B",
        "512 B",
        "0.977 KiB",
        "1 MiB",
        "796 MiB",
        "1 GiB",
        "1 GiB",
    ]
    assert format_value(1048576.0, "bytes/step") == "1 MiB/step"
    assert format_byte_change(64 * MIB, 0.441) == "+64 MiB (+44.1 %)"
    assert format_byte_change(-64 * MIB, None) == "-64 MiB"
    assert format_byte_change(0.0, 0.0) == "0 B"
    assert format_byte_change(None, None) == format_byte_change(float("nan"), None) == "—"
    assert format_error(24.0953, "dB") == "24.1 dB" and format_error(0.0426722, "rel error") == "0.04267"
    assert format_error(None) == "—"
