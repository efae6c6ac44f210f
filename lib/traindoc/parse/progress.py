"""tqdm progress bars (and a MetricLogger's evaluation counter) into the ``progress`` table.

``Train: 0%| | 21/6336 [08:49<44:58:38, 25.64s/it]``; ``rate`` is stored in iterations per
second whatever unit the bar printed (``25.64s/it`` -> 0.039). A bar pasted into Markdown may
have its pipes escaped (``21%\\|█████▏ \\| 161544/770000 [...]``): read alike. The layouts
(``TQDM_FORMATS``): with the bar; without it (``82% 1025/1252 [35:04<13:48,  3.65s/it]``, a
paste that dropped the block characters); without a total (``240it [05:55,  1.47s/it]``, an
iterable with no ``len()``: ``total`` is <NA>). The last two are read only with an ``it/s`` or
``s/it`` rate, which is what tells them from other ``n/m [..]`` text. A bar written where the
terminal is no tty (Colab, a redirected YOLO run) is the second layout (``640: 100% 42/42
[01:09<00:00,  1.65s/it]``). tqdm-loggable's log record (openpi) is a layout too: ``Progress
on: 20.0it/200kit rate:1.4it/s remaining:39:21:56 elapsed:00:20 postfix:-``.

Keras prints one progress line per epoch: ``1490/1490 - 106s - loss: … - 71ms/step`` (verbose
2) or ``1000/1000 [=====] - 1873s 2s/step - loss: …`` (verbose 1): a row with the batch count
as step and total, the epoch's seconds as ``elapsed_s`` and its steps per second as ``rate``.
Keras prints both figures from one clock (time per step = the epoch's time over its steps), each
rounded to a whole number of its unit, so the rate comes from the one printed with more digits:
``1843s 2s/step`` is 1.843 s/step (``2s/step`` is 1.5-2.5), ``0s … 3ms/step`` is 3 ms (the
``0s`` says nothing); TF 2's ``358ms/epoch`` is the epoch's time in milliseconds. Such a bar starts again at every epoch; the throughput series counts steps across
the restarts (``diagnose.throughput.series``). Before the epoch's end Keras prints the batches
done and the time left (``29312/60000 [=====>......] - ETA: 2s - loss: 0.0891``; Keras 3's
``416/418 ━━━━ 0s 9ms/step``): a row of the batch reached, no time or rate, so that the run's
last progress is the epoch it stopped in.
"""

from __future__ import annotations

import re

from .base import LineParser, Row, hms_to_s, to_float

COUNT = r"\d+(?:\.\d+)?[kMG]?"
ELAPSED = (r"\[(?P<elapsed>[\d:]+(?:\s*days?,\s*[\d:]+)?)"
           r"(?:<(?P<remaining>[\d:?]+(?:\s*days?,\s*[\d:]+)?))?")
RATE = r"(?:,\s*(?P<rate>[\d.]+|\?)\s*(?P<unit>[a-zA-Z]*/[a-zA-Z]+))"
# The bar's description: the text from the line's start or the last separator (``|``, CR, LF;
# ``%`` too where the bar is lost) to the count, its spaces and colon left out. It starts only
# after a separator (a later start would find the same bar) and is read in words, each spaces
# then a character, possessively: a search of a long line that holds no bar (a 56 KB list of
# label ids, a run of spaces) is linear in its length, not quadratic or cubic.
def _desc(sep: str, colon: str = r":?+") -> str:
    return (rf"(?:(?<![^{sep}])(?P<desc>(?:\s*+[^\s{sep}])*?)\s*+{colon}\s*+)?")


# tqdm's layouts, one entry each: what the bar shows differs, the fields after it do not.
TQDM_FORMATS: tuple[re.Pattern[str], ...] = (
    # the bar: ``Train: 0%| | 21/6336 [08:49<44:58:38, 25.64s/it]``
    re.compile(_desc(r"|\r\n") + r"(?P<pct>\d{1,3})%\\?\|[^|]*\|\s*"
               rf"(?P<n>{COUNT})/(?P<total>{COUNT})\s*{ELAPSED}{RATE}?"),
    # the bar lost (a paste, a bar_format without it): ``Train Epoch #73:  82% 1025/1252
    # [35:04<13:48,  3.65s/it, loss=0.946]``; the rate is required (it is what makes it tqdm's)
    re.compile(_desc(r"|\r\n%") + r"(?P<pct>\d{1,3})%\s+"
               rf"(?P<n>{COUNT})/(?P<total>{COUNT})\s*{ELAPSED}"
               r",\s*(?P<rate>[\d.]+|\?)\s*(?P<unit>it/s|s/it)"),
    # no total (an iterable without len()): ``Epoch 10/10: 240it [05:55,  1.47s/it, loss=5.46]``
    re.compile(_desc(r"|\r\n", ":") + r"(?<![\w.])(?P<n>\d+)it\s*"
               rf"{ELAPSED}"r",\s*(?P<rate>[\d.]+|\?)\s*(?P<unit>it/s|s/it)"),
    # Ultralytics' own bar (its ``utils.tqdm.TQDM`` since 8.3, no tqdm): box characters, then
    # the count, the rate and the times with no brackets or commas, ``1/100 6.15G 3.439 11.21
    # 0.02921 33 544: 0% ──────────── 1/6848 1.3s/it 1.6s<2:26:31`` (QiuLiXiang/YOLO-DA26
    # train_det.log); the rate is required, as for the bar lost above
    re.compile(_desc(r"|\r\n%") + r"(?P<pct>\d{1,3})% [─━]+ "
               rf"(?P<n>{COUNT})/(?P<total>{COUNT})\s+(?P<rate>[\d.]+)(?P<unit>it/s|s/it)"
               r"\s+(?P<elapsed>\d+(?::\d\d)+|\d+(?:\.\d+)?s)(?:<(?P<remaining>[\d:]+))?"),
    # tqdm-loggable's log record (openpi and other headless runs): ``Progress on:Sample progress
    # 21.0kit/60.0kit rate:1,982.9it/s remaining:00:19 elapsed:00:10 postfix:-``; the count
    # carries the unit (``it``, ``kit``), the rate a thousands comma
    re.compile(r"Progress on:(?P<desc>[^\r\n]*?)\s*+(?<!\S)"
               rf"(?P<n>{COUNT})(?:it)?/(?P<total>{COUNT}|-)(?:it)?\s+"
               r"rate:(?P<rate>\d[\d,]*(?:\.\d+)?)(?P<unit>it/s|s/it)"
               r"(?:\s+remaining:\S+)?\s+elapsed:(?P<elapsed>[\d:]+)"),
)
# each layout by name (an unpacking: a layout added without its name here fails at import)
TQDM_RE, BARLESS_RE, NO_TOTAL_RE, ULTRALYTICS_BAR_RE, LOGGABLE_RE = TQDM_FORMATS
SCALE = {"k": 1e3, "M": 1e6, "G": 1e9}
# Keras: "1490/1490 - 106s - loss: … - 71ms/step", "1000/1000 [=====] - 1873s 2s/step - …"
# (TF 2 adds the epoch's time: "128/128 - 0s - loss: … - 358ms/epoch - 3ms/step")
# Keras 3 draws its bar with box characters and no dash before the seconds, "1875/1875
# ━━━━━━━━━━━━━━━━━━━━ 5s 2ms/step - accuracy: 0.8706 - loss: 0.4351" (keras-team/keras
# keras/src/utils/progbar.py; verbose 2: "1875/1875 - 5s - 2ms/step - …"); before the end the
# seconds there are the time left ("  54/1875 ━━━━━━━━━━━━━━━━━━━━ 1s 948us/step"): no row
KERAS_BAR = "━"
KERAS_RE = re.compile(
    r"^\s*(?P<n>\d+)/(?P<total>\d+)\s+(?:(?:\[[=>.]*\]\s+)?-\s+|(?P<bar>━+)\s+)(?P<elapsed>\d+)s\b"
    r"(?:.*?(?<![\w.])(?P<epoch>\d+(?:\.\d+)?)(?P<epoch_unit>us|ms|s)/epoch\b)?"
    r".*?(?<![\w.])(?P<per>\d+(?:\.\d+)?)(?P<unit>us|ms|s)/step\b")
PER_STEP_S = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
# Keras before an epoch's end: the batches done of the epoch's, then the time left. Keras 2
# ("  16/148 [==>...........................] - ETA: 3s - loss: 2.7482 - accuracy: 0.2676",
# keras-team/keras#8169; a progbar with no tty writes one such line per update, one with a tty
# redraws it, several per line once the carriage returns are lost: tensorflow/tensorflow#36332)
# and Keras 3 ("416/418 ━━━━━━━━━━━━━━━━━━━━ 0s 9ms/step - loss: 0.0415", keras-team/keras
# keras/src/utils/progbar.py, its ETA branch). A row of the batch reached, no time: where the run
# stopped in its epoch (the throughput series reads the epochs' own lines)
KERAS_PARTIAL_RE = re.compile(
    r"(?<![\w/])(?P<n>\d+)/(?P<total>\d+)\s+(?:\[[=>.]*\]\s+-\s+ETA:\s*\d[\d:]*s?\b"
    r"|━+\s+\d+s\s+\d+(?:\.\d+)?(?:us|ms|s)/step\b)")
# MetricLogger.log_every's evaluation loop (torchvision's references and the trainers that copied
# it: DeiT, DETR, MAE, BLIP): the header, the batch of the loader's total, its eta ("Test:  [
# 100/1563]  eta: 0:01:49  loss: 1.1036 (0.8832)  acc1: …", torchvision's "Test: EMA" with
# its suffix; BLIP/ALBEF's "Evaluation:"). A progress row: the training loop's own header
# ("Epoch: [3]") is a step line of ``parse.metric_lines``, the evaluation's counter is no step
# of training, only how far the run got where nothing else counts
METRIC_LOGGER_EVAL_RE = re.compile(
    r"(?<![\w\[])(?P<desc>(?:test|val|valid|validation|eval|evaluation)\b(?::[ \t]?[A-Za-z]\w*)?):?"
    r"\s+\[\s*(?P<n>\d+)\s*/\s*(?P<total>\d+)\]\s+eta:\s*(?P<remaining>\d+(?::\d\d)+)",
    re.IGNORECASE)


def _count(v: str) -> int | None:
    if v[-1] in SCALE:
        f = to_float(v[:-1])
        return int(f * SCALE[v[-1]]) if f is not None else None
    f = to_float(v)
    return int(f) if f is not None else None


def _elapsed(v: str | None) -> float | None:
    """Seconds of a bar's elapsed time: ``35:04``, ``1 day, 2:03:04``, Ultralytics' ``1.6s``."""
    if v and v.endswith("s") and v[0].isdigit() and ":" not in v:
        return to_float(v[:-1])
    return hms_to_s(v) if v else None


def parse_tqdm(text: str) -> Row | None:
    """The last tqdm bar in ``text``."""
    m = None
    for pattern in TQDM_FORMATS:
        for found in pattern.finditer(text):
            if m is None or found.start() > m.start():
                m = found
        if m is not None:
            break
    if m is None:
        return None
    rate = (to_float(m["rate"].replace(",", "")) if m["rate"] and m["rate"] != "?"
            else None)
    unit = m["unit"] or ""
    if rate is not None and unit.startswith("s/"):
        rate = 1.0 / rate if rate > 0 else None
    desc = (m["desc"] or "").strip() or None
    return {
        "step": _count(m["n"]),
        "total": _count(m["total"]) if "total" in m.groupdict() else None,
        "elapsed_s": _elapsed(m["elapsed"]),
        "rate": rate,
        "desc": desc,
    }


def parse_keras(text: str) -> Row | None:
    """One Keras epoch line: batches done of the total, seconds, and steps per second (from
    the epoch's time or the time per step, whichever was printed with more digits)."""
    m = KERAS_RE.match(text)
    if m is None or (m["bar"] and m["n"] != m["total"]):
        return _keras_partial(text)
    n = int(m["n"])
    per_digits = float(m["per"])
    per = per_digits * PER_STEP_S[m["unit"]]
    epoch_digits, epoch_s = float(m["elapsed"]), float(m["elapsed"])
    if m["epoch"]:
        epoch_digits = float(m["epoch"])
        epoch_s = epoch_digits * PER_STEP_S[m["epoch_unit"]]
    if n > 0 and epoch_s > 0 and epoch_digits > per_digits:
        per = epoch_s / n
    return {"step": n, "total": int(m["total"]), "elapsed_s": float(m["elapsed"]),
            "rate": 1.0 / per if per > 0 else None, "desc": "keras"}


def _keras_partial(text: str) -> Row | None:
    """The last Keras bar of an epoch not yet done on the line: batches done of the total."""
    found = list(KERAS_PARTIAL_RE.finditer(text))
    m = found[-1] if found else None
    if m is None or m["n"] == m["total"]:
        return None
    return {"step": int(m["n"]), "total": int(m["total"]), "desc": "keras"}


def parse_metric_logger_eval(text: str) -> Row | None:
    """The counter of a MetricLogger's evaluation loop: batches done of the loader's total."""
    m = METRIC_LOGGER_EVAL_RE.search(text)
    if m is None:
        return None
    return {"step": int(m["n"]), "total": int(m["total"]), "desc": m["desc"]}


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "tqdm",
        "progress",
        ("%|", "%\\|", "s/it", "it/s"),
        parse_tqdm,
        example="Train: 0%| | 21/6336 [08:49<44:58:38, 25.64s/it]",
    ),
    LineParser(
        "keras_epoch",
        "progress",
        ("/step", "- ETA: "),
        parse_keras,
        # sleap-ai/sleap#2230
        example="1490/1490 - 106s - loss: 1.9500e-05 - val_loss: 2.0626e-05 - lr: 1.0000e-04 - "
        "106s/epoch - 71ms/step",
    ),
    LineParser(
        "metric_logger_eval",
        "progress",
        ("eta: ",),
        parse_metric_logger_eval,
        # salesforce/MUST#7 (corpus timeout-must-7)
        example="Test:  [ 2090/10010]  eta: 1:53:32  acc1: 73.3203 (76.6279)  ema_acc1: 77.7734 "
        "(76.4956)  time: 0.8568  data: 0.0001  max mem: 14135",
    ),
)
