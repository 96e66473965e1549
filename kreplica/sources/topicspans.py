"""Where each topic of a snapshot file's `topics` array starts and ends, without parsing it.

Parsing a million-partition snapshot whole holds a Python object tree of about 900 MB at
once; read topic by topic, only a chunk's tree lives at a time. The scan finds the root
object's `topics` array and the span of each element by counting brackets outside strings,
8 MB of the file at a time (numpy, a few passes per block). It answers only for files it
reads without doubt: no backslash anywhere (so no escaped quote), balanced brackets, one
`topics` key at the top level, every element an object, and nothing but commas and blanks
between them; for anything else it says None and the caller parses the file whole.

Pure and deterministic; numpy, imported only where snapshots are read in columns.
"""

from __future__ import annotations

import re

import numpy as np

_BLOCK = 8 << 20
_OPEN_OBJECT, _OPEN_ARRAY, _CLOSE_OBJECT, _CLOSE_ARRAY = map(ord, "{[}]")
_QUOTE = ord('"')
_TOPICS_KEY = re.compile(rb'"topics"[ \t\r\n]*:[ \t\r\n]*\Z')
_ROOT = re.compile(rb"[ \t\r\n]*\{")  # the root is an object
_BLANK = re.compile(rb"[ \t\r\n]*\Z")
_COMMA = re.compile(rb"[ \t\r\n]*,[ \t\r\n]*\Z")


def topic_spans(raw: bytes) -> tuple[int, int, list[tuple[int, int]]] | None:
    """(position of the `topics` array's `[`, of its `]`, each element's [start, end) span),
    or None when the file is not one this scan reads without doubt (see the module doc)."""
    if raw.find(b"\\") >= 0:
        return None
    arrays: list[int] = []  # a `[` opening a value of the root object
    array_ends: list[int] = []  # a `]` closing one
    starts: list[int] = []  # a `{` opening an element of such an array
    ends: list[int] = []  # its `}`
    nested_arrays: list[int] = []  # a `[` as such an element: not a topic
    inside = 0  # in a string at the block's start
    depth = 0
    view = np.frombuffer(raw, dtype=np.uint8)
    for offset in range(0, len(view), _BLOCK):
        block = view[offset : offset + _BLOCK]
        quotes = np.flatnonzero(block == _QUOTE)
        # `[` and `{` differ in bit 0x20 only, as `]` and `}` do, and no other byte becomes
        # one of them with it set: two comparisons find all four
        folded = block | 0x20
        where = np.flatnonzero((folded == _OPEN_OBJECT) | (folded == _CLOSE_OBJECT))
        # a bracket is in a string when an odd number of quotes (and the carry) precede it
        where = where[((np.searchsorted(quotes, where) + inside) & 1) == 0]
        inside = (inside + len(quotes)) & 1
        if not where.size:
            continue
        chars = block[where]
        step = np.where((chars == _OPEN_OBJECT) | (chars == _OPEN_ARRAY), 1, -1)
        after = depth + np.cumsum(step)
        before = after - step
        depth = int(after[-1])
        if int(after.min()) < 0:
            return None
        at = where + offset
        arrays += at[(before == 1) & (chars == _OPEN_ARRAY)].tolist()
        array_ends += at[(after == 1) & (chars == _CLOSE_ARRAY)].tolist()
        starts += at[(before == 2) & (chars == _OPEN_OBJECT)].tolist()
        ends += at[(after == 2) & (chars == _CLOSE_OBJECT)].tolist()
        nested_arrays += at[(before == 2) & (chars == _OPEN_ARRAY)].tolist()
    if inside or depth or not _ROOT.match(raw):
        return None
    named = [a for a in arrays if _TOPICS_KEY.search(raw, max(0, a - 64), a)]
    if len(named) != 1:
        return None
    first = named[0]
    last = next((z for z in array_ends if z > first), None)
    if last is None or any(first < a < last for a in nested_arrays):
        return None
    opened = [s for s in starts if first < s < last]
    closed = [e + 1 for e in ends if first < e < last]
    if len(opened) != len(closed):
        return None
    spans = list(zip(opened, closed, strict=True))
    # between the elements: blanks and one comma each
    gaps = [(first + 1, spans[0][0])] if spans else [(first + 1, last)]
    gaps += [(spans[i][1], spans[i + 1][0]) for i in range(len(spans) - 1)]
    gaps += [(spans[-1][1], last)] if spans else []
    for k, (lo, hi) in enumerate(gaps):
        between = 0 < k < len(spans)
        if not (_COMMA if between else _BLANK).match(raw, lo, hi):
            return None
    return first, last, spans
