"""The registry view of the fast engine: what it derives from the parser registries (needles,
each line parser's and block parser's needle mask, the scanner of those needles), and whether
the fast engine can read with these block parsers at all (``fast_engine_status``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..parse import BLOCK_PARSERS, LINE_PARSERS
from .scanners import make_scanner, scanner_kind


def block_needles(factories: Sequence[Any] = BLOCK_PARSERS) -> tuple[tuple[str, ...], list[str]]:
    """The block parsers' start needles, and the parsers that declare none."""
    out: list[str] = []
    missing: list[str] = []
    for factory in factories:
        if not factory.needles:
            missing.append(f"{factory.__module__}.{factory.__qualname__}")
        else:
            out.extend(factory.needles)
    return tuple(out), missing


def fast_engine_status(factories: Sequence[Any] = BLOCK_PARSERS) -> tuple[bool, str]:
    """Whether ``engine="auto"`` can use this engine with these block parsers, and which
    scanner (or why not)."""
    _, missing = block_needles(factories)
    if missing:
        return False, ("block parser(s) without start needles: " + ", ".join(missing))
    return True, scanner_kind()


def all_needles(line_parsers: Sequence[Any] = LINE_PARSERS,
                factories: Sequence[Any] = BLOCK_PARSERS) -> list[str]:
    """Every substring that makes a line worth the per-line path, each once, in order."""
    seen: dict[str, None] = {}
    for p in line_parsers:
        for n in p.needles:
            seen.setdefault(n, None)
    for n in block_needles(factories)[0]:
        seen.setdefault(n, None)
    return [n for n in seen if n]



class Registry:
    """What the fast engine derives from the parser registries: needles, masks, scanner
    (``kind``: ``scanners.scanner_kind``'s). One per load: building it costs about a
    millisecond (Hyperscan's databases come from the disk cache)."""

    def __init__(self, kind: str | None = None, line_parsers: Sequence[Any] = LINE_PARSERS,
                 factories: Sequence[Any] = BLOCK_PARSERS) -> None:
        kind = scanner_kind(kind)
        self.needles = all_needles(line_parsers, factories)
        index = {n: k for k, n in enumerate(self.needles)}
        bneedles = [n.encode("utf-8") for n in self.needles]
        self.scanner = make_scanner(kind, bneedles)
        self.kind = kind
        # per line parser: the bit mask of its needles (a line's mask says which can match)
        self.parser_masks = [(p, sum(1 << index[n] for n in p.needles if n in index))
                             for p in line_parsers]
        self.incomplete_masks = [(p, m) for p, m in self.parser_masks if p.incomplete]
        # per block parser (by its index in ``factories``): the bit mask of its needles
        self.block_masks = [(i, sum(1 << index[n] for n in f.needles if n in index))
                            for i, f in enumerate(factories)]
        self._parsers: dict[int, tuple[Any, ...]] = {}
        self._incomplete: dict[int, tuple[Any, ...]] = {}
        self._blocks: dict[int, tuple[int, ...]] = {}

    def parsers(self, mask: int) -> tuple[Any, ...]:
        """Line parsers (registry order) that have a needle in ``mask``."""
        got = self._parsers.get(mask)
        if got is None:
            got = self._parsers[mask] = tuple(p for p, m in self.parser_masks if m & mask)
        return got

    def blocks(self, mask: int) -> tuple[int, ...]:
        """Indices of the block parsers that have a needle in ``mask``."""
        got = self._blocks.get(mask)
        if got is None:
            got = self._blocks[mask] = tuple(i for i, m in self.block_masks if m & mask)
        return got

    def incomplete(self, mask: int) -> tuple[Any, ...]:
        """Line parsers with ``incomplete`` (registry order) that have a needle in ``mask``."""
        got = self._incomplete.get(mask)
        if got is None:
            got = self._incomplete[mask] = tuple(
                p for p, m in self.incomplete_masks if m & mask)
        return got
