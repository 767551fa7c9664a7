"""Uploaded text in the PR comment's Markdown is inert: rendered by a CommonMark parser with GFM tables
(markdown-it-py), it keeps its table cell, makes no HTML, emphasis or link, and leaves nothing GitHub would
turn into a mention, an issue or commit reference or an autolink (GitHub looks for none inside code)."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from tewatch.alerts.markdown_text import ZERO_WIDTH_SPACE, code, defang, escape_cell

HOSTILE = [
    "@nvidia/te-maintainers please look",
    "**all tests pass** _approved_ ~~broken~~",
    "see https://evil.example/x and www.evil.example and mail me@evil.example",
    "fixes NVIDIA/TransformerEngine#1234, #99 and GH-7; NVIDIA/TransformerEngine@abcdef1",
    "<img src=x onerror=alert(1)> &#64;someone &lt;b&gt;",
    "param a\\|b and c\\\\|d | e",
    "[click](https://evil.example) ![img](https://evil.example/i.png)",
    "math $\\x$ and `code` and ```fence```",
]
# what GitHub acts on in the text the Markdown renders to
LIVE = [
    re.compile(r"(?<![\w`])@[A-Za-z0-9]"),  # a mention
    re.compile(r"#\d"),  # an issue reference, local or cross-repository
    re.compile(r"\bGH-\d", re.IGNORECASE),
    re.compile(r"[\w.-]+/[\w.-]+@[0-9a-f]{7}"),  # a commit reference
    re.compile(r"https?://|www\.", re.IGNORECASE),  # an autolink
]

renderer = MarkdownIt("gfm-like", {"linkify": False})


def table_cells(cell: str) -> list[str]:
    """The cells of a one-row table whose middle cell is `cell`, as rendered HTML."""
    html = renderer.render(f"| a | b | c |\n|---|---|---|\n| x | {cell} | y |\n")
    body = html.split("<tbody>")[1]
    return re.findall(r"<td>(.*?)</td>", body, re.DOTALL)


def rendered_text(cell_html: str) -> str:
    """The text a cell shows, entities decoded, as GitHub's filters see it."""
    from html import unescape

    return unescape(re.sub(r"<[^>]+>", "", cell_html))


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("escape", [escape_cell, code])
def test_uploaded_text_stays_in_its_cell_and_nothing_in_it_is_live(text, escape):
    cells = table_cells(escape(text))
    assert len(cells) == 3 and cells[0] == "x" and cells[2] == "y", cells
    html = cells[1]
    assert not re.search(r"<(?!/?code>)", html), html  # no element but a code span
    shown = rendered_text(re.sub(r"<code>.*?</code>", " ", html))  # GitHub finds nothing inside code
    if escape is code:
        assert html.startswith("<code>") and html.endswith("</code>") and shown == " ", html
    for live in LIVE:
        assert not live.search(shown), (live.pattern, shown)


@pytest.mark.parametrize("text", HOSTILE)
def test_prose_reads_as_written_but_for_zero_width_spaces(text):
    shown = rendered_text(table_cells(escape_cell(text))[1]).replace(ZERO_WIDTH_SPACE, "")
    assert shown == " ".join(text.split())


def test_a_backslash_before_a_pipe_is_kept_in_prose():
    assert rendered_text(table_cells(escape_cell("a\\|b"))[1]) == "a\\|b"


def test_a_code_span_holds_the_text_with_backticks_as_quotes():
    assert rendered_text(table_cells(code("x = `y` | z"))[1]) == "x = 'y' | z"


def test_defang_breaks_only_what_github_links():
    assert defang("plain text, 3.5 ms") == "plain text, 3.5 ms"
    assert defang("@a #1") == f"@{ZERO_WIDTH_SPACE}a #{ZERO_WIDTH_SPACE}1"
