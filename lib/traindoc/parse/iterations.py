"""Training-iteration lines into the ``iterations`` table.

Megatron-LM / Megatron-DeepSpeed print ``iteration 12695/ 115311 | consumed samples: ... |
lm loss: 2.463556E+00 | ... | TFLOPs: 149.02 |``. Fields are ``key: value`` between ``|``;
``KEYS`` maps each key (lower case, spaces removed, so a line rejoined after wrapping reads the
same) to a column and a scale. A line wrapped mid-field is rejoined by the loader first.
"""

from __future__ import annotations

import re

from .base import LineParser, Row, to_float, to_int

MEGATRON_RE = re.compile(r"\biteration\s+(?P<it>\d+)\s*/\s*(?P<total>\d+)\s*\|(?P<rest>.*)")

# normalised key -> (column, scale)
KEYS: dict[str, tuple[str, float]] = {
    "consumedsamples": ("consumed_samples", 1),
    "consumedtokens": ("consumed_tokens", 1),
    "elapsedtimeperiteration(s)": ("elapsed_s", 1),
    "elapsedtimeperiteration(ms)": ("elapsed_s", 1e-3),
    "learningrate": ("lr", 1),
    "globalbatchsize": ("global_batch_size", 1),
    "lmloss": ("loss", 1),
    "loss": ("loss", 1),
    "gradnorm": ("grad_norm", 1),
    "lossscale": ("loss_scale", 1),
    "numberofskippediterations": ("skipped", 1),
    "numberofnaniterations": ("nan", 1),
    "samplespersecond": ("samples_per_s", 1),
    "tflops": ("tflops", 1),
    "tflopspergpu": ("tflops", 1),
    "throughputpergpu(tflop/s/gpu)": ("tflops", 1),
}
INT_COLUMNS = {"consumed_samples", "consumed_tokens", "global_batch_size", "skipped", "nan"}


def parse_megatron(text: str) -> Row | None:
    """A Megatron/DeepSpeed ``iteration N/ M | key: value | ...`` line."""
    m = MEGATRON_RE.search(text)
    if not m:
        return None
    row: Row = {"iteration": int(m["it"]), "total_iterations": int(m["total"])}
    for field in m["rest"].split("|"):
        key, sep, value = field.rpartition(":")
        if not sep:
            continue
        spec = KEYS.get("".join(key.lower().split()))
        if spec is None:
            continue
        column, scale = spec
        if column in row:
            continue
        if column in INT_COLUMNS:
            v = to_int(value)
            if v is None:
                f = to_float(value)
                v = int(f) if f is not None and f == f else None
        else:
            v = to_float(value)
            if v is not None and scale != 1:
                v *= scale
        row[column] = v
    return row


def megatron_incomplete(text: str) -> bool:
    """An iteration line that a terminal or paste cut before its closing '|'."""
    return MEGATRON_RE.search(text) is not None and not text.rstrip().endswith("|")


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "megatron_iteration",
        "iterations",
        ("iteration",),
        parse_megatron,
        incomplete=megatron_incomplete,
        example="[default7]: iteration 12695/ 115311 | consumed samples: 9841584 | consumed "
        "tokens: 20155564032 | elapsed time per iteration (s): 105.22 | learning rate: "
        "5.969E-05 | global batch size: 2048 | lm loss: 2.463556E+00 | grad norm: 0.174 | num "
        "zeros: 0.0 | number of skipped iterations: 0 | number of nan iterations: 0 | samples "
        "per second: 19.463 | TFLOPs: 149.02 |",
    ),
)
