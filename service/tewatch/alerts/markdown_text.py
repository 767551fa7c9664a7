"""Text from uploads (case and benchmark names, error messages, GPU models, units) in GitHub Markdown, as
inert text: it cannot break a table, open HTML, format itself, or make GitHub link or notify anything.

GitHub finds @mentions, issue references (`#12`, `owner/repo#12`, `GH-12`) and commit references
(`owner/repo@sha`) in the text Markdown renders to, after escapes are undone, and autolinks `http://`,
`https://`, `www.` and e-mail addresses. So escaping Markdown is not enough: prose gets a zero-width space
where each of those would start (`defang`), and names go into code spans, where GitHub finds nothing.

In a table row a pipe ends the cell unless a backslash precedes it, and a backslash before the pipe's
own backslash is an escape of its own in some renderers: every backslash is doubled before any pipe is
escaped, so `a\\|b` stays in its cell whichever way a renderer reads it.
"""

from __future__ import annotations

import re

ZERO_WIDTH_SPACE = "\u200b"
# Markdown's inline punctuation (emphasis, strike-through, links, images, math, code, the table's pipe)
# is backslash-escaped; HTML's, as entities
_MARKUP = "\\`*_[]~$|"
_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_PIPE = re.compile(r"(\\*)\|")  # a pipe and the backslashes before it
_LIVE = re.compile(r"[@#]|://|(?i:www)\.|(?i:\bgh)-(?=\d)")


def defang(text: str) -> str:
    """`text` with a zero-width space after each `@`, `#`, `GH-`, and inside `://` and `www.`: still
    readable, no longer a mention, a reference or an autolink."""
    return _LIVE.sub(_break, text)


def _break(match: re.Match[str]) -> str:
    found = match.group()
    return found[0] + ZERO_WIDTH_SPACE + found[1:] if len(found) > 1 else found + ZERO_WIDTH_SPACE


def escape_cell(text: object) -> str:
    """Uploaded text as literal prose in a table cell or a heading: one line, every Markdown punctuation
    mark escaped, defanged."""
    line = " ".join(str(text).split())
    escaped = "".join("\\" + c if c in _MARKUP else c for c in line)
    return defang(escaped.translate(_ENTITIES))


def code(text: object) -> str:
    """Uploaded text as a code span in a table cell: one line, literal; a backtick becomes `'` (a span
    cannot hold its own delimiter in every renderer) and pipes are escaped for the table."""
    line = " ".join(str(text).split()).replace("`", "'")
    return "`" + _PIPE.sub(lambda m: m.group(1) * 2 + "\\|", line) + "`"
