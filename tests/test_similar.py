"""Seen before (traindoc.similar): signatures, matches, the shipped index, real cases."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS, load_once
from traindoc import score, similar
from traindoc.diagnose import failure_class
from traindoc.similar import Environment, Signature


def test_a_template_takes_out_what_differs_between_instances() -> None:
    a = similar.template("CUDA error: an illegal memory access was encountered at "
                         "/opt/conda/lib/python3.10/site-packages/torch/x.py:12 on node-17")
    b = similar.template("CUDA error: an illegal memory access was encountered at "
                         "/usr/lib/python3.8/torch/y.py:99 on gpu-203")
    assert a == b and "<path>" in a and "17" not in a
    assert similar.template("") is None


@pytest.mark.parametrize(("line", "field", "value"), [
    # bigscience's Megatron-DeepSpeed chronicle (data/corpus/gpu_crash/
    # gpu_crash-bigscience-meg-ds-zero-gpt2-perf-n16-1999616)
    ("NCCL version 2.7.8+cuda10.2", "versions", ("cuda 10.2", "nccl 2.7")),
    ("[default3]:[rank3]: Traceback (most recent call last):", "launcher", "torchrun"),
    ("[2023-05-02 10:11:12,345] [INFO] [launch.py:142:main] WORLD INFO DICT", "launcher",
     "deepspeed"),
    (" iteration      100/  10000 | elapsed time per iteration (ms): 512.3 | lm loss: 2.1",
     "trainer", "megatron"),
    ("{'loss': 1.2607, 'learning_rate': 6.3e-06, 'epoch': 0.03}", "trainer", "hf_trainer"),
    ("[2020-09-09 01:52:29,086] [INFO] [stage2.py:1132:step] [deepscale] OVERFLOW! Rank 0 "
     "Skipping step.", "trainer", "deepspeed"),
    ("DeepSpeed info: version=0.12.6, git-hash=unknown, git-branch=unknown", "versions",
     ("deepspeed 0.12",)),
    ("torch 2.1.0+cu121", "versions", ("cuda 12.1", "torch 2.1")),
])
def test_the_environment_a_line_shows(line: str, field: str, value) -> None:
    assert getattr(similar.environment([line]), field) == value


def test_the_class_alone_or_weak_fields_alone_are_no_match() -> None:
    env = Environment("torchrun", "megatron", ("nccl 2.18",))
    a = Signature("timeout", op="ALLREDUCE", **env._asdict())
    b = Signature("timeout", op="BROADCAST", **env._asdict())
    assert set(similar.matched(a, b)[0]) == {"launcher", "trainer", "versions"}
    assert similar.matched(a, Signature("gpu_crash", **env._asdict())) == ((), 0)
    index = [{"case": "b", "signature": similar.as_record(b)}]
    assert similar.similar(a, index) == []
    c = Signature("timeout", op="ALLREDUCE")
    assert [s.case for s in similar.similar(c, [{"case": "a",
                                                   "signature": similar.as_record(a)}])] == ["a"]


def test_a_signature_survives_the_index_record() -> None:
    sig = Signature("gpu_crash", template="x <n>", xid_codes=(79, 31), error_kind="xid",
                    versions=("nccl 2.18",))
    assert similar.from_record(json.loads(json.dumps(similar.as_record(sig)))) == sig


def test_the_shipped_index_holds_every_corpus_case() -> None:
    """Stale when a case was added or renamed: traindoc score --similar-index
    lib/traindoc/similar_index.json"""
    ids = {p.parent.name for p in CORPUS.glob("*/*/case.json")}
    assert {e["case"] for e in similar.load_index()} == ids


def _seen(case: str) -> list[similar.Similar]:
    runbook = case.split("-", 1)[0]
    inc = load_once(CORPUS / runbook / case / "logs")
    facts = failure_class(runbook).diagnose(inc).facts
    index = [e for e in similar.load_index() if e["case"] != case]
    return similar.seen_before(runbook, facts, inc, index)


def _says_ecc(case: str) -> bool:
    logs = CORPUS / case.split("-", 1)[0] / case / "logs"
    return any("ECC error" in p.read_text(errors="replace")
               for p in logs.rglob("*") if p.is_file())


def test_an_ecc_crash_finds_the_other_ecc_crashes() -> None:
    # accelerate#1192: "CUDA error: uncorrectable ECC error encountered". The corpus holds
    # more ECC crashes than three (pytorch#113128, jade-hpc-gpu#194, NVIDIA/semantic-
    # segmentation#33, bigscience tr1-13B...), so which three rank first depends on their
    # resolutions: what must hold is that each one shown is an ECC crash, matched on it.
    found = _seen("gpu_crash-accelerate-1192")
    assert len(found) == 3
    assert all(_says_ecc(s.case) for s in found), [s.case for s in found]
    assert all("template" in s.fields for s in found)
    rec = similar.summary_records(found)[0]
    assert rec["source"] and rec["status"] and "template" in rec["fields"]


def test_a_healthy_run_has_nothing_seen_before() -> None:
    # stanford_alpaca#243: a falling loss, nothing wrong
    assert _seen("loss_spike-stanford-alpaca-243") == []


# Issue 30: every class's section, on a real case where it must show an incident of the same
# root cause (matched on the field that carries it), and on one where it must show none.
SAME_CAUSE = {
    # acodet#47: a DataLoader that never hands over a batch (py-spy: _try_get_data)
    "deadlock": ("deadlock-acodet-47", "leaf"),
    # accelerate#1519: a worker's CUDA out of memory, launched by torchrun on SLURM
    "gpu_crash": ("gpu_crash-accelerate-1519", "error_kind"),
    # BigScience tr1-13B: an lm-loss spike at 29050 in Megatron-DeepSpeed
    "loss_spike": ("loss_spike-bigscience-tr1-13b-spike", "symptom"),
    # insightface#1624: 'Speed N samples/sec' falls by two thirds
    "throughput": ("throughput-insightface-1624", "metric"),
    # axolotl#1495: ranks time out in ALLREDUCE
    "timeout": ("timeout-axolotl-1495", "op"),
}
NOTHING_SIMILAR = {
    "deadlock": "deadlock-py-spy-221",  # py-spy#221: an idle uWSGI worker's dump
    "gpu_crash": "gpu_crash-chainercv-391",  # chainercv#391: a healthy LogReport run
    "loss_spike": "loss_spike-caffe-1255",  # caffe#1255: loss 87.3 at iteration 0, then steady
    "throughput": "throughput-clip4clip-58",  # CLIP4Clip#58: a slow first step, steady after
    "timeout": "timeout-3detr-61",  # 3detr#61: a healthy start of training
}


@pytest.mark.parametrize("runbook", sorted(SAME_CAUSE))
def test_each_class_shows_an_incident_of_the_same_cause(runbook: str) -> None:
    case, field = SAME_CAUSE[runbook]
    expected = {c.id: c.facts for c in score.find_cases(CORPUS / runbook)}
    cause = similar.root_cause(runbook, expected[case])
    assert cause is not None, case
    found = _seen(case)
    assert 0 < len(found) <= similar.NEAREST, found
    same = [s for s in found if similar.root_cause(runbook, expected[s.case]) == cause]
    assert same and all(field in s.fields for s in same), (cause, found)


@pytest.mark.parametrize("runbook", sorted(NOTHING_SIMILAR))
def test_each_class_shows_nothing_for_a_run_like_no_incident(runbook: str) -> None:
    assert _seen(NOTHING_SIMILAR[runbook]) == []


def test_the_table_says_where_what_and_how_sure() -> None:
    found = _seen("gpu_crash-accelerate-1192")
    t = similar.table(found)
    assert list(t.columns) == ["source", "what happened there", "cause and fix", "resolution",
                               "fields matched"]
    assert len(t) == len(found) and t["source"].str.contains("/").all()
    threads = {f"{e['source']['repo']} #{e['source']['number']}" for e in similar.load_index()
               if e["case"] in {s.case for s in found} and e["source"].get("number")}
    assert threads and threads <= set(t["source"])
