"""The rendered-page cache is bounded by entries and by the memory its renderings hold."""

from __future__ import annotations

import sys

from tewatch_dashboards.render_cache import RenderCache


def test_the_oldest_renderings_go_once_their_bytes_pass_the_bound():
    page = "x" * 10_000
    cache = RenderCache(size=100, max_bytes=3 * sys.getsizeof(page))
    for key in range(5):
        assert cache.get_or_render(key, lambda: page) is page
    assert len(cache) == 3 and cache.held_bytes == 3 * sys.getsizeof(page)
    renders = []
    cache.get_or_render(4, lambda: renders.append(1) or page)  # kept: not rendered again
    cache.get_or_render(0, lambda: renders.append(1) or page)  # dropped: rendered again
    assert renders == [1]


def test_a_rendering_larger_than_the_bound_is_served_but_not_kept():
    cache = RenderCache(size=100, max_bytes=1_000)
    assert cache.get_or_render("small", lambda: "s") == "s"
    assert cache.get_or_render("big", lambda: "b" * 5_000) == "b" * 5_000
    assert len(cache) == 1 and cache.held_bytes == sys.getsizeof("s")


def test_a_size_of_zero_keeps_nothing():
    cache = RenderCache(size=0)
    assert cache.get_or_render("k", lambda: "v") == "v"
    assert len(cache) == 0 and cache.held_bytes == 0
