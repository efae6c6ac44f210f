"""SLURM hostlist expressions: ``jean-zay-iam[01-34,36-49]`` <-> a list of host names.

The syntax is Slurm's (``scontrol show hostnames`` / ``scontrol show hostlist``): a comma
separated list of names, each with any number of bracketed ranges ``[a-b,c]`` (several brackets
expand as a cartesian product, ``rack[1-2]-n[01-02]``). A range's width is that of its lower
bound as written, so ``[01-10]`` gives ``01 … 10`` and ``[9-10]`` gives ``9, 10``.

``compress`` writes the shortest canonical form: names grouped by the text around their last
number, zero padding kept, runs of consecutive numbers as ``a-b``. It is what ``sbatch
--exclude=`` and ``--nodelist=`` accept (quote it in a shell: ``[..]`` is also a glob).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_HOSTS = 100_000  # an expression expanding to more names than this is refused
LAST_NUMBER_RE = re.compile(r"^(?P<prefix>.*?)(?P<num>\d+)(?P<suffix>\D*)$")
RANGE_RE = re.compile(r"^\s*(?P<lo>\d+)\s*(?:-\s*(?P<hi>\d+)\s*)?$")


def _split_top(expr: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in expr:
        if ch == "[":
            depth += 1
            if depth > 1:
                raise ValueError(f"nested '[' in hostlist {expr!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in hostlist {expr!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ValueError(f"unbalanced '[' in hostlist {expr!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _range_values(body: str, expr: str) -> list[str]:
    """'01-03,7' -> ['01', '02', '03', '7']."""
    out: list[str] = []
    for item in body.split(","):
        m = RANGE_RE.match(item)
        if not m:
            raise ValueError(f"bad range {item!r} in hostlist {expr!r}")
        lo_s, hi_s = m["lo"], m["hi"]
        lo = int(lo_s)
        hi = int(hi_s) if hi_s is not None else lo
        if hi < lo:
            raise ValueError(f"range {item!r} runs backwards in hostlist {expr!r}")
        if hi - lo + 1 > MAX_HOSTS:
            raise ValueError(f"range {item!r} is larger than {MAX_HOSTS} hosts")
        width = len(lo_s)
        out.extend(str(n).zfill(width) for n in range(lo, hi + 1))
    return out


def _expand_one(name: str, expr: str) -> list[str]:
    results = [""]
    pos = 0
    while pos < len(name):
        open_at = name.find("[", pos)
        if open_at < 0:
            results = [r + name[pos:] for r in results]
            break
        close_at = name.find("]", open_at)
        if close_at < 0:
            raise ValueError(f"unbalanced '[' in hostlist {expr!r}")
        literal = name[pos:open_at]
        values = _range_values(name[open_at + 1 : close_at], expr)
        if len(results) * len(values) > MAX_HOSTS:
            raise ValueError(f"hostlist {expr!r} expands to more than {MAX_HOSTS} hosts")
        results = [r + literal + v for r in results for v in values]
        pos = close_at + 1
    return results


def expand(expr: str | Iterable[str]) -> list[str]:
    """Host names of a hostlist expression (or of a list of expressions), in written order,
    each once. Raises ValueError on a malformed expression."""
    exprs = [expr] if isinstance(expr, str) else list(expr)
    seen: dict[str, None] = {}
    for e in exprs:
        for part in _split_top(str(e)):
            for host in _expand_one(part, str(e)):
                seen.setdefault(host, None)
                if len(seen) > MAX_HOSTS:
                    raise ValueError(f"hostlist expands to more than {MAX_HOSTS} hosts")
    return list(seen)


def runs(nums: list[int], width: int | None = None, sep: str = ",") -> str:
    """[1,2,3,7] -> '1-3,7' (numbers zero-padded to ``width``)."""
    def fmt(n: int) -> str:
        return str(n).zfill(width) if width else str(n)

    out: list[str] = []
    start = prev = nums[0]
    for n in nums[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(fmt(start) if start == prev else f"{fmt(start)}-{fmt(prev)}")
        if n is not None:
            start = prev = n
    return sep.join(out)


def compress(hosts: Iterable[str]) -> str:
    """The canonical hostlist expression of ``hosts`` (duplicates dropped, natural order)."""
    groups: dict[tuple[str, str], dict[int | None, set[int]]] = {}
    plain: set[str] = set()
    for h in hosts:
        h = str(h).strip()
        if not h:
            continue
        m = LAST_NUMBER_RE.match(h)
        if not m or "[" in h or "]" in h or "," in h:
            plain.add(h)
            continue
        digits = m["num"]
        # A zero-padded number keeps its width; an unpadded one joins a padded group of its
        # natural width (10 is a valid member of [01-10]).
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else None
        groups.setdefault((m["prefix"], m["suffix"]), {}).setdefault(width, set()).add(int(digits))
    items: list[tuple[tuple[str, str, int], str]] = []
    for (prefix, suffix), by_width in groups.items():
        padded = {w for w in by_width if w is not None}
        unpadded = by_width.get(None, set())
        for n in sorted(unpadded):
            if len(str(n)) in padded:
                by_width[len(str(n))].add(n)
                unpadded.discard(n)
        for width in sorted(by_width, key=lambda w: -1 if w is None else w):
            nums = sorted(by_width[width])
            if not nums:
                continue
            if len(nums) == 1:
                n = nums[0]
                text = f"{prefix}{str(n).zfill(width) if width else n}{suffix}"
            else:
                text = f"{prefix}[{runs(nums, width)}]{suffix}"
            items.append(((prefix, suffix, nums[0]), text))
    items += [((p, "", -1), p) for p in plain]
    return ",".join(text for _, text in sorted(items, key=lambda t: t[0]))


def fold_domains(hosts: Iterable[str]) -> set[str]:
    """The machines of ``hosts`` with a fully qualified name folded onto its short name where
    both are named (``indigo54.cluster.local`` and ``indigo54``: one machine)."""
    names = set(hosts)
    short = {h for h in names if "." not in h}
    return {h.split(".", 1)[0] if "." in h and h.split(".", 1)[0] in short else h for h in names}


def natural_key(host: str) -> tuple[object, ...]:
    """Sort key that orders node9 before node10."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", host))


__all__ = ["compress", "expand", "natural_key"]
