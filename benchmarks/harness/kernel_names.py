"""Kernel names as CUPTI reports them, normalised so the same kernel keeps its name across runs.

A demangled name carries what a run picks at launch: integer template arguments (vector widths, block
sizes), tile and cluster shapes in cuBLAS, cuBLASLt and CUTLASS names (`128x256x64`, `1x2x1`), hex
addresses, and the `_0`, `_1` ... suffix inductor numbers its Triton kernels with in the order it
generates them. Each is folded (numbers to `N`, addresses to `0x?`, the suffix dropped), and so are
the return type and the argument list, so a name reads as its family: `at::native::
vectorized_elementwise_kernel<N, at::native::FillFunctor<int>, at::detail::Array<char*, N>>`.
Types in template arguments stay: an FP8 and a BF16 instance of a kernel are two kernels.
"""

from __future__ import annotations

import re

MAX_CHARS = 240
FOLDED = "…"

_RETURN_TYPE = re.compile(r"^(?:void|int|float)\s+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
# shapes written into a name: 128x256x64, 64x4, tilesize128x128x64 (a shape or a count beside letters)
_SHAPE = re.compile(r"\d+(?:x\d+)+")
# an integer literal inside template arguments, with C++'s suffixes: 4, 256ul, (cutlass::X)2
_TEMPLATE_INTEGER = re.compile(r"(?<![A-Za-z0-9_])-?\d+(?:u|ul|l|ll|ull|UL|U|L)?(?![A-Za-z0-9_])")
_TRITON_SUFFIX = re.compile(r"^(triton_\w+?)_\d+$")
_SPACED_CLOSE = re.compile(r">\s+>")
# copies and memsets name themselves in words: "Memcpy DtoH (Device -> Pageable)"
_ACTIVITY_PREFIXES = ("Memcpy", "Memset")


def normalise(name: str) -> str:
    """The kernel's family name: stable across runs, readable, at most MAX_CHARS characters."""
    name = name.strip()
    if name.startswith(_ACTIVITY_PREFIXES):
        return name
    name = _HEX.sub("0x?", name)
    name = _RETURN_TYPE.sub("", name)
    name = _strip_arguments(name)
    while _SPACED_CLOSE.search(name):
        name = _SPACED_CLOSE.sub(">>", name)
    name = _fold_template_integers(name)
    name = _SHAPE.sub(lambda m: "x".join("N" for _ in m.group(0).split("x")), name)
    triton = _TRITON_SUFFIX.match(name)
    if triton:
        name = triton.group(1)
    return _shorten(name)


def _strip_arguments(name: str) -> str:
    """Drop the trailing argument list `(...)` that stands outside every template argument."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        c = name[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                head = name[:i]
                # `operator()` and a cast `(int)5` are not argument lists
                if head.endswith("operator") or not head or head[-1] in "<,( ":
                    return name
                return head.rstrip()
    return name


def _fold_template_integers(name: str) -> str:
    out: list[str] = []
    depth, start = 0, 0
    for i, c in enumerate(name):
        if c == "<":
            out.append(_fold(name[start : i + 1], depth))
            depth, start = depth + 1, i + 1
        elif c == ">" and depth > 0:
            out.append(_fold(name[start : i + 1], depth))
            depth, start = depth - 1, i + 1
    out.append(_fold(name[start:], depth))
    return "".join(out)


def _fold(text: str, depth: int) -> str:
    return _TEMPLATE_INTEGER.sub("N", text) if depth > 0 else text


def _shorten(name: str) -> str:
    """A long name (CUTLASS 3's nested device_kernel<GemmUniversal<...>>, PyTorch's lambdas) keeps its
    outer levels."""
    for keep in (2, 1):
        if len(name) <= MAX_CHARS:
            return name
        name = _collapse_below(name, keep)
    return name if len(name) <= MAX_CHARS else name[: MAX_CHARS - 1] + FOLDED


def _collapse_below(name: str, keep: int) -> str:
    """What is nested deeper than `keep` levels of `<...>` and `(...)` becomes `…`."""
    out: list[str] = []
    depth = 0
    for c in name:
        if c in "<(":
            depth += 1
            if depth <= keep + 1:
                out.append(c)
            if depth == keep + 1:
                out.append(FOLDED)
        elif c in ">)":
            if depth <= keep + 1:
                out.append(c)
            depth = max(depth - 1, 0)
        elif depth <= keep:
            out.append(c)
    return "".join(out)
