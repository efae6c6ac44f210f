"""What the analyses ask of an iterations row's text, stated as columns when the row is made
(``schema.frame``, the bulk lane's shapes): a loss shown as NaN, a NaN check that stopped the
run, HF Trainer's stepless dicts, Megatron's counters, an epoch line's wording, the steps of
HF's end-of-run summary. No analysis reads the ``line`` text for them (issue 29, item 2)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

# the columns ``line_facts`` fills (``schema.SCHEMAS["iterations"]`` holds them): a flag is
# True where the line says it and <NA> where it does not, so that a table where no line says
# it holds no storage for it (``schema.compact``)
FACT_COLUMNS: tuple[str, ...] = ("nan_text", "fatal_nan", "hf_dict", "megatron_counters",
                                 "wording", "summary_steps", "summary_steps_err")

# the events whose rows get a ``wording`` and a ``summary_steps`` (``parse.metric_lines``'s
# rows counted by their epoch; ``parse.iterations.parse_hf_dict``'s end-of-run summary)
EPOCH_EVENT = "epoch"
SUMMARY_EVENT = "train_summary"

# a step line or bar that shows its own loss (or grad norm) as NaN/inf: "loss=nan", "loss: inf"
NAN_TEXT_RE = re.compile(
    r"(?:loss|grad[ _-]?norm)['\"]?\s*[:=]\s*['\"]?[-+]?(?:nan|inf)", re.IGNORECASE)
# what every line NAN_TEXT_RE matches holds (a scan that rules most lines out)
_NAN_OR_INF_RE = re.compile(r"nan|inf", re.IGNORECASE)
# a NaN warning that stops the run: every copy after the same step line (each rank's, a
# launcher's repeat) is that one step ("Loss is nan, stopping training", Keras's "Invalid loss,
# terminating training", Megatron-Core's fatal "Rank 3: found NaN in local forward loss
# calculation" raised on every rank)
FATAL_NAN_RE = re.compile(r"\b(?:stopping|terminating) training\b|\bfound (?:nan|inf) in local\b",
                          re.IGNORECASE)
# HF Trainer's log dicts that carry no step ("{'loss': 0.45, …, 'epoch': 1.22}"): the parser
# counts them
HF_STEPLESS_DICT_RE = re.compile(r"\{'(?:loss|eval_loss|eval_runtime|train_runtime)'(?![^{}]*'"
                                 r"(?:step|global_step)[^']*':)[^{}]*\}")
# a step number printed before the dict is its step (text-generation-webui's training
# callback: "Step:    683 {'loss': 2.43, 'grad_norm': inf, …}"): the dict is no stepless one
STEP_BEFORE_RE = re.compile(r"\b(?:step|iteration|iter)\s*+[:=#]?\s*+\d+", re.IGNORECASE)
# Megatron's train line with its counters ("iteration 10/ … | number of nan iterations: 0 |"):
# a line that counts NaN iterations yet prints no loss had every step of its interval fail
MEGATRON_COUNTERS_RE = re.compile(r"\biteration\s+\d+\s*/.*number of nan iterations")
_MEGATRON_NEEDLE = "number of nan iterations"
# HF's end-of-run summary: its steps are ``train_runtime`` x ``train_steps_per_second``
HF_SUMMARY_STEPS_RE = re.compile(r"'train_runtime':\s*'?(?P<rt>[\d.]+)'?.*?"
                                 r"'train_steps_per_second':\s*'?(?P<sps>[\d.]+)")
# the wording of a line: its digits (counters, values, the logger's time) stood for by one mark
WORDING_DIGITS_RE = re.compile(r"\d+(?:[.,]\d+)*")


def wording_id(text: str) -> int:
    """A number for the wording of ``text`` (its digits stood for by one mark): equal for
    lines that differ only in their numbers, the same in every process."""
    words = WORDING_DIGITS_RE.sub("#", text).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(words, digest_size=8).digest(), "little", signed=True)


def summary_steps_range(text: str) -> tuple[float, float] | None:
    """The steps an HF end-of-run summary line accounts for and their rounding error: the
    rate is printed to a few decimals (11174.986 s at 0.081 steps/s is 905 +- 5.6 steps)."""
    m = HF_SUMMARY_STEPS_RE.search(text)
    if m is None:
        return None
    try:
        runtime, rate = float(m["rt"]), float(m["sps"])
    except ValueError:  # ("1.2.3")
        return None
    return runtime * rate, runtime * 0.5 * 10.0 ** -len(m["sps"].partition(".")[2])


def line_facts(text: Any, event: Any = None) -> dict[str, Any]:
    """The ``FACT_COLUMNS`` an iterations row of the line ``text`` (with its ``event``) holds;
    a column the line does not fill is absent."""
    if not isinstance(text, str):
        return {}
    out: dict[str, Any] = {}
    if _NAN_OR_INF_RE.search(text) and NAN_TEXT_RE.search(text):
        out["nan_text"] = True
    if FATAL_NAN_RE.search(text):
        out["fatal_nan"] = True
    if "{'" in text and (m := HF_STEPLESS_DICT_RE.search(text)) is not None \
            and STEP_BEFORE_RE.search(text, 0, m.start()) is None:
        out["hf_dict"] = True
    if _MEGATRON_NEEDLE in text and MEGATRON_COUNTERS_RE.search(text):
        out["megatron_counters"] = True
    if event == EPOCH_EVENT:
        out["wording"] = wording_id(text)
    elif event == SUMMARY_EVENT:
        got = summary_steps_range(text)
        if got is not None:
            out["summary_steps"], out["summary_steps_err"] = got
    return out
