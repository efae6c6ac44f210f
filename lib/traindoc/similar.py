"""Seen before: the public incidents of the corpus that look like this one, and what fixed them.

An incident's ``Signature`` is the few fields that make two incidents the same kind of failure,
computed from a class's facts (``Report.facts``) and the environment the log shows:

- ``cls``: the failure class;
- strong fields: ``op`` (timeout: the collective), ``template`` (gpu_crash: the error message
  with numbers, hex, paths, addresses and names taken out), ``xid_codes`` (gpu_crash), ``leaf``
  (deadlock: the function of the outlier's leaf frame, else the majority's);
- medium fields: ``pattern`` (timeout: desync/straggler/all_stuck; throughput: the drop's
  shape), ``error_kind`` (gpu_crash), ``metric`` (throughput), ``symptom`` (loss_spike: nan,
  skipped or spike);
- weak fields: ``launcher`` and ``trainer`` the lines show, and the ``versions`` they print
  (torch, NCCL, CUDA, DeepSpeed: major.minor).

A field the log does not show is ``None`` and never matches. Two incidents are similar when
their classes agree and their matched fields weigh at least ``MIN_WEIGHT`` with one of them
strong or medium: a strong field, or a medium one with another field (the class alone, or weak
fields alone, are no match).

The corpus's signatures ship in the package (``similar_index.json``, written by ``traindoc score
--similar-index``); nothing is fetched. ``leave_one_out`` measures the section on the corpus:
for each case whose expected facts name a root cause, whether one of its nearest others has
the same one (``root_cause``, from the expected facts people wrote, not from the runbook).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any, NamedTuple

INDEX_NAME = "similar_index.json"
STRONG, MEDIUM, WEAK = 3, 2, 1
WEIGHTS: dict[str, int] = {"op": STRONG, "template": STRONG, "xid_codes": STRONG,
                           "leaf": STRONG, "pattern": MEDIUM, "error_kind": MEDIUM,
                           "metric": MEDIUM, "symptom": MEDIUM, "launcher": WEAK,
                           "trainer": WEAK, "versions": WEAK}
MIN_WEIGHT = 3
NEAREST = 3
TEMPLATE_OVERLAP = 0.6  # two templates match when this share of their words is shared


class Environment(NamedTuple):
    """What the log's lines say about how the job ran (None: not shown)."""

    launcher: str | None = None
    trainer: str | None = None
    versions: tuple[str, ...] = ()  # "torch 2.1", "nccl 2.18", "cuda 12.1", "deepspeed 0.12"


class Signature(NamedTuple):
    """The fields that make two incidents the same kind of failure (module docstring)."""

    cls: str
    op: str | None = None
    template: str | None = None
    xid_codes: tuple[int, ...] = ()
    leaf: str | None = None
    pattern: str | None = None
    error_kind: str | None = None
    metric: str | None = None
    symptom: str | None = None
    launcher: str | None = None
    trainer: str | None = None
    versions: tuple[str, ...] = ()


class Similar(NamedTuple):
    """One corpus case near an incident: the case, its index entry and the fields that match."""

    case: str
    entry: Mapping[str, Any]
    fields: tuple[str, ...]
    weight: int


# --- the environment a log shows -------------------------------------------------------------

# first match wins: the more specific wrapper before what it wraps (Megatron before DeepSpeed,
# NeMo before Lightning, torchrun's records before srun)
LAUNCHER_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ray", re.compile(r"\((?:RayTrainWorker|TorchTrainer|\w+Actor|\w+Worker) pid=\d+|"
                       r"ray\.exceptions|\braylet\b")),
    ("deepspeed", re.compile(r"\[launch\.py:\d+:|deepspeed\.launcher|\[runner\.py:\d+:|"
                             r"sigkill_handler|exits with return code")),
    ("torchrun", re.compile(r"torch\.distributed\.(?:elastic|run|launch)|\btorchrun\b|"
                            r"\[default\d+\]:|ChildFailedError|LocalElasticAgent|"
                            r"elastic_launch")),
    ("accelerate", re.compile(r"accelerate(?:\.commands|/commands| launch)")),
    ("mpirun", re.compile(r"\bmpirun\b|\bOpen MPI\b|\bORTE\b|\bPMIX\b")),
    ("kubernetes", re.compile(r"\bOOMKilled\b|\bkubectl\b|\bpod/[\w.-]+")),
    ("srun", re.compile(r"^srun: |\bslurmstepd\b|\bSLURM_JOB_ID\b")),
)
TRAINER_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("nemo", re.compile(r"\bnemo[./]|\bNeMo\b|reduced_train_loss")),
    ("megatron", re.compile(r"elapsed time per iteration|\bmegatron[./]")),
    ("deepspeed", re.compile(r"\[deepspeed\]|deepspeed/runtime|DeepSpeedEngine|"
                             r"\[engine\.py:\d+:|\[stage[_\d]*\.py:\d+:")),
    ("hf_trainer", re.compile(r"transformers/trainer\.py|\{'loss': |'train_runtime'|"
                              r"train_samples_per_second")),
    ("lightning", re.compile(r"pytorch_lightning|lightning\.pytorch|lightning_fabric")),
    ("fairseq", re.compile(r"\bfairseq[./_]")),
    ("mmengine", re.compile(r"\bmmengine\b|\bmmdet\b|Epoch\(train\)")),
    ("detectron2", re.compile(r"\bdetectron2\b")),
    ("colossalai", re.compile(r"\bcolossalai\b")),
    ("torchtitan", re.compile(r"\btorchtitan\b")),
    ("rlhf", re.compile(r"\bverl\b|\bopenrlhf\b", re.IGNORECASE)),
)
VERSION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("torch", re.compile(r"\b(?:torch|pytorch|PyTorch)(?:\s+version)?\s*(?:==|[:=]|\s)\s*v?"
                         r"(\d+\.\d+)\.\d+")),
    ("nccl", re.compile(r"\bNCCL version (\d+\.\d+)\.\d+")),
    ("cuda", re.compile(r"\+cuda(\d+\.\d+)|\bCUDA (?:Version|version|runtime version)[:\s]+"
                        r"(\d+\.\d+)|\+cu(\d{2,3})\b")),  # +cu121: 12.1
    ("deepspeed", re.compile(r"DeepSpeed info: version=(\d+\.\d+)|\bdeepspeed(?:\s+version)?"
                             r"\s*(?:==|[:=]|\s)\s*(\d+\.\d+)\.\d+", re.IGNORECASE)),
)


def environment(lines: Iterable[str]) -> Environment:
    """The launcher, trainer and versions that ``lines`` show (the first match of each)."""
    launcher = trainer = None
    versions: dict[str, str] = {}
    for text in lines:
        if launcher is None:
            launcher = next((n for n, rx in LAUNCHER_PATTERNS if rx.search(text)), None)
        if trainer is None:
            trainer = next((n for n, rx in TRAINER_PATTERNS if rx.search(text)), None)
        for name, rx in VERSION_PATTERNS:
            if name not in versions and (m := rx.search(text)):
                v = next(g for g in m.groups() if g)
                versions[name] = v if "." in v else f"{v[:-1]}.{v[-1]}"
    return Environment(launcher, trainer, tuple(f"{k} {v}" for k, v in sorted(versions.items())))


def incident_lines(incident: Any, limit: int = 5000) -> list[str]:
    """Up to ``limit`` distinct lines of an ``Incident``: its tables' line texts and the lines
    no parser read (the environment is in both)."""
    seen: dict[str, None] = {}
    for line in getattr(incident, "unrecognized", []) or []:
        seen.setdefault(str(line), None)
    for df in incident.tables.values():
        if "line" in df and len(df):
            for line in df["line"].dropna().unique()[:limit]:
                seen.setdefault(str(line), None)
        if len(seen) >= limit:
            break
    return list(seen)[:limit]


# --- a signature from a class's facts ----------------------------------------------------------

# what differs between two instances of one message: taken out, in this order
TEMPLATE_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:/[\w.@+-]+)+/?"), "<path>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<addr>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-fA-F]{8,}\b"), "<hex>"),
    (re.compile(r"\b[\w-]*\d[\w-]*\b"), "<n>"),
    (re.compile(r"'[^']*'|\"[^\"]*\""), "<str>"),
    (re.compile(r"\s+"), " "),
)
FRAME_FUNCTION_RE = re.compile(r"^\s*([\w.<>]+)")
WORD_RE = re.compile(r"<\w+>|\w+")


def template(message: str | None) -> str | None:
    """``message`` with numbers, hex, paths, addresses, names and quoted values taken out,
    lower case and cut at 160 characters (None for no message)."""
    if not message:
        return None
    text = str(message)
    for rx, repl in TEMPLATE_RULES:
        text = rx.sub(repl, text)
    return text.strip().lower()[:160] or None


def leaf_function(frame: Any) -> str | None:
    """The function name of a leaf frame as the deadlock facts give it (``backward
    (torch/autograd/__init__.py:266)`` -> ``backward``)."""
    if not frame:
        return None
    m = FRAME_FUNCTION_RE.match(str(frame))
    return m.group(1) if m else None


def _none_if(value: Any, *empty: Any) -> Any:
    return None if value in (None, "", *empty) else value


def signature(runbook: str, facts: Mapping[str, Any], env: Environment | None = None
              ) -> Signature:
    """The signature of a ``runbook``'s facts (its summary.json ``facts``) in ``env``."""
    env = env or Environment()
    base = {"launcher": env.launcher, "trainer": env.trainer, "versions": env.versions}
    f = facts
    if runbook == "timeout":
        return Signature(runbook, op=_none_if(f.get("op_type")),
                         pattern=_none_if(f.get("pattern"), "unknown"), **base)
    if runbook == "gpu_crash":
        codes = tuple(sorted(int(c) for c in f.get("xid_codes") or [] if str(c).isdigit()))
        return Signature(runbook, template=template(f.get("error_message")), xid_codes=codes,
                         error_kind=_none_if(f.get("error_kind")), **base)
    if runbook == "deadlock":
        leaf = leaf_function(f.get("outlier_leaf")) or leaf_function(f.get("majority_leaf"))
        return Signature(runbook, leaf=leaf, **base)
    if runbook == "throughput":
        dropped = f.get("change_iteration") is not None or f.get("drop_pct") is not None
        return Signature(runbook, metric=_none_if(f.get("metric")) if dropped else None,
                         pattern=_none_if(f.get("shape")) if dropped else None, **base)
    if runbook == "loss_spike":
        symptom = ("nan" if f.get("nan_iterations") else "spike" if f.get("spikes")
                   else "skipped" if f.get("skipped_iterations") else None)
        return Signature(runbook, symptom=symptom, **base)
    return Signature(runbook, **base)


def as_record(sig: Signature) -> dict[str, Any]:
    """``sig`` as JSON-ready data (tuples as lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in sig._asdict().items()}


def from_record(rec: Mapping[str, Any]) -> Signature:
    """The ``Signature`` that ``as_record`` wrote."""
    return Signature(**{k: tuple(v) if isinstance(v, list) else v for k, v in rec.items()
                        if k in Signature._fields})


# --- nearest cases ---------------------------------------------------------------------------

def overlap(a: str, b: str) -> float:
    """The share of words two templates share (Jaccard over their word sets)."""
    x, y = set(WORD_RE.findall(a)), set(WORD_RE.findall(b))
    return len(x & y) / len(x | y) if x | y else 0.0


def matched(a: Signature, b: Signature) -> tuple[tuple[str, ...], int]:
    """The fields (besides the class) on which ``a`` and ``b`` agree, and their weight; a
    version matches when both logs print the same major.minor of one package, a template when
    ``TEMPLATE_OVERLAP`` of their words are shared."""
    if a.cls != b.cls:
        return (), 0
    fields: list[str] = []
    for name in WEIGHTS:
        x, y = getattr(a, name), getattr(b, name)
        if name == "versions":
            if set(x) & set(y):
                fields.append(name)
        elif name == "template":
            if x and y and overlap(x, y) >= TEMPLATE_OVERLAP:
                fields.append(name)
        elif x not in (None, ()) and x == y:
            fields.append(name)
    return tuple(fields), sum(WEIGHTS[n] for n in fields)


def similar(sig: Signature, index: Sequence[Mapping[str, Any]], k: int = NEAREST,
            exclude: Iterable[str] = ()) -> list[Similar]:
    """The ``k`` index entries nearest ``sig`` (heaviest match first, then the surest
    resolution, then case id) whose
    match weighs at least ``MIN_WEIGHT`` with a field above the weak ones; ``exclude``: case
    ids left out."""
    skip = set(exclude)
    out = []
    for entry in index:
        if entry["case"] in skip:
            continue
        fields, weight = matched(sig, from_record(entry["signature"]))
        if weight >= MIN_WEIGHT and any(WEIGHTS[f] >= MEDIUM for f in fields):
            out.append(Similar(entry["case"], entry, fields, weight))
    return sorted(out, key=lambda s: (-s.weight, _sureness(s.entry), s.case))[:k]


STATUS_ORDER = ("confirmed", "suggested", "none stated")


def _sureness(entry: Mapping[str, Any]) -> int:
    """Ties go to the case whose resolution is surest (confirmed, suggested, none stated,
    not written)."""
    status = (entry.get("resolution") or {}).get("status")
    return STATUS_ORDER.index(status) if status in STATUS_ORDER else len(STATUS_ORDER)


def load_index() -> list[dict[str, Any]]:
    """The corpus index shipped in the package (empty when it is missing). Read once per
    process while the file is unchanged (a report's summary asks for it, and parsing 1 MB
    cost more than the rest of a small log's "Seen before"); the entries are shared: read
    them, do not change them."""
    res = resources.files("traindoc").joinpath(INDEX_NAME)
    try:
        if not isinstance(res, os.PathLike):  # (a zipped package: read each time)
            return list(_parsed_index(res.read_text(encoding="utf-8")))
        st = os.stat(res)
        return list(_index_file(os.fspath(res), st.st_mtime_ns, st.st_size))
    except (FileNotFoundError, OSError):
        return []


@lru_cache(maxsize=2)
def _index_file(path: str, mtime_ns: int, size: int) -> tuple[dict[str, Any], ...]:
    """The index file at ``path`` as it was at ``mtime_ns`` and ``size``, parsed."""
    with open(path, encoding="utf-8") as f:
        return _parsed_index(f.read())


def _parsed_index(text: str) -> tuple[dict[str, Any], ...]:
    """The cases of an index's text."""
    return tuple(json.loads(text)["cases"])


def seen_before(runbook: str, facts: Mapping[str, Any], incident: Any = None,
                index: Sequence[Mapping[str, Any]] | None = None) -> list[Similar]:
    """The corpus cases nearest this incident (``runbook``'s ``facts`` on ``incident``)."""
    env = environment(incident_lines(incident)) if incident is not None else None
    return similar(signature(runbook, facts, env), load_index() if index is None else index)


def source_text(source: Mapping[str, Any]) -> str:
    """A case's source as a reader cites it: ``owner/repo#123`` (issue, pr, discussion) or
    ``owner/repo path@commit`` (a committed file)."""
    repo = str(source.get("repo", "?"))
    if source.get("kind") == "file":
        return f"{repo} {source.get('path', '?')}@{str(source.get('commit', ''))[:10]}"
    kind = {"pr": "PR ", "discussion": "discussion "}.get(str(source.get("kind")), "")
    return f"{repo} {kind}#{source.get('number', '?')}"


def table(found: Sequence[Similar]) -> Any:
    """The "Seen before" table a runbook shows: per case its source, what happened there, its
    resolution and how sure that is, and the fields that matched."""
    import pandas as pd

    rows = []
    for s in found:
        res = s.entry.get("resolution") or {}
        fix = "; ".join(x for x in (res.get("cause"), res.get("fix")) if x)
        rows.append((source_text(s.entry.get("source", {})), s.entry.get("summary", ""),
                     fix or "(not yet written)", res.get("status", "not yet written"),
                     ", ".join(s.fields)))
    return pd.DataFrame(rows, columns=["source", "what happened there", "cause and fix",
                                       "resolution", "fields matched"])


def summary_records(found: Sequence[Similar]) -> list[dict[str, Any]]:
    """``summary.json``'s ``similar``: each case's source, the fields that matched and how
    sure its resolution is."""
    return [{"case": s.case, "source": source_text(s.entry.get("source", {})),
             "fields": list(s.fields),
             "status": (s.entry.get("resolution") or {}).get("status", "not yet written")}
            for s in found]


# --- the index and its measure -------------------------------------------------------------

def index_entry(case_id: str, runbook: str, case: Mapping[str, Any], facts: Mapping[str, Any],
                env: Environment) -> dict[str, Any]:
    """One case's index entry: id, class, source, summary, resolution (when written) and the
    signature of the runbook's facts on its logs."""
    return {"case": case_id, "runbook": runbook, "source": dict(case.get("source", {})),
            "summary": str(case.get("summary", "")), "resolution": case.get("resolution"),
            "signature": as_record(signature(runbook, facts, env))}


def _expected(value: Any) -> Any:
    """An expected fact's value as one value: the first of an ``any_of``, the text of a
    ``contains``."""
    if isinstance(value, dict) and "any_of" in value:
        return _expected(value["any_of"][0]) if value["any_of"] else None
    if isinstance(value, dict) and "contains" in value:
        return value["contains"]
    return value


def root_cause(runbook: str, facts: Mapping[str, Any]) -> str | None:
    """The root cause a case's EXPECTED facts name (what people read in the log), for the
    leave-one-out measure; None when they name none."""
    f = {k: _expected(v) for k, v in facts.items()}
    if runbook == "timeout":
        return f"op={f['op_type']}" if f.get("op_type") else (
            f"pattern={f['pattern']}" if f.get("pattern") not in (None, "unknown") else None)
    if runbook == "gpu_crash":
        if f.get("xid_codes"):
            return "xid=" + ",".join(str(c) for c in sorted(f["xid_codes"]))
        return f"kind={f['error_kind']}" if f.get("error_kind") else None
    if runbook == "deadlock":
        leaf = f.get("outlier_leaf") or f.get("majority_leaf")
        return f"leaf={str(leaf).split('(')[0].strip().lower()}" if leaf else None
    if runbook == "throughput":
        return f"metric={f['metric']}" if f.get("metric") and f.get(
            "change_iteration") is not None else None
    if runbook == "loss_spike":
        return ("nan" if f.get("nan_iterations") else "spike" if f.get("spikes")
                else "skipped" if f.get("skipped_iterations") else None)
    return None


def leave_one_out(index: Sequence[Mapping[str, Any]], expected: Mapping[str, Mapping[str, Any]]
                  ) -> list[dict[str, Any]]:
    """Per class: cases whose expected facts name a root cause; of them, those with a case of
    the same root cause among their ``NEAREST`` others (by signature), and those for which the
    section shows nothing; and the cases naming none (healthy, vague) that show something.
    ``expected``: case id -> its expected facts."""
    rows: dict[str, dict[str, Any]] = {}
    roots = {e["case"]: root_cause(e["runbook"], expected.get(e["case"], {})) for e in index}
    for e in index:
        r = rows.setdefault(e["runbook"], {"class": e["runbook"], "with_cause": 0, "hit": 0,
                                           "shown_none": 0, "without_cause": 0,
                                           "shown_anyway": 0})
        near = similar(from_record(e["signature"]), index, exclude=[e["case"]])
        if roots[e["case"]] is None:
            r["without_cause"] += 1
            r["shown_anyway"] += bool(near)
            continue
        r["with_cause"] += 1
        r["shown_none"] += not near
        r["hit"] += any(roots[s.case] == roots[e["case"]] for s in near)
    return [rows[k] for k in sorted(rows)]
