"""Training-step lines into the ``iterations`` table.

Each format below is one entry of ``PARSERS`` (or, for HF Trainer, a block parser that counts
the dicts of its stream). The wording of each was checked against its source and against real
pastes collected in ``tests/data/wordings/iteration_lines.txt``.

- Megatron-LM / Megatron-DeepSpeed / GPT-NeoX (``megatron/training.py`` ``training_log``):
  ``iteration 12695/ 115311 | consumed samples: ... | lm loss: 2.463556E+00 | ... | TFLOPs:
  149.02 |``. Fields are ``key: value`` between ``|`` (before 2021, and in DeepSpeedExamples'
  copy, ``key value`` without the colon: ``learning rate 1.500E-04 | lm loss 7.1E+00 |``); ``KEYS`` maps each key (lower case, spaces
  removed, so a line rejoined after wrapping reads the same) to a column and a scale. A line
  wrapped mid-field is rejoined by the loader first. GPT-NeoX puts ``samples/sec: X |`` before
  the iteration; it is read too.
- Megatron's evaluation line ``validation loss at iteration 1000 | lm loss value: ... |``
  (BigScience's fork writes ``valid loss at iteration``): an ``event="eval"`` row.
- DeepSpeed pipeline engine (``deepspeed/runtime/pipe/engine.py`` ``train_batch``):
  ``steps: 30 loss: 10.7133 iter time (s): 0.283 samples/sec: 226.457`` (extra
  ``<name> loss: v`` fields may sit between loss and iter time).
- DeepSpeed's engine every ``steps_per_print``: ``[Rank 0] step=10, skipped=10, lr=[0.0001],
  mom=[(0.9, 0.999)]``, a cumulative skipped counter (``DeepSpeedStepParser``).
- DeepSpeed's ThroughputTimer (``deepspeed/utils/timer.py``): ``epoch=0/micro_step=6/
  global_step=6, RunningAvgSamplesPerSec=7.92, CurrSamplesPerSec=6.86, MemAllocated=...``
  (older: ``0/40, SamplesPerSec=83.48``).
- torchtitan (``torchtitan/components/metrics.py``) and other ``step: N  key: value`` loggers:
  ``step: 200  loss:  6.1384  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu:
  34.29%`` (ANSI colour is stripped by the loader; ``tps`` is tokens/s per device).
- ColBERT's ``print_message(batch_idx, train_loss)``: ``[Mar 29, 16:27:48] 473 5.8459``
  (a month's name and day, no year: the reader dates it with the stream's year).
- torch-rnn and its forks: ``Epoch 1.04 / 50, i = 8 / 10050, loss = 2.992056`` (a
  ``time`` a fork appends with no unit is not read).
- nanoGPT: ``iter 1631: loss 4.0863, time 561.94ms`` (newer: ``…, mfu 30.12%``; ``-100.00%``
  before the first measurement is no value).
- Lightning's progress bar with the epoch in front and a postfix: ``Epoch 0:  25%|██▌ | 8/32
  [00:00<00:00, 49.28it/s, loss=0.87, v_num=15]``; the iteration is ``epoch * total + n``.
- HF Trainer dict lines (``ProgressCallback.on_log`` writes ``str(logs)``): ``{'loss': 1.52,
  'grad_norm': 82.9, 'learning_rate': 1.4e-06, 'epoch': 0.01}``, eval dicts ``{'eval_loss':
  ...}`` (``event="eval"``) and the end-of-run ``{'train_runtime': ..., 'train_samples_per_second':
  ...}`` (``event="train_summary"``). These dicts carry no step: ``iteration`` is ``step`` when a
  dict has one, else the running count of training dicts in that stream (a count of logging
  events, ``logging_steps`` optimizer steps apart) — or the count of the tqdm bar redrawn
  just before the dict on its line (h2ogpt#86: ``^M  4%|▎ | 1322/36234 [11:40<…]^M{'loss':
  1.0574, …}``; ms-swift's dicts name the same step as the bar before them); <NA> before the
  first training dict (a run whose only dict is the end-of-run summary logged no step).

- mmengine / mmcv runners (OpenMMLab, xtuner): ``Epoch(train) [1][240/735]  lr: 1.9813e-04  eta:
  2:44:49  time: 2.8874  data_time: 0.0042  memory: 10762  loss: 2.5128  grad_norm: nan``
  (mmcv: ``Epoch [7][5850/32025]\tlr: 7.146e-04, eta: …, time: 0.775, …, loss: 31.4201,
  grad_norm: 3637.0292``; iteration-based: ``Iter(train) [  100/10000]``): the iteration is
  ``(epoch - 1) * iterations_per_epoch + n``; ``time`` is seconds per iteration.
- fp16 loss-scale overflows (a skipped optimizer step): DeepSpeed ``[deepspeed] OVERFLOW! Rank 0
  Skipping step. Attempted loss scale: 65536, reducing to 32768`` (``[deepscale]`` in old
  versions; ``…, but hysteresis is 2. Reducing hysteresis to 1``; ``Reducing loss scale to
  32768.0``), ``Grad overflow on iteration 12``, apex ``Gradient overflow.  Skipping step, loss
  scaler 0 reducing loss scale to 32768.0``: a row with ``skipped=1``; only ``Grad overflow on
  iteration N`` numbers the step (the runbook places the others after the last step logged
  before them).
- NaN/inf warnings that name no step (``Loss is nan, stopping training``, TF's ``Model
  diverged with loss = NaN.``): a row with ``nan=1`` and no iteration, placed by the runbook
  like an overflow.

``event`` is <NA> for a training step; rows with an event are not steps (their ``loss`` stays
<NA>: an eval loss goes to ``eval_loss``, a run-average train loss is not kept).
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache

from ..linefacts import EPOCH_EVENT
from .base import LineParser, Row, hms_to_s, to_float, to_int
from .collectives import RANK_TAG_RE
from .prefixes import MONTH_NAME_TIME_RE, MONTH_NAMES
from .progress import TQDM_RE

MEGATRON_RE = re.compile(r"\biteration\s+(?P<it>\d+)\s*/\s*(?P<total>\d+)\s*\|(?P<rest>.*)")
NUMBER_PREFIX_RE = re.compile(r"^\s*([-+]?(?:\d++\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf)",
                              re.IGNORECASE)

# normalised key -> (column, scale)
KEYS: dict[str, tuple[str, float]] = {
    "consumedsamples": ("consumed_samples", 1),
    "consumedtokens": ("consumed_tokens", 1),
    "elapsedtimeperiteration(s)": ("elapsed_s", 1),
    "elapsedtimeperiteration(ms)": ("elapsed_s", 1e-3),
    "learningrate": ("lr", 1),
    "globalbatchsize": ("global_batch_size", 1),
    "lmloss": ("loss", 1),
    "lm_loss": ("loss", 1),
    "lm-loss": ("loss", 1),  # Megatron-DeepSpeed with its pipeline engine: "| lm-loss: 1.24E+01 |"
    "loss": ("loss", 1),
    "gradnorm": ("grad_norm", 1),
    "lossscale": ("loss_scale", 1),
    "numberofskippediterations": ("skipped", 1),
    "numberofnaniterations": ("nan", 1),
    "samplespersecond": ("samples_per_s", 1),
    "samples/sec": ("samples_per_s", 1),
    "tflops": ("tflops", 1),
    "tflopspergpu": ("tflops", 1),
    "throughputpergpu(tflop/s/gpu)": ("tflops", 1),
    "flopthroughput(tflop/sec/gpu)": ("tflops", 1),
    "approxflopspergpu": ("tflops", 1e-12),  # GPT-NeoX: "97.0TFLOPS" (unit read from the value)
    "throughput(token/sec/gpu)": ("tokens_per_s_per_gpu", 1),
    "tokenspergpupersecond": ("tokens_per_s_per_gpu", 1),
}
INT_COLUMNS = {"consumed_samples", "consumed_tokens", "global_batch_size", "skipped", "nan"}
FLOPS_UNITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
FLOPS_VALUE_RE = re.compile(r"^\s*(?P<v>[\d.]+(?:[eE][-+]?\d+)?)\s*(?P<u>[KMGTP]?)FLOPS", re.I)


@lru_cache(maxsize=4096)
def _spec(key: str) -> tuple[str, float] | None:
    """The (column, scale) of a raw field key (memoised: a log repeats the same keys)."""
    return KEYS.get("".join(key.lower().split()))


def field_spec(key: str) -> tuple[str, float] | None:
    """The (column, scale) an iteration line's field ``key`` fills (None: none), as
    ``parse_megatron`` reads it (the reader's bulk lane builds its patterns from it)."""
    return _spec(key)


def _value(column: str, scale: float, value: str) -> float | int | None:
    if scale == 1:
        try:  # the fast path: a plain number
            return int(value) if column in INT_COLUMNS else float(value)
        except ValueError:
            pass
    if column in INT_COLUMNS:
        v = to_int(value)
        if v is None:
            f = to_float(value)
            v = int(f) if f is not None and f == f else None
        return v
    if scale == 1e-12:  # a FLOPS figure with its unit in the value
        m = FLOPS_VALUE_RE.match(value)
        return float(m["v"]) * FLOPS_UNITS[m["u"].upper()] * scale if m else None
    v = to_float(value)
    if v is None:
        m = NUMBER_PREFIX_RE.match(value)
        v = to_float(m.group(1)) if m else None
    if v is not None and scale != 1:
        v *= scale
    return v


def _fields(text: str, row: Row) -> None:
    for field in text.split("|"):
        key, sep, value = field.rpartition(":")
        if not sep:  # Megatron before 2021 (and DeepSpeedExamples' copy): "lm loss 7.1E+00"
            key, sep, value = field.strip().rpartition(" ")
            if not sep:
                continue
        spec = _spec(key)
        if spec is None or spec[0] in row:
            continue
        row[spec[0]] = _value(spec[0], spec[1], value)


def parse_megatron(text: str) -> Row | None:
    """A Megatron/DeepSpeed ``iteration N/ M | key: value | ...`` line."""
    m = MEGATRON_RE.search(text)
    if not m:
        return None
    row: Row = {"iteration": int(m["it"]), "total_iterations": int(m["total"])}
    _fields(m["rest"], row)
    if m.start() > 0 and "|" in text[: m.start()]:  # GPT-NeoX: "samples/sec: 6.7 | iteration …"
        _fields(text[: m.start()], row)
    return row


def megatron_incomplete(text: str) -> bool:
    """An iteration line that a terminal or paste cut before its closing '|', or that a poster
    broke at its '|'s (it ends with the nan counter)."""
    if MEGATRON_RE.search(text) is None:
        return False
    return not text.rstrip().endswith("|") or "number of nan iterations" not in text


MEGATRON_FIELD_RE = re.compile(r"^\s*(?P<k>[A-Za-z][\w ()/]*?)\s*:\s*\S")


def megatron_continues(record: str, body: str) -> bool:
    """After a record a wrap cut mid-field, any line but a new iteration line; after one that
    ends at a '|' (a poster's line break), only a line of iteration fields ("learning rate:
    1.35E-04 | …") or a value's cut end."""
    if MEGATRON_RE.search(body) is not None:
        return False  # a new iteration line
    if not record.rstrip().endswith("|"):
        return True
    pieces = [p for p in body.split("|") if p.strip()]
    if any(_spec(m["k"]) is not None for p in pieces if (m := MEGATRON_FIELD_RE.match(p))):
        return True
    return bool(MEGATRON_TAIL_RE.fullmatch(body.strip()))


MEGATRON_TAIL_RE = re.compile(r"[\d.eE+\- |]*")  # the cut end of a value: "02 |"


# -- Megatron evaluation ------------------------------------------------------------------
VALID_RE = re.compile(r"\bvalid(?:ation)?\s+loss\s+at\s+iteration\s+(?P<it>\d+)(?P<rest>.*)",
                      re.IGNORECASE)
VALID_VALUE_RE = re.compile(r"lm\s+loss\s+value:\s*(?P<v>\S+)", re.IGNORECASE)


def parse_validation(text: str) -> Row | None:
    """Megatron's ``validation loss at iteration N | lm loss value: X |`` (an eval event)."""
    m = VALID_RE.search(text)
    if not m:
        return None
    row: Row = {"iteration": int(m["it"]), "event": "eval"}
    v = VALID_VALUE_RE.search(m["rest"])
    if v:
        row["eval_loss"] = to_float(v["v"])
    return row


# -- DeepSpeed ----------------------------------------------------------------------------
DS_PIPE_RE = re.compile(
    r"\bsteps:\s*(?P<it>\d+)\s+loss:\s*(?P<loss>\S+).*?\biter time \(s\):\s*(?P<t>\S+)"
    r"\s+samples/sec:\s*(?P<sps>\S+)")
DS_TIMER_RE = re.compile(
    r"(?:epoch=\d+/micro_step=\d+/global_step=(?P<gs>\d+),.*?\bCurrSamplesPerSec=(?P<cur>\S+?),"
    r"|\b\d+/(?P<old>\d+), (?:RunningAvgSamplesPerSec=[^,\s]+, Curr)?SamplesPerSec=(?P<oldsps>[^,\s]+))")
# (DeepSpeed's three wordings: "epoch=E/micro_step=M/global_step=G, RunningAvgSamplesPerSec=…,
# CurrSamplesPerSec=…" in recent releases, "E/M, RunningAvgSamplesPerSec=…, CurrSamplesPerSec=…"
# (0.7: deepspeedai/DeepSpeed#2629) and "E/M, SamplesPerSec=…" in older ones: the interval's
# rate, never the running mean; M counts micro-steps, a multiple of the optimizer's step under
# gradient accumulation)


def parse_deepspeed_pipe(text: str) -> Row | None:
    """DeepSpeed pipeline engine ``steps: N loss: X iter time (s): T samples/sec: S``."""
    m = DS_PIPE_RE.search(text)
    if not m:
        return None
    return {"iteration": int(m["it"]), "loss": to_float(m["loss"]),
            "elapsed_s": to_float(m["t"]), "samples_per_s": to_float(m["sps"])}


def parse_deepspeed_timer(text: str) -> Row | None:
    """DeepSpeed ThroughputTimer ``…global_step=N, …, CurrSamplesPerSec=X, …``."""
    m = DS_TIMER_RE.search(text)
    if not m:
        return None
    it, sps = (m["gs"], m["cur"]) if m["gs"] is not None else (m["old"], m["oldsps"])
    value = to_float(sps)
    return None if value is None else {"iteration": int(it), "samples_per_s": value}


# DeepSpeed's engine (deepspeed/runtime/engine.py ``_report_progress``), every steps_per_print:
# log_dist(f"step={step}, skipped={self.skipped_steps}, lr={lr}, mom={mom}") ("rank:0 step=…" in
# 2020): ``skipped`` counts the skipped steps since the engine started
DS_STEP_RE = re.compile(r"\bstep=(?P<it>\d+), skipped=(?P<sk>\d+), lr=\[?(?P<lr>[-+\d.eE]+|nan)")
# the overflow lines that name no step (``parse_overflow``): each is one of the counted steps
# a loss scaler's note that it halved its scale (``SCALE_DOWN_RE``)
SCALE_DOWN_NEEDLES = ("optimizer not run, scale_before", "Found inf or nan, current scale",
                      "Check overflow, downscale")
UNNUMBERED_OVERFLOW = ("Skipping step", "overflow detected, ", *SCALE_DOWN_NEEDLES)


def counter_growth(previous: int | None, count: int, step: int) -> int:
    """How much a cumulative skip counter grew since its stream's previous line. On the stream's
    first line (or after a restart, where it fell) it counts only when every step so far was a
    skip (``count == step``: the start-of-run loss-scale calibration); otherwise an excerpt's
    first count holds skips of steps it does not show."""
    if previous is not None and count >= previous:
        return count - previous
    return count if count == step else 0


class DeepSpeedStepParser:
    """DeepSpeed's ``step=N, skipped=M, lr=[…], mom=[…]`` lines, one stream each: the counter
    is cumulative, so a line's ``skipped`` is its growth since the stream's previous line, less
    the overflow lines printed in between — those say which steps they were
    (``common.place_unnumbered_skips``), the rest stand at the line's step as Megatron's
    per-interval count does. The stream's first line counts its skips only when every step so
    far was one (the start-of-run calibration, ``step=10, skipped=10``): an excerpt's first
    count holds skips of steps it does not show. A line with no skip left to place gives no
    row: its step and learning rate alone would outrank the progress a tqdm bar or HF's
    counted dicts show beside it (``common.last_progress``), as ``step=0`` before an HF
    Trainer's first step would."""

    needles = ("skipped=", *UNNUMBERED_OVERFLOW)
    tables = ("iterations",)
    section: str | None = None  # always None: each line is a record of its own

    def __init__(self) -> None:
        self.section: str | None = None
        self.count: int | None = None
        self.seen = 0

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the step's row for a step line."""
        if "skipped=" not in text:
            if any(map(text.__contains__, UNNUMBERED_OVERFLOW)) and parse_overflow(text):
                self.seen += 1
            return []
        m = DS_STEP_RE.search(text)
        if m is None:
            return []
        count = int(m["sk"])
        grew = counter_growth(self.count, count, int(m["it"]))
        self.count, seen, self.seen = count, self.seen, 0
        if grew <= seen:
            return []
        return [("iterations", {"iteration": int(m["it"]), "skipped": grew - seen,
                                "lr": to_float(m["lr"]), "_ctx": ctx})]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: nothing pending."""
        return []


# -- step: N  key: value (torchtitan and alike) --------------------------------------------
STEP_KV_RE = re.compile(r"(?<![\w/])step:\s*(?P<it>\d+)(?:/(?P<total>\d+))?\b(?P<rest>.*)")
PAIR_RE = re.compile(r"(?<![A-Za-z_])(?P<k>[A-Za-z_][\w/]*+):\s*(?P<v>[-+]?(?:[\d,]*+\.|(?:\d*+,)*)?\d++(?:[eE][-+]?\d+)?)"
                     r"(?P<u>%|ms|s|GiB)?")
# key -> (column, scale); tps/wps are per device in torchtitan (tokens / (time * non-DP size))
STEP_KEYS: dict[str, tuple[str, float]] = {
    "loss": ("loss", 1), "global_avg_loss": ("loss", 1), "grad_norm": ("grad_norm", 1),
    "tps": ("tokens_per_s_per_gpu", 1), "wps": ("tokens_per_s_per_gpu", 1),
    "per_device_tps": ("tokens_per_s_per_gpu", 1),
    "tokens_per_second": ("tokens_per_s", 1), "tflops": ("tflops", 1), "mfu": ("mfu", 1),
    "lr": ("lr", 1), "step_time": ("elapsed_s", 1),
    # modded-nanogpt and its descendants: "step:5050/20000 train_loss:2.0232 train_time:219627ms
    # step_avg:43.49ms": step_avg is a running mean since the start (a slowdown shows in it
    # late and diluted); train_time is the clock, whose differences are the time per step
    # (``diagnose.throughput.series``). step_avg stays for a line without the clock.
    "train_loss": ("loss", 1), "step_avg": ("elapsed_s", 1), "train_time": ("train_time_s", 1),
    # its validation line at the same step ("step:1000/20000 val_loss:2.3036 val_bpb:1.3643
    # train_time:63809ms step_avg:63.81ms") is an eval event, not a second training step
    "val_loss": ("eval_loss", 1),
    # verl: "step:1 - … - actor/grad_norm:0.020 - perf/mfu/actor:0.343 - … - perf/time_per_step:
    # 17.62 - perf/throughput:11.73" (MFU as a fraction; throughput in tokens/s per GPU, its
    # compute_throughout_metrics)
    "actor/grad_norm": ("grad_norm", 1), "perf/mfu/actor": ("mfu", 100),
    "perf/throughput": ("tokens_per_s_per_gpu", 1), "perf/time_per_step": ("elapsed_s", 1),
    "timing_s/step": ("elapsed_s", 1),
}
NUMPY_SCALAR_RE = re.compile(r"np\.(?:float|int)\d*\(([^()]*)\)")  # newer verl: np.float64(0.028)
# an evaluation's word right before "step:" (its ANSI colour code between them)
VALIDATE_BEFORE_RE = re.compile(r"\b(?:validate|validation|val|eval|evaluation|test)\s*+$",
                                re.IGNORECASE)


def parse_step_kv(text: str) -> Row | None:
    """``step: 200  loss:  6.1384  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu:
    34.29%`` (torchtitan) and other ``step: N, key: value`` lines with a throughput field."""
    m = STEP_KV_RE.search(text)
    if not m:
        return None
    row: Row = {"iteration": int(m["it"])}
    if m["total"]:  # "step:1390/1390": the run's length as printed
        row["total_iterations"] = int(m["total"])
    rest = NUMPY_SCALAR_RE.sub(r"\1", m["rest"]) if "np." in m["rest"] else m["rest"]
    for p in PAIR_RE.finditer(rest):
        spec = STEP_KEYS.get(p["k"].lower())
        if spec is None or spec[0] in row:
            continue
        v = to_float(p["v"].replace(",", ""))
        if v is not None and p["u"] == "ms" and spec[0] in ("elapsed_s", "train_time_s"):
            v /= 1000.0
        row[spec[0]] = v * spec[1] if v is not None else None
    if not ({"tokens_per_s_per_gpu", "tokens_per_s", "tflops", "mfu", "elapsed_s"} & row.keys()):
        return None  # "step: N" alone is too common to be a training-step line
    if row.get("eval_loss") is not None and row.get("loss") is None:
        row["event"] = "eval"
    if VALIDATE_BEFORE_RE.search(text, 0, m.start()):
        # torchtitan's validator: "validate step:  5  loss:  3.7874  memory: 30.50GiB(97.27%)
        # tps: 8,143": its loss the evaluation's, no training step
        loss = row.pop("loss", None)
        row.update(event="eval", eval_loss=loss)
    r = RANK_TAG_RE.search(text[: m.start()])
    if r:
        row["rank"] = int(r["rank"])
    return row


# -- litgpt ----------------------------------------------------------------------------------
# -- Lightning progress bar ------------------------------------------------------------------
# The bar ends at its "]", or where ModelCheckpoint's message was written into it (tqdm writes no
# newline: "… 4.14it/s, loss=nan, v_num=Epoch 0, global step 51: 'val_accuracy' reached 0.02055
# (best 0.02055), saving model to …", autom3l's readme_result.log; Lightning's
# rank_zero_info(f"Epoch {epoch:d}, global step {step:d}: {monitor!r} reached …"))
LIGHTNING_RE = re.compile(
    r"\bEpoch (?P<epoch>\d+):\s*(?::\s*)?\d{1,3}%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+)\s*"
    r"\[(?P<elapsed>[\d:]+)(?:<[\d:?]+)?(?:,\s*(?P<rate>[\d.]+)(?P<unit>s/it|it/s))?"
    r"(?P<post>[^\]]*?)(?:\]|(?=Epoch \d+, global step \d+: ))")
POSTFIX_RE = re.compile(r"(?<![\w/])(?P<k>[\w/]+)=(?P<v>[-+]?[\d.]+(?:[eE][-+]?\d+)?|"
                        r"[-+]?(?:nan|inf)\.?0*)(?=[,\]\s]|$)")
# Lightning pads every float of its bar's postfix to five characters (TQDMProgressBar's
# ``Tqdm.format_num``): a NaN or inf loss reads "train_loss_step=nan.0", "loss=inf.0", "-inf."
# (FoxNickel/OmniAvatar train_log_save.txt)
PADDED_NONFINITE_RE = re.compile(r"(?P<v>[-+]?(?:nan|inf))\.?0*", re.IGNORECASE)
# NeMo's bar ("Epoch 0: :  47%|████▋ | 7/15 [06:19<07:13, reduced_train_loss=11.50, global_step=5.000,
# …, train_step_timing in s=49.50]"): reduced_train_loss is the step's loss, Lightning 1.x's own
# "loss=" a running mean of the last 20 steps; global_step is the step across epochs
NEMO_TIMING_RE = re.compile(r"\btrain_step_timing in s=(?P<v>[\d.]+(?:[eE][-+]?\d+)?)")
LIGHTNING_LOSS_KEYS = ("reduced_train_loss", "train_loss_step", "train_loss", "loss")


def _postfix_number(v: str) -> float | None:
    """A number of a Lightning postfix, its padded NaN/inf (``nan.0``) as float NaN/inf."""
    m = PADDED_NONFINITE_RE.fullmatch(v)
    return to_float(m["v"] if m else v)


def parse_lightning(text: str) -> Row | None:
    """A Lightning bar ``Epoch 0:  25%|██▌ | 8/32 [00:00<00:00, 49.28it/s, loss=0.87, v_num=15]``."""
    m = None
    for found in LIGHTNING_RE.finditer(text):
        m = found
    if m is None:
        return None
    epoch, n, total = int(m["epoch"]), int(m["n"]), int(m["total"])
    row: Row = {"iteration": epoch * total + n, "epoch": float(epoch)}
    rate = to_float(m["rate"]) if m["rate"] else None
    if rate:
        row["elapsed_s"] = rate if m["unit"] == "s/it" else 1.0 / rate
    post = {p["k"]: _postfix_number(p["v"]) for p in POSTFIX_RE.finditer(m["post"] or "")}
    for k in LIGHTNING_LOSS_KEYS:
        if post.get(k) is not None:
            row["loss"] = post[k]
            if not math.isfinite(post[k]):
                row["nan"] = 1  # the table keeps no NaN: the step's loss was NaN/inf
            break
    step = post.get("global_step")
    if step is not None and step == step and step >= 0:
        row["iteration"] = int(step)
    if "elapsed_s" not in row and (t := NEMO_TIMING_RE.search(m["post"] or "")):
        row["elapsed_s"] = to_float(t["v"])
    elapsed = hms_to_s(m["elapsed"])
    if n and elapsed is not None and "elapsed_s" not in row:
        row["elapsed_s"] = elapsed / n
    return row


# -- HF Trainer dicts (a block parser: it counts) --------------------------------------------
HF_DICT_RE = re.compile(r"\{'(?:loss|eval_loss|eval_runtime|train_runtime)'[^{}]*\}")
HF_PAIR_RE = re.compile(r"'(?P<k>[^']+)':\s*(?P<q>['\"]?)(?P<v>[^,'\"}\]\[]+)(?P=q)")
# the step a dict names, best first (ms-swift prints "global_step/max_steps": "N/M")
HF_STEP_KEYS = ("step", "global_step", "global_step/max_steps")
HF_TRAIN_KEYS = {"loss": "loss", "grad_norm": "grad_norm", "learning_rate": "lr",
                 "epoch": "epoch"}
# the step a callback prints before the dict it was given, the dict naming none ("Step:      3
# {'loss': 2.4395, 'grad_norm': inf, …}" from a TrainerCallback's on_log, text-generation-webui
# LoRA training.log; "[Step 100] {…}", "global_step=100 {…}", "Iteration 12: {…}")
HF_PRE_STEP_RE = re.compile(
    r"(?<![\w/])(?:[Gg]lobal[ _][Ss]tep|[Ss]tep|STEP|[Ii]ter(?:ation)?)\s*+[:=#]?\s*+(?P<n>\d+)"
    r"(?:\s*+/\s*+(?P<total>\d+))?\s*+[\]:,|\-)]*+\s*$")


def parse_hf_dict(text: str) -> tuple[str, Row] | None:
    """One HF Trainer log dict as (kind, row): kind "train", "eval" or "train_summary"; the
    row has no iteration unless the dict carries ``step``."""
    m = HF_DICT_RE.search(text)
    if not m:
        return None
    d = {p["k"]: p["v"].strip() for p in HF_PAIR_RE.finditer(m.group())}
    row: Row = {}
    for key in HF_STEP_KEYS:  # ms-swift: 'global_step/max_steps': '57/176'
        n, _, total = d.get(key, "").partition("/")
        if to_int(n) is not None:
            row["iteration"] = to_int(n)
            if to_int(total) is not None:
                row["total_iterations"] = to_int(total)
            break
    if "epoch" in d:
        row["epoch"] = to_float(d["epoch"])
    if "train_runtime" in d:
        row.update(event="train_summary", samples_per_s=to_float(d.get("train_samples_per_second")))
        return "train_summary", row
    if "eval_loss" in d or "eval_runtime" in d:
        # the evaluation's own rate ('eval_samples_per_second': 12.805) stays on its row: the
        # throughput runbook reads it only where no training line carries a rate
        row.update(event="eval", eval_loss=to_float(d.get("eval_loss")),
                   samples_per_s=to_float(d.get("eval_samples_per_second")))
        return "eval", row
    for key, col in HF_TRAIN_KEYS.items():
        if key in d:
            row[col] = to_float(d[key])
    if all(row.get(c) is None for c in ("loss", "grad_norm", "lr")):
        return None  # a dict-shaped line with no readable value (a template, a comment)
    return "train", row


def bar_count(text: str) -> int | None:
    """The count of the last tqdm bar in ``text`` (None without one)."""
    last = None
    for m in TQDM_RE.finditer(text):
        last = m
    return to_int(last["n"]) if last is not None else None


class HFTrainerParser:
    """HF Trainer's printed log dicts. One instance per stream (file and rank), so the running
    count that stands in for the missing step number is per source."""

    needles = ("{'",)  # every line it reads holds one (the fast ingest engine relies on it)
    tables = ("iterations",)  # what it fills (``load(tables=…)`` leaves it out otherwise)
    section: str | None = None  # "hf_trainer" after a line it read

    def __init__(self) -> None:
        self.section: str | None = None
        self.count = 0

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return an ``iterations`` row when it holds a log dict."""
        self.section = None
        if "{'" not in text:
            return []
        got = parse_hf_dict(text)
        if got is None:
            return []
        kind, row = got
        head = text[:text.find("{'")]
        pre = HF_PRE_STEP_RE.search(head) if row.get("iteration") is None else None
        if pre is not None:
            row["iteration"] = int(pre["n"])
            if pre["total"]:
                row["total_iterations"] = int(pre["total"])
        if kind == "train" and row.get("iteration") is None:
            # a dict printed right after the bar's redraws ("^M  4%|▎ | 1318/36234 [11:37<…]
            # ^M{'loss': 1.5545, …}"): the bar's last count is the step the dict was logged at
            bar = bar_count(head)
            if bar is not None:
                row["iteration"] = bar
        if kind == "train":
            self.count += 1
        # an eval or end-of-run dict before any training dict has no place in the run: not step 0
        if row.get("iteration") is None and self.count:
            row["iteration"] = self.count
        elif kind == "train":
            self.count = row["iteration"]
        row["_ctx"] = ctx
        self.section = "hf_trainer"  # tells the loader the line was understood
        return [("iterations", row)]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: nothing pending."""
        self.section = None
        return []


# A real HF Trainer line (transformers issue DAMO-NLP-SG/VideoLLaMA2#157).
HF_EXAMPLE = ("{'loss': 1.5214, 'grad_norm': 82.93941089686794, 'learning_rate': "
              "1.4285714285714286e-06, 'epoch': 0.01}")

# -- OLMo's metrics block ------------------------------------------------------------------------
# OLMo-core's ConsoleLoggerCallback (src/olmo_core/train/callbacks/console_logger.py) adds the
# time left, "[step=100/2000,epoch=0,eta=5h11m]", and writes "???" for a total it does not know.
# The header ends its line: "[step=1998] episode=1998.0 … loss=40981.34" (a hand-written RL
# loop's W&B output.log, LeeChangmin0310/RARE-3D) is a step line of its own, the generic one's
OLMO_HEADER_RE = re.compile(r"\[step=(?P<it>\d+)(?:/(?:(?P<total>\d+)|\?\?\?))?"
                            r"(?:,epoch=(?P<epoch>\d+))?(?:,eta=[^\]]*)?\]\s*$")
OLMO_METRIC_RE = re.compile(r"^\s*+(?P<k>[\w/.()-][\w/.() -]*?)=(?P<v>[-+]?(?:[\d,]*+\.|(?:\d*+,)*)?\d++(?:[eE][-+]?\d+)?|nan|inf)\s*$")
OLMO_KEYS = {
    "train/CrossEntropyLoss": "loss", "train/ce_loss": "loss",
    "optim/total_grad_norm": "grad_norm", "train/grad_norm": "grad_norm",
    "optim/learning_rate_group0": "lr", "optim/learning_rate": "lr",
    "throughput/device/tokens_per_second": "tokens_per_s_per_gpu",
    "throughput/device/TPS": "tokens_per_s_per_gpu",
    # OLMo-core's names (its ConsoleLoggerCallback's default metrics): "train/CE loss=6.2341",
    # "optim/total grad norm=0.7164", "optim/LR (group 0)=…", "optim/step skipped=0.0" (1.0:
    # the optimizer skipped the step)
    "train/CE loss": "loss", "optim/total grad norm": "grad_norm", "optim/LR (group 0)": "lr",
    "optim/step skipped": "skipped",
}


class OlmoMetricsParser:
    """OLMo's per-step block: ``[step=20800/23842,epoch=0]`` then indented ``key=value`` lines
    (``train/CrossEntropyLoss=1.834``, ``throughput/device/tokens_per_second=15,537``)."""

    needles = ("[step=",)
    tables = ("iterations",)
    section: str | None = None  # "olmo" while inside a step block

    def __init__(self) -> None:
        self.section: str | None = None
        self.row: Row = {}

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the step's row when its block ends."""
        if self.section is not None:
            m = OLMO_METRIC_RE.match(text)
            if m:
                col = OLMO_KEYS.get(m["k"].strip())
                if col is not None and col not in self.row:
                    value = to_float(m["v"].replace(",", ""))
                    if col == "skipped":  # a share of the interval's steps: some were skipped
                        value = None if value is None or value != value else int(value > 0)
                    self.row[col] = value
                return []
        out = self._flush()
        if "[step=" in text:
            h = OLMO_HEADER_RE.search(text)
            if h:
                self.row = {"iteration": int(h["it"]), "_ctx": ctx}
                if h["total"]:
                    self.row["total_iterations"] = int(h["total"])
                if h["epoch"]:
                    self.row["epoch"] = float(h["epoch"])
                self.section = "olmo"
        return out

    def _flush(self) -> list[tuple[str, Row]]:
        row, self.row, self.section = self.row, {}, None
        return [("iterations", row)] if row else []

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: the open block's row."""
        return self._flush()


# -- Composer's console blocks (llm-foundry) -----------------------------------------------------
# composer/loggers/console_logger.py log_to_console: the progress, then one "\t {prefix}{name}:
# {value}" line per metric: "[batch=1/100]:" (max_duration in batches), "[epoch=1][batch=16/625]:"
# (in epochs: the batch of the epoch), "[token=…/…]:" (in tokens), each followed by "\t Train
# time/batch: 0", "\t Train loss/train/total: 10.9736", …; an evaluation "[Eval batch=10/10] Eval
# on eval data:" then "\t Eval metrics/eval/LanguageCrossEntropy: 2.34"
COMPOSER_HEADER_RE = re.compile(
    r"^\s*(?:\[epoch=(?P<e>\d+)\])?\[(?P<unit>batch|token|sample|iteration|duration|second)="
    r"(?P<n>\d+)(?:/(?P<tot>\d+))?\]:\s*$|^\s*\[Eval batch=\d+/\d+\] Eval on \S+ data:\s*$")
COMPOSER_METRIC_RE = re.compile(
    r"^\s*(?P<phase>Train|Eval) (?P<k>[^:\s][^:]*): (?P<v>[-+]?(?:[\d.]+(?:[eE][-+]?\d+)?|nan|inf))\s*$")
# name -> (column, scale); the learning rate is "lr-<Optimizer>/group0" (``COMPOSER_LR_RE``)
COMPOSER_KEYS: dict[str, tuple[str, float]] = {
    "loss/train/total": ("loss", 1), "l2_norm/grad/global": ("grad_norm", 1),
    "throughput/samples_per_sec": ("samples_per_s", 1),
    "throughput/tokens_per_sec": ("tokens_per_s", 1),
    "throughput/device/tokens_per_sec": ("tokens_per_s_per_gpu", 1),
    # SpeedMonitor's MFU is a fraction of the device's peak
    "throughput/device/mfu": ("mfu", 100),
    "metrics/eval/LanguageCrossEntropy": ("eval_loss", 1),
}
COMPOSER_LR_RE = re.compile(r"lr-\w+/group0")
COMPOSER_STEPS_PER_S = "throughput/batches_per_sec"
# the global batch count before the logged batch ("[epoch=1][batch=5/5]" logs "time/batch: 4")
COMPOSER_BATCH = "time/batch"
# the columns that make a block a step's (a learning rate alone does not)
COMPOSER_SIGNALS = ("loss", "grad_norm", "elapsed_s", "samples_per_s", "tokens_per_s",
                    "tokens_per_s_per_gpu", "mfu")


class ComposerConsoleParser:
    """Composer's console blocks (``COMPOSER_HEADER_RE``, then its metric lines): one row per
    block, the step the global batch count (``time/batch`` + 1), else the header's batch; an
    evaluation block an ``event="eval"`` row at the last training step."""

    needles = ("[batch=", "[epoch=", "[token=", "[sample=", "[iteration=", "[duration=",
               "[second=", "[Eval batch=")
    tables = ("iterations",)
    section: str | None = None  # "composer" while inside a block

    def __init__(self) -> None:
        self.section: str | None = None
        self.head: re.Match[str] | None = None
        self.fields: dict[str, str] = {}
        self.ctx: object = None
        self.step: int | None = None  # the last training step, where an evaluation belongs

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the block's row when it ends."""
        if self.section is not None and (m := COMPOSER_METRIC_RE.match(text)) is not None:
            self.fields.setdefault(m["k"].strip(), m["v"])
            return []
        out = self._flush()
        if any(map(text.__contains__, self.needles)) and \
                (h := COMPOSER_HEADER_RE.match(text)) is not None:
            self.head, self.ctx, self.section = h, ctx, "composer"
        return out

    def _row(self) -> Row | None:
        h, f = self.head, self.fields
        if h is None or not f:
            return None
        row: Row = {}
        for k, v in f.items():
            col, scale = COMPOSER_KEYS.get(k) or (("lr", 1) if COMPOSER_LR_RE.fullmatch(k) else
                                                   (None, 1))
            if col is not None and (x := to_float(v)) is not None:
                row[col] = x * scale
        if (rate := to_float(f.get(COMPOSER_STEPS_PER_S))) and rate > 0:
            row["elapsed_s"] = 1.0 / rate
        if h["unit"] is None:  # an evaluation
            if self.step is None or "eval_loss" not in row:
                return None
            return {"iteration": self.step, "event": "eval", "eval_loss": row["eval_loss"]}
        row.pop("eval_loss", None)
        if not any(c in row for c in COMPOSER_SIGNALS):
            return None
        if (done := to_float(f.get(COMPOSER_BATCH))) is not None and done == int(done):
            row["iteration"] = int(done) + 1
        elif h["unit"] == "batch":
            row["iteration"] = int(h["n"])
        else:  # a count of tokens or samples is no step
            return None
        if h["unit"] == "batch" and h["e"] is None and h["tot"]:  # (in epochs: the epoch's)
            row["total_iterations"] = int(h["tot"])
        if h["e"] is not None:
            row["epoch"] = float(h["e"])
        self.step = row["iteration"]
        return row

    def _flush(self) -> list[tuple[str, Row]]:
        row = self._row()
        ctx = self.ctx
        self.head, self.fields, self.ctx, self.section = None, {}, None, None
        return [] if row is None else [("iterations", {**row, "_ctx": ctx})]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: the open block's row."""
        return self._flush()


# -- nanoGPT ------------------------------------------------------------------------------------
NANOGPT_RE = re.compile(r"\biter (?P<it>\d+): loss (?P<loss>[-+\d.eE]+|nan|inf), time "
                        r"(?P<t>[\d.]+)ms(?:, mfu (?P<mfu>-?[\d.]+)%)?")


def parse_nanogpt(text: str) -> Row | None:
    """nanoGPT's ``iter 1631: loss 4.0863, time 561.94ms[, mfu 30.12%]``."""
    m = NANOGPT_RE.search(text)
    if not m:
        return None
    row: Row = {"iteration": int(m["it"]), "loss": to_float(m["loss"]),
                "elapsed_s": float(m["t"]) / 1000.0}
    mfu = to_float(m["mfu"]) if m["mfu"] else None
    if mfu is not None and mfu > 0:  # nanoGPT prints -100.00% before it has measured
        row["mfu"] = mfu
    return row


# -- ColBERT -------------------------------------------------------------------------------------
# ColBERT's training loop (colbert/training/training.py, v1, v2 and their forks) logs each step
# as ``print_message(batch_idx, train_loss)``: the time (strftime "%b %d, %H:%M:%S", no year),
# the step, the running-average loss and nothing else; its step time is the timestamps' spacing
COLBERT_STEP_RE = re.compile(MONTH_NAME_TIME_RE.pattern
                             + r" (?P<it>\d+) (?P<loss>[-+]?\d+\.\d+(?:[eE][-+]?\d+)?|nan|inf)\s*$")
COLBERT_NEEDLES = tuple(f"[{mon} " for mon in MONTH_NAMES)


def parse_colbert(text: str) -> Row | None:
    """ColBERT's ``[Mar 29, 16:27:48] 473 5.845928532131831`` (time, step, average loss)."""
    m = COLBERT_STEP_RE.match(text)
    if not m:
        return None
    return {"iteration": int(m["it"]), "loss": to_float(m["loss"])}


# -- key: value step lines that differ only in wording ------------------------------------------
# (regex for the step, key -> (column, divisor)); values with "ms" are divided by 1000 when the
# column is elapsed_s, thousands separators dropped.
KV_FIELD_RE = re.compile(r"(?<![\w/])(?P<k>[A-Za-z_][\w/]*+)\s*[:=]\s*(?P<v>[-+]?(?:[\d,]*+\.|(?:\d*+,)*)?\d++(?:[eE][-+]?\d+)?|nan|inf)"
                         r"(?P<u>ms|s\b|%|[KMGT]\b)?")
KV_FORMATS: dict[str, tuple[re.Pattern[str], dict[str, str]]] = {
    # fairseq before 0.6: "| epoch 015  4000 / 8223 loss=0.73 (0.96), wps=963, wpb=915, bsz=32,
    # lr=0.001, clip=100%, gnorm=1.8137" (iteration counted over epochs: (epoch-1)·total + n)
    "fairseq_legacy": (re.compile(r"\| epoch (?P<epoch>\d+)\s+(?P<it>\d+) / (?P<total>\d+) (?P<rest>.*)"),
                       {"loss": "loss", "wps": "tokens_per_s", "lr": "lr", "gnorm": "grad_norm"}),
    # fairseq 0.6-0.10: "| epoch 001:    200 / 1374 loss=14.351, ppl=20899.56, wps=49604, …,
    # num_updates=190, lr=4.84525e-06, gnorm=3.901, …, loss_scale=0.062" (the update count is
    # the iteration: the batch counts within the epoch)
    "fairseq": (re.compile(r"\bepoch \d+:\s+\d+ / \d+ (?P<rest>.*\bnum_updates=(?P<it>\d+)\b.*)"),
                {"loss": "loss", "wps": "tokens_per_s", "lr": "lr", "gnorm": "grad_norm",
                 "loss_scale": "loss_scale"}),
    # NeMo's console progress: "Training epoch 0, iteration 120/149 | lr: 3e-05 | … |
    # reduced_train_loss: 1.233 | train_step_timing in s: 0.03146 | val_loss: 4.106"
    "nemo_progress": (re.compile(r"\bTraining epoch \d+, iteration (?P<it>\d+)/(?P<total>\d+) \|(?P<rest>.*)"),
                      {"reduced_train_loss": "loss", "train_step_timing in s": "elapsed_s",
                       "lr": "lr", "grad_norm": "grad_norm"}),
    # the Pose2Mesh/Hand4Whole family: "Epoch 0/7 itr 26/3489: lr: 0.0001 speed: 0.72(0.65s
    # r0.07)s/itr 0.70h/epoch loss_…" (epochs from 0: iteration epoch·total + itr)
    "itr_speed": (re.compile(r"\bEpoch (?P<epoch0>\d+)/\d+ itr (?P<it>\d+)/(?P<total>\d+): (?P<rest>.*)"),
                  {"speed": "elapsed_s", "lr": "lr"}),
    # LMOps MiniLLM: "train | data_epochs  0/10 | … | global iter:     28/  5000| tot_loss:
    # 2442.9075 | rl_loss: …"
    "global_iter": (re.compile(r"\bglobal iter:\s*(?P<it>\d+)/\s*(?P<total>\d+)\s*\|(?P<rest>.*)"),
                    {"tot_loss": "loss", "loss": "loss", "lr": "lr", "grad_norm": "grad_norm"}),
    # llama2.c-style pretraining scripts: "Epoch:[0/2](7000/293491) loss:nan lr:0.0000987
    # epoch_Time:1044.0min:" — baby-llama2-chinese counts epochs from 0, MiniMind and its forks
    # print the same line from 1 ("Epoch:[1/1](56608/56608), loss: 1.8960, …"): the step of the
    # epoch and the epoch as printed, counted on across epochs per file (loss_spike's
    # ``across_epochs``: from 0 where the file shows an epoch 0, else from 1)
    "epoch_paren": (re.compile(r"\bEpoch:\[(?P<epoch_n>\d+)/\d+\]\((?P<it>\d+)/(?P<total>\d+)\)"
                               r"(?P<rest>.*)"), {"loss": "loss", "lr": "lr"}),
    # MaxText: "completed step: 1, seconds: 0.631, TFLOP/s/device: 5688.282, Tokens/s/device:
    # 311629.521, total_weights: 1572864, loss: 12.979, …" (before mid-2024 "TFLOP/s: 36.722",
    # already per device)
    "maxtext": (re.compile(r"\bcompleted step: (?P<it>\d+), (?P<rest>.*)"),
                {"seconds": "elapsed_s", "TFLOP/s/device": "tflops", "TFLOP/s": "tflops",
                 "Tokens/s/device": "tokens_per_s_per_gpu", "loss": "loss"}),
    # nanotron: "iteration: 991 / 1000 | consumed_tokens: 634K | elapsed_time_per_iteration_ms:
    # 272 | tokens_per_sec: 2.35K | tokens_per_sec_per_gpu: 294 | global_batch_size: 20 |
    # lm_loss: 9.63 | lr: 1e-05 | model_tflops_per_gpu: 0.00744 | … | grad_norm: 1.11"
    "nanotron": (re.compile(r"\biteration: (?P<it>\d+) / (?P<total>\d+) \|(?P<rest>.*)"),
                 {"lm_loss": "loss", "lr": "lr", "grad_norm": "grad_norm",
                  "elapsed_time_per_iteration_ms": "elapsed_s", "tokens_per_sec": "tokens_per_s",
                  "tokens_per_sec_per_gpu": "tokens_per_s_per_gpu",
                  "model_tflops_per_gpu": "tflops", "global_batch_size": "global_batch_size",
                  "consumed_tokens": "consumed_tokens"}),
    # torch-rnn (jcjohnson/torch-rnn train.lua) and its forks: "Epoch 1.04 / 50, i = 8 / 10050,
    # loss = 2.992056" (forks append fields: "…, lrate: 0.002, time: 0.41"; a time with no unit
    # could be seconds or milliseconds: not read)
    "torch_rnn": (re.compile(r"\bEpoch \d+\.\d+ / \d+, i = (?P<it>\d+) / (?P<total>\d+),(?P<rest>.*)"),
                  {"loss": "loss", "lrate": "lr"}),
}
PIPE_FIELD_RE = re.compile(r"^\s*+(?P<k>[^\s:|](?:[^:|]*[^\s:|])?)\s*+:\s*(?P<v>[-+]?(?:[\d,]*+\.|(?:\d*+,)*)?\d++(?:[eE][-+]?\d+)?|nan|inf)"
                           r"(?P<u>ms|s\b|%|[KMGT]\b)?")
# a human-format suffix (nanotron's "2.35K tokens/s", "85.8G tokens")
KV_SUFFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def parse_kv_step(text: str) -> Row | None:
    """A step line of one of ``KV_FORMATS``: iteration, total, and the fields it maps."""
    for rx, keys in KV_FORMATS.values():
        m = rx.search(text)
        if not m:
            continue
        it = int(m["it"])
        gd = m.groupdict()
        total = int(gd["total"]) if gd.get("total") else None
        if gd.get("epoch") and total:
            it = (max(int(gd["epoch"]), 1) - 1) * total + it
            total = None  # the epoch's length, not the run's
        elif gd.get("epoch0") and total:
            it = int(gd["epoch0"]) * total + it
            total = None
        row: Row = {"iteration": it}
        if gd.get("epoch_n"):
            row["epoch"] = float(gd["epoch_n"])
            total = None  # the epoch's length, not the run's
        if total:
            row["total_iterations"] = total
        rest = m["rest"]
        fields = ([f for f in map(PIPE_FIELD_RE.match, rest.split("|")) if f]
                  if rest.count("|") >= 2 else list(KV_FIELD_RE.finditer(rest)))
        for f in fields:
            col = keys.get(f["k"])
            if col is None or col in row:
                continue
            v = to_float(f["v"].replace(",", ""))
            if v is not None and f["u"] in KV_SUFFIX:
                v *= KV_SUFFIX[f["u"]]
            if v is not None and col == "elapsed_s" and (f["u"] == "ms" or f["k"].endswith("_ms")):
                v /= 1000.0
            row[col] = v if col not in INT_COLUMNS or v is None or v != v else int(v)
        return row if len(row) > 1 else None
    return None


# -- one-regex step formats: named groups are columns ------------------------------------------
# it -> iteration, loss, grad_norm, lr, elapsed_s (seconds), elapsed_ms, tokens_per_s,
# samples_per_s, total -> total_iterations. Each with a real line in tests/test_iterations.py.
_NUM = r"[-+]?(?:\d++\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf"
SIMPLE_FORMATS: dict[str, re.Pattern[str]] = {
    # WaveGlow: "step_78540:\tloss_-4.065555573"
    "waveglow": re.compile(rf"^step_(?P<it>\d+):\s*loss_(?P<loss>{_NUM})\s*$"),
    # (a bare per-epoch loop, "epoch: 3451 loss: nan", is the generic reader's: an epoch row)
    # newer litgpt: "iter 16 step 1: loss nan, train time: 1405.01ms"
    "litgpt_train_time": re.compile(rf"\biter (?P<it>\d+) step \d+: loss (?P<loss>{_NUM}), train "
                                    r"time: (?P<elapsed_ms>[\d.]+)ms"),
    # OpenPCDet's timm-style logger: "Train:    1/3 ( 33%) [  49/323 ( 15%)]  Loss: 36.77 (81.7)  LR:
    # 1.351e-04  Time cost: 00:15/01:25 [00:15/04:48]  Acc_iter 50  …  Batch time: 0.31(0.31)"
    "pcdet_timm": re.compile(rf"\bTrain:\s+\d+/\d+ \(\s*\d+%\) \[\s*\d+/\d+ \(\s*\d+%\)\]\s+Loss: "
                             rf"(?P<loss>{_NUM}) \([^)]*\)\s+LR: (?P<lr>{_NUM}).*?\bAcc_iter "
                             r"(?P<it>\d+)(?:.*?\bBatch time: (?P<elapsed_s>[\d.]+))?"),
    # litgpt's pretrain since 2024: "Epoch 34 | iter 3050700 step 610140 | loss train: 2.846, val:
    # 2.861 | iter time: 112.20 ms (step) remaining time: 0:01:54"
    "litgpt_pipe": re.compile(rf"\biter (?P<it>\d+) step \d+ \| loss train: (?P<loss>{_NUM}), val: "
                              r"[^|]*\| iter time: (?P<elapsed_ms>[\d.]+) ?ms"),
    # Dreamer: "[5000] expl_amount 0.0 / model_grad_norm nan / … / model_loss 5864.5 / …"
    "dreamer": re.compile(rf"^\[(?P<it>\d+)\] \w+ (?:{_NUM})(?= / ).*?\bmodel_grad_norm "
                          rf"(?P<grad_norm>{_NUM}).*?\bmodel_loss (?P<loss>{_NUM})"),
    # "| E6 iter[ 14/ 15] | [Loss] nan | … | [step]   104 |"
    "bracket_keys": re.compile(rf"\[Loss\] (?P<loss>{_NUM}) \|.*?\[step\]\s+(?P<it>\d+)"),
    # NLUT-style "iter 3700   time/iter: 0.50  lr: 0.000100 loss_mn: … losses: 3.4793"
    # RVC (Retrieval-based-Voice-Conversion-WebUI): "Total loss at epoch 5, step at 58400,
    # loss=31.05100440979004" (no rate: the line's time is the only clock)
    "rvc": re.compile(rf"\bloss at epoch \d+, step at (?P<it>\d+), loss=(?P<loss>{_NUM})"),
    # Caffe's solver: "Iteration 23500 (1.00034 iter/s, 99.9662s/100 iters), loss = 38.7695";
    # older Caffe: "Iteration 1000, loss = 8.26466"
    "caffe": re.compile(rf"\bIteration (?P<it>\d+)(?: \((?P<it_per_s>[\d.]+) iter/s, [\d.]+s/\d+ "
                        rf"iters\))?, loss = (?P<loss>{_NUM})"),
    # -- one line per epoch (the epoch is the iteration: the only unit the log gives) --
    # cellpose (and its forks omnipose, scellseg): "Epoch 5, Time 4981.4s, Loss 0.5731, LR
    # 0.1111", "Epoch 190, Time 43354.3s, Loss 0.6758, Loss Test 0.3793, LR 0.2000": the time
    # is the training clock since the start (cellpose#450: 9074.8 s at epoch 10, 28029.8 s at 20)
    "cellpose_epoch": re.compile(rf"\bEpoch (?P<it>\d+), Time\s+(?P<train_time_s>[\d.]+)s, Loss "
                                 rf"(?P<loss>{_NUM})(?:, Loss Test {_NUM})?, LR (?P<lr>{_NUM})"),
    # cellpose 3-4 (train.py's train_logger, and forks): "350, train_loss=0.2587,
    # test_loss=0.0000, LR=0.000010, time 1736.08s" (cellpose#1377), "Epoch 5, train_loss=…",
    # "12, stage=warmup, train_loss=…": the time is the clock since t0, not the epoch's (the
    # generic reader would read it as the step's time)
    "cellpose_kv_epoch": re.compile(
        rf"(?<![\w.,])(?:Epoch )?(?P<it>\d+), (?:stage=[^,\s]+, )?train_loss=(?P<loss>{_NUM}), "
        rf"test_loss=(?:{_NUM}), LR=(?P<lr>{_NUM}), time (?P<train_time_s>[\d.]+)s"),
    # FGVC-HERBS: "Start Training 59 Epoch..0%..10%…90%....[success][4623.6682 seconds]" (its
    # own misspelling "sceonds" too): the epoch's seconds
    "herbs_epoch": re.compile(r"\bStart Training (?P<it>\d+) Epoch\.\..*\[success\]"
                              r"\[(?P<elapsed_s>[\d.]+) s\w*onds?\]"),
    # MST (spectral reconstruction): "===> Epoch 222 Complete: Avg. Loss: 0.013878 time: 659.40":
    # the epoch's seconds
    "epoch_complete": re.compile(rf"===> Epoch (?P<it>\d+) Complete: Avg\. Loss: (?P<loss>{_NUM}) "
                                 r"time: (?P<elapsed_s>[\d.]+)"),
    # t5x's trainer (``logging.log_every_n_seconds(INFO, "Training: step %d", 10, step_num)``):
    # "I1115 16:00:39.451247 140641718562816 trainer.py:501] Training: step 198", the step alone;
    # TF scripts' "Training: step 1200, accuracy: 0.98" (not "Starting training: step 0 -> N")
    "training_step": re.compile(r"(?<![A-Za-z] )\b[Tt]raining: step (?P<it>\d+)\b(?!\s*->)"),
    "iter_losses": re.compile(rf"^\s*iter (?P<it>\d+)\s+time/iter: (?P<elapsed_s>[\d.]+)\s+lr: "
                              rf"(?P<lr>{_NUM}).*\blosses: (?P<loss>{_NUM})"),
}
SIMPLE_NEEDLES = (":\tloss_", ": loss_", "epoch: ", "train time:", "model_grad_norm",
                  "[Loss]", "time/iter:", ", step at ", ", loss = ", "loss train:", "Acc_iter ",
                  ", Time ", "[success][", " Complete: Avg. Loss: ", ", train_loss=",
                  "Training: step ", "training: step ")


def parse_simple_step(text: str) -> Row | None:
    """A step line of one of ``SIMPLE_FORMATS``."""
    for rx in SIMPLE_FORMATS.values():
        m = rx.search(text)
        if not m:
            continue
        row: Row = {"iteration": int(m["it"])}
        for k, v in m.groupdict().items():
            if k == "it" or v is None:
                continue
            x = to_float(v)
            if k == "elapsed_ms":
                row["elapsed_s"] = None if x is None else x / 1000.0
            elif k == "it_per_s":
                row["elapsed_s"] = 1.0 / x if x else None
            else:
                row[k] = x
        return row
    return None


# -- OpenNMT-py (legacy) -------------------------------------------------------------------------
ONMT_RE = re.compile(r"\bEpoch\s+\d+,\s+(?P<it>\d+)/\s*(?P<total>\d+); acc:\s*[\d.]+; ppl:\s*"
                     r"(?P<ppl>[\d.]+|nan|inf); (?P<src>[\d.]+) src tok/s; (?P<tgt>[\d.]+) tgt tok/s")


def parse_onmt(text: str) -> Row | None:
    """OpenNMT-py's ``Epoch  2, 52600/733817; acc:  42.20; ppl:  22.37; 998 src tok/s; 1132 tgt
    tok/s;   6234 s elapsed``: tokens/s is source plus target (the batch within the epoch is
    the iteration, as printed)."""
    m = ONMT_RE.search(text)
    if not m:
        return None
    return {"iteration": int(m["it"]), "tokens_per_s": float(m["src"]) + float(m["tgt"])}


# -- epoch/batch trainers (block: the iteration count runs on across epochs) --------------------
# PyTorch's ImageNet example and its many descendants: "Epoch: [11][1/48]\tTime 0.470 (1.206)\t
# Data 0.076 (0.004)\tLoss 3.2168 (37.0903)"; MXNet's Speedometer: "Epoch[0] Batch [20]\tSpeed:
# 95.71 samples/sec\t…", "Iter[0] Batch [10]", "Batch [0-20]"; GluonCV's scripts add the epoch's
# batches: "Epoch[007] Batch [0049]/[3635]\tSpeed: 139.05 samples/sec" (dmlc/web-data's logs).
EPOCH_BATCH_RE = re.compile(
    r"Epoch: \[(?P<epoch>\d+)(?:/\d+)?\]\[\s*(?P<batch>\d+)/(?P<total>\d+)\]"
    r"|(?:Epoch|Iter)\[(?P<mx_epoch>\d+)\] Batch ?\[(?:\d+-)?(?P<mx_batch>\d+)\]"
    r"(?:/\[(?P<mx_total>\d+)\])?"
    r"|\bEpoch(?:\(train\))?\s*\[(?P<mm_epoch>\d+)\]\s*\[\s*(?P<mm_batch>\d+)/(?P<mm_total>\d+)\]"
    r"(?P<mm_rest>.*)"
    r"|\bTrain: \[(?P<sw_epoch>\d+)/\d+\]\[\s*(?P<sw_batch>\d+)/(?P<sw_total>\d+)\](?P<sw_rest>.*)")
# Swin Transformer's main.py and its descendants (VMamba, …): "Train: [29/300][2670/2859]\teta
# 0:01:24 lr 0.000872\t wd 0.0500\ttime 0.4283 (0.4481)\tdata time 0.0008 (0.0122)\t…\tloss
# 2.0148 (1.9972)\tgrad_norm 4.1605 (inf)\tloss_scale 32768.0000 (34681.8180)\tmem 16138MB"
SWIN_FIELD_RE = re.compile(r"(?:^|\t|\s(?=lr ))\s*(?P<k>lr|time|loss|grad_norm|loss_scale) "
                           r"(?P<v>[-+]?[\d.]+(?:[eE][-+]?\d+)?|nan|inf)\b")
SWIN_KEYS = {"lr": "lr", "time": "elapsed_s", "loss": "loss", "grad_norm": "grad_norm",
             "loss_scale": "loss_scale"}
# the value, then its running mean since the start in parentheses ("Time 0.427 (2.561)"): the
# time's mean is ``elapsed_mean_s`` (Swin's "time 0.4283 (0.4481)" alike)
AVG_METER_RE = re.compile(r"\b(?P<k>Time|Loss)\s+(?P<v>[-+\d.eE]+|nan|inf)\s+\("
                          r"(?:\s*(?P<mean>[-+\d.eE]+|nan|inf)\s*\))?")
SWIN_TIME_MEAN_RE = re.compile(r"(?:^|\t)\s*time [-+\d.eE]+ \((?P<mean>[-+\d.eE]+)\)")
MX_SPEED_RE = re.compile(r"Speed: (?P<v>[\d.]+) samples/sec")


class EpochBatchParser:
    """Epoch/batch step lines (``EPOCH_BATCH_RE``). The first epoch in the stream counts from
    its printed batch number, after the earlier epochs where it prints its total; each later
    epoch continues after the previous one's length (its total, else its last batch); an epoch
    that goes back starts the count again from that epoch (a second launch, a resume)."""

    needles = ("Epoch: [", "Epoch[", "Iter[", "Epoch [", "Epoch(train)", "Train: [")
    tables = ("iterations",)
    section: str | None = None  # always None: each line is a record of its own

    def __init__(self) -> None:
        self.section: str | None = None
        self.epoch: int | None = None
        self.offset = 0
        self.length = 0

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return its ``iterations`` row when it is a step line."""
        self.section = None
        if not any(map(text.__contains__, self.needles)):
            return []
        m = EPOCH_BATCH_RE.search(text)
        if not m:
            return []
        mm = None
        # the epoch a run starts with, where the format fixes it: 0 in MXNet's Speedometer and
        # Swin's lines
        first_epoch: int | None = 0
        if m["sw_epoch"] is not None:  # Swin's "Train: [29/300][2670/2859]\t… loss 2.01 (1.99)"
            mm = {SWIN_KEYS[f["k"]]: to_float(f["v"])
                  for f in SWIN_FIELD_RE.finditer(m["sw_rest"])}
            if (tm := SWIN_TIME_MEAN_RE.search(m["sw_rest"])) is not None:
                mm["elapsed_mean_s"] = to_float(tm["mean"])
            if "loss" not in mm and "grad_norm" not in mm:
                return []
            epoch, batch, total = int(m["sw_epoch"]), int(m["sw_batch"]), int(m["sw_total"])
        elif m["mm_epoch"] is not None:  # mmengine/mmcv: "Epoch(train) [1][240/735]  lr: …"
            mm = mm_fields(m["mm_rest"])
            if mm is None:
                return []
            epoch, batch, total = int(m["mm_epoch"]), int(m["mm_batch"]), int(m["mm_total"])
            first_epoch = 1  # (mmengine and mmcv print epochs from 1)
        else:
            if m["epoch"] is not None:
                # "Epoch: [11][1/48]" counts from 0 (PyTorch's ImageNet example) or from 1
                # (deepspeech.pytorch): no epochs before the first are counted
                first_epoch = None
            epoch = int(m["epoch"] if m["epoch"] is not None else m["mx_epoch"])
            batch = int(m["batch"] if m["batch"] is not None else m["mx_batch"])
            total = (int(m["total"]) if m["total"] else
                     int(m["mx_total"]) if m["mx_total"] else None)
        if self.epoch is None:
            self.epoch = epoch
            if total and first_epoch is not None and epoch > first_epoch:
                # a log that starts in a later epoch (a resumed run, a file's tail): the epochs
                # before it, as long as this one, come first (GluonCV's slowfast log from
                # "Epoch[088] Batch [0049]/[0606]": epoch 116's batch 49 is step 70,345)
                self.offset = (epoch - first_epoch) * total
        elif epoch < self.epoch:
            # the epoch went back: the job started again (a second launch appended to the
            # log, "Epoch[0]" after "Epoch[139]": GluonCV's simple-pose log of an 8-GPU run,
            # then a 1-GPU one) or resumed from an earlier epoch's checkpoint: its steps count
            # from that epoch again, so that the restart shows as the step going back
            self.offset = (epoch - (first_epoch or 0)) * (total or self.length)
            self.epoch, self.length = epoch, 0
        elif epoch != self.epoch:
            self.offset += self.length
            self.epoch, self.length = epoch, 0
        self.length = max(self.length, total or batch)
        row: Row = {"iteration": self.offset + batch, "epoch": float(epoch), "_ctx": ctx}
        if total and not m["mx_total"]:  # "[1][53/4405]": this epoch ends at its total,
            # counted on like the step (GluonCV's batches of an epoch vary by one between
            # epochs, "/[3635]" then "/[3636]": no plan of the run)
            row["total_iterations"] = self.offset + total
        if mm is not None:
            row.update(mm)
            return [("iterations", row)]
        for f in AVG_METER_RE.finditer(text):
            row["elapsed_s" if f["k"] == "Time" else "loss"] = to_float(f["v"])
            if f["k"] == "Time" and f["mean"] is not None:
                row["elapsed_mean_s"] = to_float(f["mean"])
        sp = MX_SPEED_RE.search(text)
        if sp:
            row["samples_per_s"] = float(sp["v"])
        if len(row) <= 3:
            return []  # no value: an eval or info line that names the epoch
        return [("iterations", row)]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: nothing pending."""
        return []


# Trainers that log an epoch on two lines, its loss then its time: (the epoch line, the time
# line, seconds per unit of the time). The epoch is the iteration, a row of ``event="epoch"``: a
# step where nothing else counts steps (``diagnose.common.epoch_counted``), else the epoch's own
# time (``diagnose.throughput.series.epoch_rates``).
EPOCH_TIME_FORMATS: dict[str, tuple[re.Pattern[str], re.Pattern[str], float]] = {
    # TensorFlow tutorials: "Epoch: 0001 cost= 29.860479714" then "time this epoch= 1.749361"
    "tf_epoch": (re.compile(r"\bEpoch: (?P<epoch>\d+) cost= (?P<loss>[-+\d.eE]+|nan|inf)"),
                 re.compile(r"\btime this epoch= (?P<t>[\d.]+)"), 1.0),
    # PyG's GraphSAGE examples as Ginex runs them (SNU-ARC/Ginex#6): "Epoch 04, Loss: 1.5548,
    # Approx. Train: 0.5532" then "Epoch time: 441110.5313 ms"
    "pyg_epoch_ms": (re.compile(r"\bEpoch (?P<epoch>\d+), Loss: (?P<loss>[-+\d.eE]+|nan|inf), "
                                r"Approx\. Train: "),
                     re.compile(r"^\s*Epoch time: (?P<t>[\d.]+) ms\b"), 1e-3),
    # TensorFlow's text tutorials and their copies: the Transformer's "Epoch 1 Loss 3.3870
    # Accuracy 0.0524" then "Time taken for 1 epoch: 630.2422263622284 secs"
    # (tensorflow/tensorflow#28621), NMT with attention's "Epoch 1 Loss 2.0395" then "Time taken
    # for 1 epoch 22.83 sec"
    "tf_tutorial_epoch": (
        re.compile(r"^\s*Epoch (?P<epoch>\d+) Loss (?P<loss>[-+\d.eE]+|nan|inf)"
                   r"(?: Accuracy [-+\d.eE]+)?\s*$"),
        re.compile(r"^\s*Time taken for (?:1 epoch|epoch \d+):? (?:is )?(?P<t>[\d.]+) secs?\b"), 1.0),
    # MindSpore's LossMonitor then TimeMonitor at the epoch's end (mindspore/train/callback:
    # "epoch: 2 step: 62, loss is 2.2144224643707275" then "epoch time: 8893.936 ms, per step
    # time: 143.451 ms"; ModelArts scripts prefix "Train "; copies print the epoch in seconds,
    # "epoch time: 185.432 s, per step time: 23178.955 ms", or no unit, milliseconds, "epoch
    # time: 140522.500, per step time: 224.836, avg loss: 5.258"): the time is the epoch's
    # step's, as the monitor divides it (in seconds where the line says "s")
    "mindspore_monitor": (
        re.compile(r"^\s*epoch: (?P<epoch>\d+),? step: (?P<step>\d+), loss is (?P<loss>[-+\d.eE]+|nan|inf)"),
        re.compile(r"\b[Ee]poch time:\s*+[\d.]++\s*+(?:ms|s)?, per step time:\s*+(?P<t>[\d.]++)"
                   r"\s*+(?P<u>ms|s)?(?![\w.])"), 1e-3),
}


# formats whose epoch line is a step line of its own where no time line follows it: MindSpore's
# LossMonitor prints every ``per_print_times`` steps ("epoch: 1 step: 1, loss is 2.30", …),
# TimeMonitor once, after the epoch's last step
STEP_HEADS = frozenset({"mindspore_monitor"})


class EpochTimeParser:
    """An epoch line of ``EPOCH_TIME_FORMATS`` followed by its time line: one row per epoch.
    Where a format's epoch lines are steps (``STEP_HEADS``) and several come before a time
    line, each is a step row (its step of the epoch) and the time line closes the epoch."""

    needles = ("Epoch: ", "time this epoch=", "Approx. Train: ", "Epoch time: ", "Epoch ",
               "Time taken for ", "epoch: ", "per step time: ")
    tables = ("iterations",)
    section: str | None = None  # the format's name between an epoch line and its time line

    def __init__(self) -> None:
        self.section: str | None = None
        self.row: Row | None = None
        self.stepped = False  # a step row was read of a ``STEP_HEADS`` format

    def _step_row(self) -> list[tuple[str, Row]]:
        """The pending epoch line as the step line it is (``STEP_HEADS``), else nothing."""
        row = self.row
        if row is None or self.section not in STEP_HEADS or row.get("_step") is None:
            return []
        self.stepped = True
        return [("iterations", {"iteration": row["_step"], "epoch": row["epoch"],
                                "loss": row["loss"], "_ctx": row["_ctx"]})]

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the epoch's row once its time is read."""
        for name, (head, _, _) in EPOCH_TIME_FORMATS.items():
            m = head.search(text)
            if m:
                out = self._step_row()
                step = m.groupdict().get("step")
                self.row = {"iteration": int(m["epoch"]), "epoch": float(m["epoch"]),
                            "event": EPOCH_EVENT, "loss": to_float(m["loss"]), "_ctx": ctx,
                            "_step": int(step) if step is not None else None}
                self.section = name
                return out
        fmt = EPOCH_TIME_FORMATS.get(self.section) if self.row is not None else None
        t = fmt[1].search(text) if fmt else None
        out = self._step_row() if t and self.stepped else []
        row, self.row, self.section = self.row, None, None
        if t and row is not None and fmt is not None:
            row.pop("_step", None)
            row["elapsed_s"] = float(t["t"]) * (1.0 if t.groupdict().get("u") == "s" else fmt[2])
            if out:  # the loss is its step row's; the epoch's row is its time
                row.pop("loss")
            return [*out, ("iterations", row)]
        return []

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: an epoch without its time line is dropped (a step line is kept)."""
        out = self._step_row()
        self.row, self.section = None, None
        return out


# -- the text progress bar of kuangliu/pytorch-cifar and its copies -----------------------------
# utils.progress_bar(batch, total, msg), printed under an epoch's header ("Epoch: 0"; GLPDepth's
# "Epoch: 011 - 025"): " [=====>…]  Step: 88ms | Tot: 34s394ms | Loss: 1.626 | Acc: 40.172%
# (20086/50000) 391/391 " (vinthony/GLPDepth: "St 6057/6057  Tot: 41m50s | Rem: 10h28s |
# Depth Loss: 0.1365 (0.0447)", its counter inside the bar when a redraw garbles it). The
# message's loss is the epoch's running mean; the bar at its last batch closes the epoch (its
# first such bar: the ones after it are the test loop's).
BAR_HEADER_RE = re.compile(r"^\s*Epoch\s*+[:#]?\s*+(?P<e>\d++)\s*+(?:(?:/|-|of)\s*+\d++)?\s*$",
                           re.IGNORECASE)
BAR_LINE_RE = re.compile(r"^\s*\[[=>.\- ]*+[^\]|]*+\]?[^|]*?(?:\|\s*)?\bTot:\s*(?P<tot>[\dDhms]+)\s*\|")
BAR_COUNT_RE = re.compile(r"(?<![(\d/])(?P<n>\d+)/(?P<t>\d+)(?![\d/)])")
BAR_LOSS_RE = re.compile(r"\bLoss:\s*+(?P<v>[-+]?\d++\.?\d*+(?:[eE][-+]?\d+)?|nan|inf)\b",
                         re.IGNORECASE)
BAR_TIME_RE = re.compile(r"^(?:(?P<D>\d+)D)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m(?!s))?"
                         r"(?:(?P<s>\d+)s)?(?:(?P<ms>\d+)ms)?$")
BAR_TIME_S = {"D": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3}


def bar_seconds(text: str) -> float | None:
    """pytorch-cifar's ``format_time`` ("34s394ms", "41m50s", "1D2h") in seconds."""
    m = BAR_TIME_RE.match(text)
    if m is None or not any(m.groupdict().values()):
        return None
    return sum(int(v) * BAR_TIME_S[k] for k, v in m.groupdict().items() if v)


class EpochBarParser:
    """An epoch's header, then pytorch-cifar's progress bars: one ``event="epoch"`` row per
    epoch at its first bar that reaches its total, with the message's loss and the bar's total
    time (the epoch's training time)."""

    needles = ("Epoch", "epoch", "EPOCH", "Tot:")
    tables = ("iterations",)
    section: str | None = None  # always None: the header and the bar each hold a needle, and
    # the lines between them are the generic reader's (an epoch header no bar follows is its)

    def __init__(self) -> None:
        self.epoch: int | None = None
        self.ctx: object = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the epoch's row at its training bar's last batch."""
        if (h := BAR_HEADER_RE.match(text)) is not None:
            self.epoch, self.ctx = int(h["e"]), ctx
            return []
        if self.epoch is None or (m := BAR_LINE_RE.match(text)) is None:
            return []
        counts = list(BAR_COUNT_RE.finditer(text))
        loss = BAR_LOSS_RE.search(text)
        if not counts or counts[-1]["n"] != counts[-1]["t"] or loss is None:
            return []
        row: Row = {"iteration": self.epoch, "epoch": float(self.epoch), "event": EPOCH_EVENT,
                    "loss": to_float(loss["v"]), "_ctx": self.ctx}
        if (t := bar_seconds(m["tot"])) is not None:
            row["elapsed_s"] = t
        self.epoch = None
        return [("iterations", row)]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: an epoch whose bar never ended gives no row."""
        self.epoch = None
        return []


# -- RLlib's result: the YAML of one training iteration ------------------------------------------
RLLIB_TD = "_td_error"  # (a stand-in: the loss only where the result prints no total_loss)
# Ray Tune's "Result for DQN_shogi_96499_00000:" and RLlib's pretty_print(algo.train()) print a
# training iteration's result as YAML, its learner's stats nested under info/learner/<policy>/
# learner_stats ("grad_gnorm: 21.57", "total_loss: 0.35", "cur_lr: 0.0005") and the iteration's
# own count last, at the top level ("training_iteration: 11"; corpus
# loss_spike-shogi-rl-rllib-dqn-q-divergence, its nohup.out)
# A DQN-family learner logs no total_loss: its objective is the TD error's (Huber) loss, and the
# stats it prints of it, "mean_td_error" (beside "mean_q", "max_q"), is what diverges when the
# Q-values blow up (the shogi DQN: 0.065, 0.18, 20.4, 906 by iteration 15; RLlib 0.8's
# CartPole DQN on a Cray cluster, r7i7n35: "mean_td_error: -1.207885503768921" in
# info/learner/default_policy): the loss where no total_loss is printed
RLLIB_ITERATION_RE = re.compile(r"^\s*training_iteration:\s*(?P<n>\d+)\s*$")
RLLIB_STAT_RE = re.compile(
    r"^\s*(?P<k>grad_gnorm|total_loss|mean_td_error|cur_lr):\s*"
    r"(?P<v>[-+]?(?:\d++\.?\d*(?:[eE][-+]?\d+)?|\.nan|\.inf)|nan|inf)\s*$")
RLLIB_COLUMNS = {"grad_gnorm": "grad_norm", "total_loss": "loss", "cur_lr": "lr",
                 "mean_td_error": RLLIB_TD}


def _yaml_float(v: str) -> float | None:
    """A YAML scalar as a float (PyYAML writes NaN and infinity as ``.nan``, ``.inf``)."""
    return to_float(v.replace(".nan", "nan").replace(".inf", "inf"))


class RLlibResultParser:
    """RLlib's result YAML: the learner's stats of one training iteration, a row at its
    ``training_iteration`` line (the first policy's stats where several learn; a DQN's mean TD
    error its loss where no ``total_loss`` is printed)."""

    needles = ("training_iteration:", "grad_gnorm:", "total_loss:", "mean_td_error:", "cur_lr:")
    tables = ("iterations",)
    section: str | None = None  # always None: the stats wait for their iteration's line

    def __init__(self) -> None:
        self.section: str | None = None
        self.stats: Row = {}

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the iteration's row at its ``training_iteration``."""
        if (m := RLLIB_STAT_RE.match(text)) is not None:
            self.stats.setdefault(RLLIB_COLUMNS[m["k"]], _yaml_float(m["v"]))
            return []
        if (m := RLLIB_ITERATION_RE.match(text)) is None:
            return []
        stats, self.stats = self.stats, {}
        if RLLIB_TD in stats:
            td = stats.pop(RLLIB_TD)
            stats.setdefault("loss", td)
        if not stats:  # a result with no learner stats: the iteration alone is no series' point
            return []
        return [("iterations", {"iteration": int(m["n"]), **stats, "_ctx": ctx})]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: stats without their iteration are dropped."""
        self.stats = {}
        return []


# -- RSL-RL's on-policy runner (legged_gym, Isaac Lab, unitree_rl_lab): one block an iteration --
# "Learning iteration 119/12000" centred under a line of '#', then its stats right-aligned
# before a colon: "Value function loss: 22.3836", "Surrogate loss: -0.0080" (rsl_rl 1.x,
# legged_gym), "Mean value_function loss: inf", "Mean surrogate loss: 0.0000" (rsl_rl 2.x,
# unitree_rl_lab#107), "Iteration time: 6.20s" after a dashed line. The value function's loss
# is the one that diverges (a critic fed exploding returns): the block's ``loss``; a non-finite
# value in either loss is the iteration's NaN.
RSL_ITERATION_RE = re.compile(r"^\s*+Learning iteration (?P<n>\d+)/(?P<total>\d+)\s*$")
RSL_STAT_RE = re.compile(
    r"^\s*+(?P<k>(?:Mean )?(?:[Vv]alue[ _]function|surrogate|Surrogate) loss|Iteration time)"
    r":\s*+(?P<v>[-+]?(?:nan|inf)|[-+]?\d++(?:\.\d+)?(?:[eE][-+]?\d+)?)(?P<u>s)?\s*$")


class RslRlIterationParser:
    """RSL-RL's iteration block: a row at the next block's heading (or the end of the
    stream) with the iteration, the value function's loss, NaN where a loss is not finite,
    and the iteration's time."""

    needles = ("Learning iteration ",)
    tables = ("iterations",)
    section: str | None = None  # "rsl_rl" inside a block

    def __init__(self) -> None:
        self.section: str | None = None
        self.row: Row | None = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the previous block's row at the next heading."""
        if (m := RSL_ITERATION_RE.match(text)) is not None:
            out = self.close()
            self.row = {"iteration": int(m["n"]), "total_iterations": int(m["total"]), "_ctx": ctx}
            self.section = "rsl_rl"
            return out
        if self.row is None or (m := RSL_STAT_RE.match(text)) is None:
            return []
        value = to_float(m["v"])
        if value is None:
            return []
        if m["k"] == "Iteration time":
            self.row["elapsed_s"] = value
            return []
        if not math.isfinite(value):
            self.row["nan"] = 1
        if "urrogate" not in m["k"]:
            self.row["loss"] = value
        return []

    def close(self) -> list[tuple[str, Row]]:
        """The block read so far, as a row (a heading with no loss is no series' point)."""
        row, self.row, self.section = self.row, None, None
        if row is None or ("loss" not in row and "nan" not in row):
            return []
        return [("iterations", row)]


# -- Keras fit(): "Epoch 2/500", then the epoch's last progress line ---------------------------
# (Keras 0.x numbered its epochs from 0 and printed no total: "Epoch 0", keras-team/keras#21)
KERAS_EPOCH_RE = re.compile(r"^\s*Epoch (?P<e>\d+)(?P<tot>/\d+)?\s*$")
# the epoch's closing line, verbose 2 or 1: "7/7 - 0s - loss: 5.1108 - accuracy: 0.0251 - …",
# "1000/1000 [=====] - 1873s 2s/step - loss: 0.2 - val_loss: 0.3"; a line still counting
# batches (n < total, an "ETA:") is no epoch's end
# (Keras 3: "1875/1875 ━━━━━━━━━━━━━━━━━━━━ 5s 2ms/step - accuracy: 0.8706 - loss: 0.4351", its
# metrics in the order they were compiled, the loss not always first)
KERAS_END_RE = re.compile(r"(?:^|\r)\s*(?P<n>\d+)/(?P=n)\s+(?:(?:\[[=>.]*\]\s+)?-\s+|━+\s+)\d+s\b"
                          r"(?:(?!\r).)*?\s-\s+loss:\s*(?P<loss>[-+\d.eE]+|nan|inf)\b(?!(?:(?!\r).)*\r)")
# verbose 2 before Keras 2.3 printed no batch count, only the epoch's seconds: Keras 2.0-2.2
# " - 122s - loss: 1.5673 - acc: 0.4115 - val_loss: …" (keras/utils/generic_utils.py Progbar,
# verbose 2), Keras 0.x-1.x "5s - loss: 0.4955 - acc: 0.8078"
KERAS_V2_END_RE = re.compile(r"^\s*(?:-\s+)?\d+s\s+(?:\d+(?:ms|us|s)/step\s+)?-\s+loss:\s*"
                             r"(?P<loss>[-+\d.eE]+|nan|inf)\b")
# Paddle's hapi ProgressBar (paddle/hapi/progressbar.py, verbose 2): "step  10/614 - loss: 0.1195
# - AUROC_Mass: 0.8939 - 3s/step", under Keras's own "Epoch 1/10" heading
HAPI_STEP_RE = re.compile(r"\s*step\s+\d+/\d+\s+-\s")
KERAS_VAL_RE = re.compile(r"\s-\s+val_loss:\s*(?P<v>[-+\d.eE]+|nan|inf)\b")


class KerasEpochParser:
    """Keras ``fit`` output: ``Epoch N/M`` and the epoch's closing progress line (its averaged
    loss): one row per epoch, the epoch as the iteration (Keras logs no step of its own)."""

    needles = ("Epoch ", " - loss: ")
    tables = ("iterations",)
    section: str | None = None  # "keras_epoch" between an epoch heading and its closing line

    def __init__(self) -> None:
        self.section: str | None = None
        self.epoch: int | None = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the epoch's row at its closing line."""
        if (m := KERAS_EPOCH_RE.match(text)) is not None:
            # a heading with no total ("Epoch 453": nnU-Net's, a custom loop's) opens no section:
            # the lines after it stay the other readers' until a Keras closing line comes
            self.epoch, self.section = int(m["e"]), "keras_epoch" if m["tot"] else None
            return []
        if self.section is not None and (("%|" in text and TQDM_RE.search(text))
                                         or HAPI_STEP_RE.match(text)):
            # a custom loop's own "Epoch 1/3" heading above its tqdm bar, not Keras's (thunder-1:
            # "Epoch 1/3" then "Training:   4%|▍  | 101/2500 [00:53<28:19, 1.41it/s, MSE=…]",
            # AdrianTuci1/thunder-1 training_prefixlm.log): no epoch of Keras is open, and the
            # bar's steps are the step readers' again); Paddle's hapi ``Model.fit`` heads its
            # epochs so too, its progress lines its own ("step  10/614 - loss: 0.1195 - … -
            # 3s/step", HAPI_STEP_RE): ``metric_lines.HapiParser``'s rows
            self.epoch, self.section = None, None
            return []
        if self.epoch is None or " - loss: " not in text or (
                m := KERAS_END_RE.search(text) or KERAS_V2_END_RE.match(text)) is None:
            return []
        # no elapsed_s and no total: the epoch's seconds are no iteration's time, and the epochs
        # planned no count of the batch steps the throughput runbook times (the progress table
        # keeps the line's timing, parse.progress.parse_keras)
        row: Row = {"iteration": self.epoch, "loss": to_float(m["loss"]), "_ctx": ctx}
        if (v := KERAS_VAL_RE.search(text, m.end())) is not None:
            row["eval_loss"] = to_float(v["v"])
        self.epoch, self.section = None, None
        return [("iterations", row)]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: nothing pending."""
        self.epoch, self.section = None, None
        return []


# -- Pythia (MMF's predecessor) -----------------------------------------------------------------
PYTHIA_RE = re.compile(r"^iter: (?P<it>\d+) (?P<rest>.*?)\btime\(s\): (?P<t>[\d.]+) ?s\b")
PYTHIA_LOSS_RE = re.compile(r"\btrain_loss: (?P<v>[-+\d.eE]+|nan|inf)\b")


def parse_pythia(text: str) -> Row | None:
    """Pythia's ``iter: 100 train_loss: 3.6883 … time(s): 307.7 s``: the time is the whole
    logging interval's (``interval_s``), not one iteration's."""
    m = PYTHIA_RE.search(text)
    if not m:
        return None
    row: Row = {"iteration": int(m["it"]), "interval_s": float(m["t"])}
    loss = PYTHIA_LOSS_RE.search(m["rest"])
    if loss:
        row["loss"] = to_float(loss["v"])
    return row


# -- mmengine / mmcv ---------------------------------------------------------------------------
MMENGINE_RE = re.compile(r"\bIter\(train\)\s*\[\s*(?P<it>\d+)/(?P<itotal>\d+)\](?P<rest>.*)")
MM_FIELD_RE = re.compile(r"(?<![\w.])(?P<k>lr|loss|grad_norm|time):\s*"
                         r"(?P<v>[-+]?(?:\d++\.?\d*(?:[eE][-+]?\d+)?|nan|inf))", re.IGNORECASE)
MM_KEYS = {"lr": "lr", "loss": "loss", "grad_norm": "grad_norm", "time": "elapsed_s"}


def mm_fields(rest: str) -> Row | None:
    """lr, loss, grad norm and time of an mmengine/mmcv runner line; None when it has neither
    a loss nor a grad norm (an eval or info line that only names the epoch)."""
    fields = {f["k"]: f["v"] for f in MM_FIELD_RE.finditer(rest)}
    if "loss" not in fields and "grad_norm" not in fields:
        return None
    return {col: to_float(fields[k]) for k, col in MM_KEYS.items() if k in fields}


def parse_mmengine(text: str) -> Row | None:
    """An mmengine iteration-based runner line ``Iter(train) [ 50/1000]  lr: …  loss: …`` (the
    epoch-based ``Epoch(train) [1][240/735]`` is ``EpochBatchParser``'s)."""
    m = MMENGINE_RE.search(text)
    if not m:
        return None
    vals = mm_fields(m["rest"])
    if vals is None:
        return None
    return {"iteration": int(m["it"]), "total_iterations": int(m["itotal"]), **vals}


# -- per-epoch JSON lines (DeiT's log.txt and the many vision repos that copied it) ------------
JSON_EPOCH_NEEDLE = '"train_loss": '


def parse_json_epoch(text: str) -> Row | None:
    """DeiT's ``{"train_lr": 0.00076, "train_loss": 3.7598, …, "epoch": 98, …}``: one row per
    epoch (the epoch is the iteration)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        d = json.loads(text[start:end + 1])
    except ValueError:
        return None
    if not isinstance(d, dict) or not isinstance(d.get("epoch"), int):
        return None
    loss = d.get("train_loss")
    if not isinstance(loss, (int, float)) or isinstance(loss, bool):
        return None
    lr = d.get("train_lr")
    return {"iteration": d["epoch"], "epoch": float(d["epoch"]), "loss": float(loss),
            "lr": float(lr) if isinstance(lr, (int, float)) and not isinstance(lr, bool) else None}


# -- fp16 overflow: a skipped step ------------------------------------------------------------
# apex's FP16_Optimizer (apex/fp16_utils/fp16_optimizer.py) prints "OVERFLOW! Skipping step.
# Attempted loss scale: 4294967296, reducing to 2147483648" with no "[deepspeed]" tag; DeepSpeed's
# FP16_Optimizer (deepspeed/runtime/fp16/fused_optimizer.py, deepspeedai/DeepSpeed#697): "[Rank 0]
# Overflow detected. Skipping step. Attempted loss scale: 8.0, reducing to 4.0"
OVERFLOW_RE = re.compile(
    r"(?:\[deep(?:speed|scale)\] (?:OVERFLOW!|fp16 dynamic loss scale overflow!)|"
    r"Gradient overflow\.|OVERFLOW!|Overflow detected\.)\s*(?:Rank \d+ )?Skipping step[.,]?\s*"
    r"(?:Attempted loss scale: (?P<att>[\d.]+)(?:, reducing to (?P<to>[\d.]+))?|"
    r"Reducing loss scale to (?P<to2>[\d.]+)|loss scaler \d+ reducing loss scale to (?P<to3>[\d.]+))?"
)
GRAD_OVERFLOW_RE = re.compile(r"\bGrad overflow on iteration:?\s*(?P<it>\d+)")
# fairseq's FP16Optimizer: "| WARNING: overflow detected, setting loss scale to: 0.03125" (the
# update is skipped); since 0.10 its trainer: "NOTE: gradient overflow detected, ignoring gradient,
# setting loss scale to: 64.0"
FAIRSEQ_OVERFLOW_RE = re.compile(r"\boverflow detected, (?:ignoring gradient, )?setting loss scale to: "
                                 r"(?P<to>[\d.]+(?:[eE][-+]?\d+)?)")
# a loss scaler that halves its scale after an overflow and says so, naming no step (the update
# is skipped): PaddleNLP's Trainer (paddlenlp/trainer/trainer.py, PaddlePaddle/PaddleNLP#7537:
# "optimizer not run, scale_before: 0.25, scale_after: 0.125"), Paddle's static-graph AMP
# decorator (fluid/contrib/mixed_precision/decorator.py: "Found inf or nan, current scale is:
# 32768.0, decrease to: 32768.0*0.5"), mmcv's Fp16OptimizerHook (mmcv/runner/hooks/optimizer.py:
# "Check overflow, downscale loss scale to 256.0")
SCALE_DOWN_RE = re.compile(
    r"\boptimizer not run, scale_before: [-+\d.eE]+, scale_after: (?P<to>[-+\d.eE]+)|"
    r"\bFound inf or nan, current scale is: [-+\d.eE]+, decrease to: (?P<to2>[-+\d.eE]+)"
    r"(?:\s*\*\s*(?P<by>[-+\d.eE]+))?|"
    r"\bCheck overflow, downscale loss scale to (?P<to3>[-+\d.eE]+)")
# a trainer's own guard (minFM): "Step 1557: detected nan/inf/spiky gradient
# (norm=2.1966569423675537); skipping optimizer step."
SKIP_STEP_RE = re.compile(r"\b[Ss]tep (?P<it>\d+):.*\bskipping (?:the )?optimizer step")
# deepspeech.pytorch's guard (train.py), after its "WARNING: received a nan loss, setting loss
# value to 0": "Skipping grad update", a line of its own that names no step
SKIP_UPDATE_RE = re.compile(r"^\s*Skipping grad update\.?\s*$")


# ColossalAI's optimizers, a skipped step that names none: ShardedOptimizerV2's "found inf during
# ShardedOptimV2 step" and ZeroOptimizer/LowLevelZeroOptimizer's "Found overflow. Skip step",
# both through its rich console logger, which wraps a long line at the console width and
# indents the rest to the message column ("… - WARNING: found" / "    inf during ShardedOptimV2
# step")
COLOSSAL_SKIP_PHRASES = ("found inf during ShardedOptimV2 step", "Found overflow. Skip step")
COLOSSAL_SKIP_RE = re.compile(r"\b(?:found\s+inf\s+during\s+ShardedOptimV2\s+step|"
                              r"Found\s+overflow\.\s+Skip\s+step)\b")
# the record's start: the logger's "<name> - <LEVEL>: " then the message's first word
COLOSSAL_SKIP_START_RE = re.compile(r" - (?:WARNING|INFO): (?P<msg>(?:found|Found)\b.*?)\s*$")


def _colossal_skip_message(text: str) -> str | None:
    """The note's message so far, its whitespace collapsed (None: no ColossalAI note)."""
    m = COLOSSAL_SKIP_START_RE.search(text)
    return None if m is None else " ".join(m["msg"].split())


def colossal_skip_incomplete(text: str) -> bool:
    """A ColossalAI skip note that rich wrapped: the line ends inside one of its phrases."""
    msg = _colossal_skip_message(text)
    return msg is not None and not COLOSSAL_SKIP_RE.search(text) \
        and any(p.startswith(msg) and p != msg for p in COLOSSAL_SKIP_PHRASES)


def colossal_skip_continues(record: str, body: str) -> bool:
    """Rich's continuation (its indent is gone by now): a line that carries the phrase on."""
    msg = _colossal_skip_message(f"{record.rstrip()} {body.strip()}")
    return msg is not None and any(p.startswith(msg) for p in COLOSSAL_SKIP_PHRASES)


def parse_colossal_skip(text: str) -> Row | None:
    """A skipped step from ColossalAI's optimizer (no step named)."""
    return {"skipped": 1} if COLOSSAL_SKIP_RE.search(text) else None


def parse_overflow(text: str) -> Row | None:
    """A skipped optimizer step: an fp16 overflow (the loss scale it fell to) or a trainer's own
    guard that names the step."""
    m = GRAD_OVERFLOW_RE.search(text) or SKIP_STEP_RE.search(text)
    if m:
        return {"iteration": int(m["it"]), "skipped": 1}
    if SKIP_UPDATE_RE.match(text):
        return {"skipped": 1}
    m = FAIRSEQ_OVERFLOW_RE.search(text)
    if m:
        return {"skipped": 1, "loss_scale": to_float(m["to"])}
    m = SCALE_DOWN_RE.search(text)
    if m:
        scale = to_float(m["to"] or m["to2"] or m["to3"])
        if scale is not None and m["by"] and (by := to_float(m["by"])) is not None:
            scale *= by
        return {"skipped": 1, "loss_scale": scale}
    m = OVERFLOW_RE.search(text)
    if not m:
        return None
    scale = to_float(m["to"] or m["to2"] or m["to3"] or m["att"])
    return {"skipped": 1, "loss_scale": scale}


# -- a NaN/inf warning that names no step ------------------------------------------------------
# "Loss is nan, stopping training" (DEIM, GreenMIM, MAE-style engines), TF estimator's
# NanTensorHook "Model diverged with loss = NaN.": the runbook places it after the last step
# logged before it (common.place_unnumbered_skips)
# deepspeech.pytorch's check_loss: "WARNING: received a nan loss, setting loss value to 0" (and
# "received an inf loss")
# Megatron-Core's checks before the data-parallel reduction (--check-for-nan-in-loss-and-grad,
# NVIDIA/Megatron-LM pretrain_gpt.py loss_func, megatron/core/distributed/param_and_grad_buffer.py):
# "Rank 3: found NaN in local forward loss calculation. Device: 3, node: …", "Rank 0: found NaN
# in local grad norm in backward pass before data-parallel communication collective. …" (also
# "found Inf in local …"); Keras's TerminateOnNaN callback (keras/callbacks): "Batch 5: Invalid
# loss, terminating training" (the batch of the epoch, no step); tensorboardX's x2num check on a
# scalar it is given to log ("Warning: NaN or Inf found in input tensor.", also through the
# logging module as "WARNING:root:NaN or Inf found in input tensor."; MEmoBert's apex run, a
# GLPDepth reproduction, fairseq's wav2vec2 fine-tune: the logged loss was NaN or inf)
NAN_WARNING_RE = re.compile(
    r"\b(?:(?:loss (?:is|became|becomes)|diverged with loss =) (?:nan|inf)\b|"
    r"NaN or Inf found in input tensor\b|"
    r"received an? (?:nan|inf) loss\b|"
    r"found (?:nan|inf) in local (?:forward loss|grad norm)\b|"
    r"Invalid loss, terminating training\b)", re.IGNORECASE)
# a line that names its step is a step line (the generic reader's), not an unplaced warning
NAMES_A_STEP_RE = re.compile(r"\b(?:step|iter(?:ation)?|epoch)\s*+[:=#]?\s*+\[?\s*\d", re.IGNORECASE)
# Megatron-Core's rerun state machine names the iteration it was running
# (megatron/core/rerun_state_machine.py validate_result: f"Rank {rank}, node {node}, device
# {device}, iteration {iteration}: Unexpected result {result} (message='{message}')", the result
# a tensor: "tensor(nan, device='cuda:3')"): a NaN/inf result is that iteration's (a spiky loss,
# a finite result, is none)
RERUN_NAN_RE = re.compile(
    r"\biteration (?P<it>\d+): Unexpected result (?:tensor\()?[-+]?(?:nan|inf)\b", re.IGNORECASE)


# a training loop's own guard that names the step it found the NaN/inf at, and whether it skipped
# that step's update: "[WARNING] NaN loss detected at step 816! Skipping step."
# (AdrianTuci1/thunder-1 training_prefixlm.log), "❌ NaN/Inf detected in text_loss at step 42!"
# (intrinsicD/DeepLearning2 archive/NAN_LOSS_FIXED.md), "Loss became NaN at step 342"
# (vikasjangidmk/Inventam-Task docs/diagnosis.md); "… at batch 5" (a batch of the epoch) is
# no step of the run
NAN_AT_STEP_RE = re.compile(
    r"(?:\b(?:nan|inf|nan/inf|inf/nan|non-finite)\s+(?:loss|grad(?:ient)?s?(?:\s+norm)?)\s+"
    r"(?:detected|found|encountered)|"
    r"\b(?:nan|inf|nan/inf|inf/nan|non-finite)\s+(?:detected|found)\s+in\s+[\w.]+|"
    r"\bloss\s+(?:is|was|became|becomes)\s+(?:nan|inf|non-finite))"
    r"\s+(?:at|on|in)\s+(?:the\s+)?(?:global\s+)?(?:step|iteration|iter)\s*+[:=#]?\s*(?P<it>\d+)\b",
    re.IGNORECASE)
# the guard's skip of that step: "Skipping step.", "skipping this batch", "skip the update"
SKIPS_IT_RE = re.compile(r"\bskip(?:ping|ped)?\s+(?:this\s+|the\s+)?(?:current\s+)?"
                         r"(?:optimizer\s+)?(?:step|update|batch)\b", re.IGNORECASE)


def parse_nan_warning(text: str) -> Row | None:
    """A NaN/inf loss reported by a warning that names no step: ``nan=1``, no iteration; a
    NaN/inf result Megatron-Core's rerun state machine rejected at the iteration it names; a
    loop's guard at the step it names (``skipped=1`` too when it says it skipped it)."""
    if (m := RERUN_NAN_RE.search(text)) is not None:
        return {"iteration": int(m["it"]), "nan": 1}
    if (m := NAN_AT_STEP_RE.search(text)) is not None:
        row: Row = {"iteration": int(m["it"]), "nan": 1}
        if SKIPS_IT_RE.search(text, m.end()):
            row["skipped"] = 1
        return row
    if not NAN_WARNING_RE.search(text) or NAMES_A_STEP_RE.search(text):
        return None
    return {"nan": 1}


# -- a run's record file: one bare "<step> <split> <value>" or "s:<step> <key>:<value>" a line --
# build-nanogpt (karpathy/build-nanogpt train_gpt2.py, copied by its many forks) writes
# f"{step} train {loss:.6f}", f"{step} val {val_loss:.4f}" and f"{step} hella {acc:.4f}" to its
# log.txt (neemiasbsilva/developing-nanoGPT2-fineweb logs/train_log.txt, corpus
# loss_spike-nanogpt2-fineweb-train-log-healthy: "1987 train 3.418830"; forks add a keyed
# figure after it: "… train 3.41 hard 0.12"); llm.c (karpathy/llm.c train_gpt2.py, its C
# logger; KellerJordan/modded-nanogpt's first versions) writes "s:0 trl:10.9851" and
# "s:0 tel:10.9863", the C trainer "s:%d trl:%.4f lr:%.6f norm:%.2f"
RECORD_SPLIT_RE = re.compile(
    r"^\s*(?P<it>\d+) (?P<k>train|val|hella) (?P<v>[-+\d.eE]+|nan|inf)(?:\s+[a-z_]+ [-+\d.eE]+)*\s*$")
RECORD_KEYED_RE = re.compile(
    r"^\s*s:(?P<it>\d+) (?P<k>trl|tel):(?P<v>[-+\d.eE]+|nan|inf)(?P<rest>(?:\s+[a-z_]+:[-+\d.eE]+(?:ms)?)*)\s*$")
RECORD_FIELD_RE = re.compile(r"\b(?P<k>lr|norm):(?P<v>[-+\d.eE]+)")
# the record's keys: the training loss, the validation loss
RECORD_KEYS = {"train": "loss", "trl": "loss", "val": "eval_loss", "tel": "eval_loss"}
RECORD_FIELDS = {"lr": "lr", "norm": "grad_norm"}


def parse_run_record(text: str) -> Row | None:
    """One line of a run's record file (``RECORD_SPLIT_RE``, ``RECORD_KEYED_RE``): the step's
    training loss (with llm.c's learning rate and grad norm), or its validation loss as an
    ``event="eval"`` row; None for a line of any other figure (HellaSwag's accuracy)."""
    m = RECORD_SPLIT_RE.match(text) or RECORD_KEYED_RE.match(text)
    if m is None or (col := RECORD_KEYS.get(m["k"])) is None:
        return None
    row: Row = {"iteration": int(m["it"]), col: to_float(m["v"])}
    if col == "eval_loss":
        row["event"] = "eval"
    elif m.re is RECORD_KEYED_RE:
        for f in RECORD_FIELD_RE.finditer(m["rest"]):
            row[RECORD_FIELDS[f["k"]]] = to_float(f["v"])
    return row


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "run_record",
        "iterations",
        (" train ", " val ", " trl:", " tel:"),
        parse_run_record,
        # neemiasbsilva/developing-nanoGPT2-fineweb logs/train_log.txt
        example="1987 train 3.418830",
    ),
    LineParser(
        "megatron_iteration",
        "iterations",
        ("iteration",),
        parse_megatron,
        incomplete=megatron_incomplete,
        continues=megatron_continues,
        example="[default7]: iteration 12695/ 115311 | consumed samples: 9841584 | consumed "
        "tokens: 20155564032 | elapsed time per iteration (s): 105.22 | learning rate: "
        "5.969E-05 | global batch size: 2048 | lm loss: 2.463556E+00 | grad norm: 0.174 | num "
        "zeros: 0.0 | number of skipped iterations: 0 | number of nan iterations: 0 | samples "
        "per second: 19.463 | TFLOPs: 149.02 |",
    ),
    LineParser(
        "megatron_validation",
        "iterations",
        ("loss at iteration",),
        parse_validation,
        example="[default7]:valid loss at iteration 45000 | lm loss value: 2.327091E+00 | lm loss "
        "PPL: 1.024808E+01 |",
    ),
    LineParser(
        "deepspeed_pipe",
        "iterations",
        ("iter time (s):",),
        parse_deepspeed_pipe,
        example="steps: 30 loss: 10.7133 iter time (s): 0.283 samples/sec: 226.457",
    ),
    LineParser(
        "deepspeed_timer",
        "iterations",
        ("SamplesPerSec=",),
        parse_deepspeed_timer,
        example="[2023-07-25 21:01:20,125] [INFO] [timer.py:215:stop] epoch=0/micro_step=6/"
        "global_step=6, RunningAvgSamplesPerSec=7.920460284374241, CurrSamplesPerSec="
        "6.861668477031963, MemAllocated=59.65GB, MaxMemAllocated=63.31GB",
    ),
    LineParser(
        "step_kv",
        "iterations",
        ("step:",),
        parse_step_kv,
        example="[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384"
        "  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%",
    ),
    LineParser(
        "nanogpt",
        "iterations",
        (": loss ",),
        parse_nanogpt,
        example="iter 1631: loss 4.0863, time 561.94ms",
    ),
    LineParser(
        "colbert",
        "iterations",
        COLBERT_NEEDLES,
        parse_colbert,
        # bclavie/ColBERT train.out (a ColBERT v2 fork's nohup output)
        example="[Mar 29, 16:27:48] 473 5.845928532131831",
    ),
    LineParser(
        "kv_step",
        "iterations",
        ("| epoch ", "Training epoch ", " itr ", "global iter:", "Epoch:[",
         "iteration: ", "num_updates=", "completed step: ", ", i = "),
        parse_kv_step,
        # AI-Hypercomputer/maxtext#8
        example="completed step: 15107, seconds: 2.167, TFLOP/s: 36.722, loss: 2.191",
    ),
    LineParser(
        "simple_step",
        "iterations",
        SIMPLE_NEEDLES,
        parse_simple_step,
        # BVLC/caffe#1255
        example="I1010 17:40:30.682349 24907 solver.cpp:191] Iteration 1000, loss = 8.26466",
    ),
    LineParser(
        "onmt",
        "iterations",
        (" src tok/s;",),
        parse_onmt,
        example="Epoch  2, 52600/733817; acc:  42.20; ppl:  22.37; 998 src tok/s; 1132 tgt tok/s;"
        "   6234 s elapsed",
    ),
    LineParser(
        "pythia",
        "iterations",
        ("time(s):",),
        parse_pythia,
        example="iter: 100 train_loss: 3.6883  train_score: 0.2910  avg_train_score: 0.1358 "
        "val_score: 0.2867 val_loss: 3.3840 time(s): 307.7 s",
    ),
    LineParser(
        "mmengine",
        "iterations",
        ("Iter(train)",),
        parse_mmengine,
        # xtuner's docs (InternLM/xtuner), as the runner prints it
        example="01/29 21:35:34 - mmengine - INFO - Iter(train) [ 10/720]  lr: 9.0001e-05  eta: "
        "0:31:46  time: 2.6851  data_time: 0.0077  memory: 12762  loss: 2.6900",
    ),
    LineParser(
        "json_epoch",
        "iterations",
        (JSON_EPOCH_NEEDLE,),
        parse_json_epoch,
        # yuhuan-wu/P2T#13 (DeiT's log.txt)
        example='{"train_lr": 0.0007658431187708383, "train_loss": 3.7598581806742413, "epoch": '
        '98, "n_parameters": 11590840}',
    ),
    LineParser(
        "colossalai_skip",
        "iterations",
        (" - WARNING: found", " - INFO: found", " - WARNING: Found", " - INFO: Found",
         "found inf during", "Found overflow"),
        parse_colossal_skip,
        incomplete=colossal_skip_incomplete,
        continues=colossal_skip_continues,
        # hpcaitech/ColossalAI#3069
        example="INFO     colossalai - colossalai - INFO: Found overflow. Skip step",
    ),
    LineParser(
        "fp16_overflow",
        "iterations",
        ("Skipping step", "Grad overflow on iteration", "skipping optimizer step",
         "skipping the optimizer step", "overflow detected, ", "Skipping grad update",
         *SCALE_DOWN_NEEDLES),
        parse_overflow,
        example="[2023-10-31 07:15:50,880] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] "
        "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 16384, reducing to 8192",
    ),
    LineParser(
        "nan_warning",
        "iterations",
        ("is nan", "is NaN", "is NAN", "is inf", "diverged with loss", "received a nan loss",
         "received an inf loss", "found NaN in local", "found Inf in local", "Invalid loss",
         "Unexpected result", "NaN loss", "nan loss", "NAN loss", "Inf loss", "inf loss",
         "NaN/Inf", "NaN/inf", "nan/inf", "became NaN", "became nan", "becomes NaN",
         "becomes nan", "was NaN", "was nan", "non-finite", "NaN detected", "Inf detected",
         "NaN found", "NaN gradient", "nan gradient", "NaN or Inf found"),
        parse_nan_warning,
        # Intellindust-AI-Lab/DEIM#96
        example="Loss is nan, stopping training",
    ),
    LineParser(
        "lightning_bar",
        "iterations",
        ("Epoch ",),
        parse_lightning,
        example="Epoch 0:  28%|██▊       | 9/32 [00:00<00:00, 54.10it/s, loss=0.85, v_num=15]",
    ),
)

# Block parsers (factories) this module adds to ``traindoc.parse.BLOCK_PARSERS``.
BLOCKS = (HFTrainerParser, OlmoMetricsParser, ComposerConsoleParser, EpochBatchParser, EpochTimeParser, DeepSpeedStepParser,
          KerasEpochParser, EpochBarParser, RLlibResultParser, RslRlIterationParser)
