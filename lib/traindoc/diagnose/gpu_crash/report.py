"""The gpu_crash report: findings, verdict and ranked actions (the prose) from a
``GpuCrashAnalysis``. Nothing here reads the logs again."""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from ...incident import Incident
from ...parse.errors import oom_figures
from ...parse.xid import xid_info
from ...report import Action, Finding, Report, evidence, ranked
from ...shellsafe import hosts_arg, is_host_name, quote, rank_arg, reason_text, shown
from ..common import count, input_findings, reading_words, when_text
from .analysis import GpuCrashAnalysis
from .checkpoints import DEFAULT_MTBF_HOURS, Checkpoints, expected_waste
from .events import HOST_OOM_CODES, Crash

HANG_WARN_S = 300.0  # a job that took longer than this to exit after the failure "hung"

# CUDA errors that usually mean the GPU (hardware, driver) rather than the program.
HARDWARE_CUDA_RE = re.compile(
    r"unknown error|uncorrectable ECC|ECC error|unspecified launch failure|"
    r"devices? (?:is |are )?unavailable|device not ready|GPU is lost|fallen off|"
    r"hardware stack error|launch timed out", re.IGNORECASE)
PROGRAM_CUDA_RE = re.compile(
    r"illegal memory access|device-side assert|misaligned address|invalid argument|"
    r"invalid configuration|illegal instruction|no kernel image", re.IGNORECASE)
# What a node is drained for: hardware evidence in the failure's own words (issue 27).
DRAIN_EVIDENCE_RE = re.compile(
    r"uncorrectable ECC|ECC error|row.?remap|fallen off|GPU is lost|"
    r"Unable to determine the device handle|NVLink|NVL error", re.IGNORECASE)
WATCHDOG_FRAME_RE = re.compile(r"workCleanupLoop|watchdogHandler|ncclCommWatchdog|"
                               r"finishedGPUExecution|CUDAEvent\.h")
# Signals a process raises on itself by faulting (not a kill from outside).
FAULT_SIGNALS = frozenset({"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"})


def report(a: GpuCrashAnalysis) -> Report:
    """The findings, verdict, confidence and ranked actions for an analysed crash."""
    crash, ck, prog, facts = a.crash, a.checkpoints, a.progress, a.facts
    spi, save_s, save_src, yd = a.seconds_per_iteration, a.save_s, a.save_source, a.young_daly
    mtbf_hours, mtbf_s, first = a.mtbf_hours, a.mtbf_s, crash.first
    findings: list[Finding] = []
    if first is None:
        findings.append(Finding(
            "no_failure", "warning",
            ("No failure of a rank's own was found: the "
             f"{len(crash.cascade)} line(s) below are symptoms of a failure elsewhere (a peer "
             "that died, a collective that timed out, the launcher stopping the survivors)"
             if len(crash.cascade) else
             "No crash was found: no CUDA/Xid/ECC/OOM error, fatal signal, failed process or "
             "Python exception in these logs"),
            evidence(crash.cascade)))
    else:
        findings.append(Finding("first_failure", "critical", _first_title(crash, facts),
                                _first_evidence(crash)))
        findings += _detail_findings(crash, facts, a.incident)
    findings += _xid_findings(a.xid_events)
    if len(crash.cascade):
        n_r = crash.cascade["rank"].dropna().nunique()
        hosts = len(a.cascade_hosts)
        delay = a.cascade["after_s"].dropna()
        on = f" on {count(hosts, 'host')}" if hosts else ""
        who = (f"{count(n_r, 'other rank')}{on}" if n_r
               else "Its peers")
        findings.append(Finding(
            "cascade", "info",
            f"{who} failed after it: peers' NCCL/gloo errors, collective timeouts and launcher "
            "kills are symptoms of the first failure, not causes"
            + (f" (first {delay.min():.0f} s, last {delay.max():.0f} s after it)"
               if len(delay) else ""),
            evidence(crash.cascade, limit=12)))
    if len(crash.independent):
        findings.append(Finding(
            "other_failures", "warning",
            f"{len(crash.independent)} other local failure(s) on other ranks/hosts, apart from "
            "the first one in time or place: check whether they are a second, independent "
            "problem", evidence(crash.independent, limit=10)))
    hang = a.exit_delay_s
    if hang is not None:
        findings.append(Finding(
            "exit_delay", "warning" if hang > HANG_WARN_S else "info",
            f"The job's last failure line came {hang / 60:.1f} min after the first failure"
            + (": the survivors hung until a timeout instead of exiting" if hang > HANG_WARN_S
               else ""), []))
    findings += _checkpoint_findings(ck, facts, spi, prog)
    if facts["checkpoint_interval_recommended"] is not None or not math.isnan(yd["young_s"]):
        cur = ck.interval
        findings.append(Finding(
            "checkpoint_interval", "info",
            f"Young/Daly: τ = sqrt(2·δ·M) = sqrt(2 × {save_s:g} s × {mtbf_hours:g} h) = "
            f"{yd['young_s']:.0f} s ({yd['young_s'] / 3600:.2f} h)"
            + (f" = {facts['checkpoint_interval_recommended']} iterations at {spi:.3g} s each"
               if facts["checkpoint_interval_recommended"] else "")
            + f"; Daly's refinement {yd['daly_s']:.0f} s. Save cost: {save_src}; M: "
            f"mtbf_hours={mtbf_hours:g}"
            + (f". Current interval: {cur} iterations, expected waste "
               f"{100 * expected_waste(cur * spi, save_s, mtbf_s):.1f}% vs "
               f"{100 * expected_waste(yd['young_s'], save_s, mtbf_s):.1f}% at the optimum"
               if cur and spi else ""), []))
    findings += input_findings(a.incident)

    assumed = ([f"a save takes {save_s:g} s"] if save_src.startswith("assumed") else []) + (
        ["a GPU fails once a week"] if mtbf_hours == DEFAULT_MTBF_HOURS else [])
    actions = ranked(_actions(crash, facts, ck, spi, save_s, yd, hang, a.gpus_per_node,
                              assumed=assumed, total=prog.total))
    verdict, confidence = _verdict(crash, facts, len(a.cascade_hosts))
    read = reading_words(a.incident)
    if crash.first is None and not len(crash.cascade) and read:
        verdict = verdict.rstrip(".") + f" ({read})."
    report_facts = {k: list(v) if isinstance(v, list) else v for k, v in facts.items()}
    return Report("gpu_crash", verdict, confidence, report_facts, findings, actions)


def _who(facts: dict[str, Any]) -> str:
    ranks, hosts = facts["failed_ranks"], facts["failed_hosts"]
    if ranks and hosts:
        return f"Rank {', '.join(map(str, ranks))} on {', '.join(hosts)}"
    if ranks:
        return f"Rank {', '.join(map(str, ranks))}"
    if hosts:
        return f"Host {', '.join(hosts)}"
    return "A process (no rank or host in its lines)"


# error_kind (a fact's value) in words for sentences (issue 15.10: no internal ids in prose)
KIND_WORDS = {"cuda_error": "a CUDA error", "xid": "an Xid from the GPU driver",
              "oom": "out of memory", "nccl_error": "an NCCL error", "ecc": "an ECC memory error",
              "signal": "a fatal signal", "python": "a Python error"}


def _first_title(crash: Crash, facts: dict[str, Any]) -> str:
    first = crash.first
    assert first is not None
    when = f" at {when_text(facts['first_failure_time'])}" if facts["first_failure_time"] else ""
    how = {"time": "the earliest timestamp", "root_cause": "torchrun's root-cause record",
           "line_order": "line order, the lines carry no timestamps",
           "silent": "the only rank that reported nothing while the others failed after it"}
    kind = KIND_WORDS.get(facts["error_kind"], facts["error_kind"]) or "cause unknown"
    note = first.get("rank_note")
    note = f" ({note})" if isinstance(note, str) and note else ""
    return (f"{_who(facts)}{note} failed first{when}: {kind} — {facts['error_message']}"
            f" [chosen by {how.get(crash.by, crash.by)}]")


def _first_evidence(crash: Crash) -> list[str]:
    rows = crash.cluster
    if not len(rows) and crash.first is not None and crash.first.get("source") is not None:
        rows = pd.DataFrame([crash.first])
    return evidence(rows, limit=12)


def _detail_findings(crash: Crash, facts: dict[str, Any], incident: Incident) -> list[Finding]:
    out: list[Finding] = []
    first = crash.first
    assert first is not None
    kind, msg = facts["error_kind"], facts["error_message"] or ""
    errs = incident.errors
    cl = crash.cluster
    frames_rows = errs[errs["frames"].notna()] if "frames" in errs else errs.iloc[0:0]
    if len(cl):
        frames_rows = frames_rows[frames_rows["source"].isin(list(cl["source"]))]
    frames = [f for fl in frames_rows["frames"] for f in (fl or [])] if len(frames_rows) else []
    if kind == "cuda_error" or any(WATCHDOG_FRAME_RE.search(f) for f in frames):
        if frames and any(WATCHDOG_FRAME_RE.search(f) for f in frames):
            out.append(Finding(
                "async_cuda_error", "info",
                "The CUDA error surfaced in ProcessGroupNCCL's watchdog thread (it polls CUDA "
                "events of finished collectives): the fault happened earlier, in some kernel on "
                "this GPU, and was only noticed there — the frames do not point at the culprit",
                frames[:10]))
    if kind == "cuda_error":
        if HARDWARE_CUDA_RE.search(msg):
            out.append(Finding(
                "hardware_suspect", "warning",
                f"'{msg}' is what a GPU that failed under the job looks like (an Xid in the "
                "node's kernel log usually says which): treat the node as suspect until a "
                "diagnostic passes", []))
        elif PROGRAM_CUDA_RE.search(msg):
            out.append(Finding(
                "program_suspect", "warning",
                f"'{msg}' is usually the program (an out-of-bounds index, a bad kernel), not the "
                "hardware: rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel before blaming "
                "the node", []))
    if kind == "oom":
        ooms = cl[cl["kind"] == "oom"] if len(cl) else cl
        figs = [oom_figures(str(m)) for m in ooms["message"]] if len(ooms) else []
        figs = [f for f in figs if f]
        if figs:
            f0 = figs[0]
            frag = f0.get("reserved_unallocated")
            out.append(Finding(
                "oom_figures", "info",
                f"GPU {f0['gpu']}: tried to allocate {f0['tried']} GiB with {f0['free']} GiB free "
                f"of {f0['total']} GiB; PyTorch held {f0['allocated']} GiB"
                + (f" and {frag} GiB reserved but unallocated (fragmentation)" if frag else ""),
                evidence(ooms, limit=4)))
    if kind == "signal" and first["code"] == "SIGKILL":
        out.append(Finding(
            "killed", "warning",
            "Killed by SIGKILL with no error of its own: the kernel's OOM killer, the "
            "scheduler (time limit, preemption, scancel) or an operator; the node's dmesg and "
            "sacct tell which", []))
    if crash.by == "silent":
        out.append(Finding(
            "silent_rank", "warning",
            f"Rank {int(first['rank'])} appears in the logs but reported no failure while every "
            "other rank failed after it: it most likely died first without a word (SIGKILL, "
            "node loss); its own stderr and the node's dmesg are missing", []))
    return out


def _xid_findings(xids: pd.DataFrame) -> list[Finding]:
    out: list[Finding] = []
    if not len(xids):
        return out
    for code, g in xids.groupby("code", sort=False):
        info = xid_info(int(code) if str(code).isdigit() else None)
        hosts = sorted({str(h) for h in g["host"].dropna()})
        sev = "info" if info.cascade or info.scope == "none" else "critical"
        out.append(Finding(
            f"xid_{code}", sev,
            f"Xid {code} ({info.mnemonic}): {info.meaning}"
            + (f" on {', '.join(hosts)}" if hosts else "")
            + f" — {info.origin}; NVIDIA's immediate action: {info.resolution}; "
              f"take out of service: {info.scope}; next: {info.next_step}",
            evidence(g, limit=6)))
    return out




def _checkpoint_findings(ck: Checkpoints, facts: dict[str, Any], spi: float | None,
                         prog: Any) -> list[Finding]:
    out: list[Finding] = []
    lost_it, lost_h = facts["lost_iterations"], facts["lost_hours"]
    if ck.how in ("saved", "loaded"):
        what = "saved" if ck.how == "saved" else "loaded at start (no save after it)"
        out.append(Finding(
            "last_checkpoint", "info",
            f"Last checkpoint: iteration {ck.last_iteration} ({what})"
            + (f" at {ck.last_path}" if ck.last_path else "")
            + (f"; saving took ~{ck.save_s:.0f} s ({ck.save_s_source})" if ck.save_s else "")
            + (f"; saves every {ck.interval} iterations" if ck.interval else ""), []))
    elif ck.how == "inferred":
        out.append(Finding(
            "last_checkpoint", "info",
            f"No checkpoint line in the logs; with save_interval the last save was at iteration "
            f"{ck.last_iteration} (inferred, not seen)", []))
    else:
        out.append(Finding(
            "no_checkpoint_lines", "warning",
            "No checkpoint save or load line in these logs: the resume point is unknown (set "
            "save_interval to place it, or add the log that has the save lines)", []))
    if ck.incomplete is not None:
        out.append(Finding(
            "incomplete_save", "critical",
            f"The save of iteration {ck.incomplete} started and never finished: that "
            "checkpoint is probably partial — do not resume from it", []))
    if lost_it is not None:
        ckpt = facts["last_checkpoint_iteration"]
        point = f"iteration {ckpt}" if ckpt is not None else "the start of training"
        hours = f" ≈ {lost_h:.2f} h of the whole job" if lost_h is not None else ""
        out.append(Finding(
            "lost_work", "warning" if (lost_h or 0) >= 1 else "info",
            f"Work lost: {lost_it} iteration(s){hours} (last iteration {prog.step}, resume "
            f"point {point})", [f"{prog.source}: {prog.line}"] if prog.source else []))
    return out


def _path_words(path: Any) -> str:
    """A path from the logs as it may stand in an action: shell-quoted, or escaped when it
    cannot be quoted (a control character)."""
    return quote(path) or shown(path)


def _unknown_host(f: dict[str, Any], refused: list[str]) -> str:
    """Where the failed node is to be found when no usable host name is in the logs: said in
    words, never guessed from the rank (a rank // GPUs-per-node is a guess the layout, srun's
    distribution or a restart on other nodes makes wrong)."""
    ranks = [r for r in (rank_arg(x) for x in f["failed_ranks"]) if r is not None]
    who = f"rank {ranks[0]}" if ranks else "the failed process"
    bad = (f"the logs name {', '.join(shown(h) for h in refused)}, which is not a host name, "
           "so it is not put into a command; " if refused else "")
    return (f"{bad}the logs do not name the host of {who}: find it (sacct -j $SLURM_JOB_ID -o "
            "NodeList; the node whose kernel log has the Xid; the launcher's log with srun -l "
            "or torchrun's host field), then drain it by hand")


def _actions(crash: Crash, f: dict[str, Any], ck: Checkpoints, spi: float | None, save_s: float,
             yd: dict[str, float], hang: float | None, gpus_per_node: int,
             assumed: list[str] | None = None, total: int | None = None) -> list[Action]:
    acts: list[Action] = []
    first = crash.first
    kind, msg = f["error_kind"], f["error_message"] or ""
    hosts = f["failed_hosts"]
    xinfo = [xid_info(c) for c in f["xid_codes"]]
    hw_xids = [x for x in xinfo if not x.cascade and x.scope in ("node", "gpu")]
    # An Xid the catalogue calls an application fault (13, 31, 43…) takes nothing out of
    # service: the drain advice must agree with the Xid table the runbook shows.
    first_xid = (xid_info(int(first["code"])) if first is not None and kind == "xid"
                 and str(first["code"]).isdigit() else None)
    # Drain only on hardware evidence (issue 27): an Xid of the hardware kind, ECC or a row
    # remap, a GPU fallen off the bus, NVLink errors, the scheduler's own node failure. An
    # NCCL "Cuda failure 'invalid argument'", an OOM or a Python error drains nothing.
    hw_msg = bool(DRAIN_EVIDENCE_RE.search(msg))
    hardware = bool(hw_xids) or kind == "ecc" or (
        kind == "xid" and (first_xid is None or first_xid.scope in ("node", "gpu"))) or (
        kind in ("cuda_error", "nccl_error") and hw_msg) or (
        first is not None and first["code"] == "slurm_node_failure")
    suspect = (not hardware and kind == "cuda_error" and bool(HARDWARE_CUDA_RE.search(msg))
               and not PROGRAM_CUDA_RE.search(msg))
    program = kind == "cuda_error" and bool(PROGRAM_CUDA_RE.search(msg)) and not hw_xids
    reason = (f"Xid {', '.join(str(x.code) for x in hw_xids)}" if hw_xids
              else reason_text(msg or kind or "GPU failure", 40))
    if first is not None and hardware and not program:
        node = hosts_arg(hosts)
        refused = [h for h in hosts if not is_host_name(h)]
        if node is not None:
            how = (f"scontrol update nodename={node} state=drain reason=\"{reason} (job "
                   f"$SLURM_JOB_ID)\"; restart with: sbatch --exclude={node} <job script>")
        else:
            how = (_unknown_host(f, refused) + ": scontrol update nodename=<node> state=drain "
                   f"reason=\"{reason}\" and sbatch --exclude=<node> <job script>")
        acts.append(Action(
            "drain_node", 1,
            f"Drain {', '.join(hosts) if node is not None else 'the failed node'} and exclude "
            "it from the restart",
            f"The first failure is a GPU/driver fault ({reason}); restarting on the same node "
            "invites the same crash, and draining keeps other jobs off it until it is checked.",
            how))
        diag = "; ".join(dict.fromkeys(x.next_step for x in hw_xids)) if hw_xids else (
            "no Xid in these logs: read the node's kernel log (sudo dmesg -T | grep -E "
            "'NVRM|Xid'; add it to log_path and rerun this runbook), nvidia-smi -q -d "
            "ECC,ROW_REMAPPER, then dcgmi diag -r 2 (-r 3 before returning it to service)")
        acts.append(Action(
            "diagnose_gpu", 2, "Run the diagnostic that fits the fault before returning the node",
            "The Xid/ECC/CUDA error says which kind of check settles it: "
            + (", ".join(f"Xid {x.code}: {x.meaning}" for x in hw_xids) or msg or kind),
            diag + (f"  (on {', '.join(hosts)})" if node is not None else "")))
    elif first is not None and suspect:
        node = hosts_arg(hosts)
        acts.append(Action(
            "check_node", 1,
            f"Check {', '.join(hosts) if node is not None else 'the failed node'} for a GPU "
            "fault before restarting on it",
            f"'{msg}' is how a failing GPU often shows itself, but it is not proof: drain the node "
            "only if its kernel log or nvidia-smi shows a hardware fault (an Xid, ECC or row-remap "
            "errors, a GPU fallen off the bus, NVLink errors).",
            ("on " + (node if node is not None else "its node") + ": sudo dmesg -T | grep -E "
             "'NVRM|Xid'; nvidia-smi -q -d ECC,ROW_REMAPPER; add the kernel log to log_path and "
             "rerun this runbook: it names the drain command when the fault is there")
            + ("" if node is not None else
               "; " + _unknown_host(f, [h for h in hosts if not is_host_name(h)]))))
    elif first is not None and first_xid is not None:
        acts.append(Action(
            "application_xid", 1, f"Debug the program: Xid {first_xid.code} is an application "
            "fault, not a broken GPU",
            f"Xid {first_xid.code} ({first_xid.meaning}): {first_xid.next_step}. Nothing to "
            "drain: the same code on healthy hardware fails the same way.",
            "rerun the failing step with CUDA_LAUNCH_BLOCKING=1, or under compute-sanitizer "
            "(compute-sanitizer --tool memcheck python …)"))
    elif first is not None:
        acts += _software_actions(first, kind, msg, f)
    if first is not None:
        resume = ck.last_iteration
        acts.append(Action(
            "resume", 3,
            f"Resume from the last checkpoint (iteration {resume})" if resume is not None
            else "Resume from the last complete checkpoint",
            ("Work since then is lost either way; resuming from the newest complete checkpoint "
             "loses the least." + (f" The save of iteration {ck.incomplete} never finished: "
                                   "skip it." if ck.incomplete is not None else "")),
            ("Megatron: --load <save dir> (reads latest_checkpointed_iteration.txt); DeepSpeed: "
             "the 'latest' file names global_stepN; HF: trainer.train(resume_from_checkpoint="
             "'<dir>/checkpoint-N')" + (f"; path seen: {_path_words(ck.last_path)}" if ck.last_path else "")
             + (f"; remove the partial iteration {ck.incomplete} directory first"
                if ck.incomplete is not None else ""))))
    if f["checkpoint_interval_recommended"]:
        n = f["checkpoint_interval_recommended"]
        cur = f" (now {ck.interval})" if ck.interval else ""
        close = bool(ck.interval) and 0.75 <= ck.interval / n <= 1.33
        title = (f"Keep saving about every {ck.interval} iterations (optimum {n})" if close
                 else f"Save a checkpoint every {n} iterations{cur}")
        why = (f"Young/Daly: τ = sqrt(2·δ·M) with δ = {save_s:g} s per save and M = "
               f"{yd['young_s'] ** 2 / (2 * save_s) / 3600:g} h between failures gives "
               f"{yd['young_s']:.0f} s ≈ {n} iterations at {spi:.3g} s/iteration; more often "
               "wastes time saving, less often loses more work per crash.")
        if assumed:
            title += f", if {' and '.join(assumed)}"
            why += (" Assumed (BLOOM-176B's figures), not measured here: "
                    + "; ".join(assumed) + " — set checkpoint_save_s / mtbf_hours.")
        if total and n >= total:  # the whole job is shorter than the optimum: cap by its length
            n = max(1, total // 2)
            title = (f"This job ({total} iterations) is shorter than the optimal checkpoint "
                     f"interval: save once halfway (every {n} iterations)")
            why += (f" The job has {total} iterations in all, fewer than the optimum: one save "
                    "halfway bounds the loss to half the run.")
        acts.append(Action(
            "save_interval", 6 if close else 4, title, why,
            f"Megatron: --save-interval {n}; HF Trainer: save_steps={n}; torchtitan: "
            f"checkpoint.interval={n}; DeepSpeed: engine.save_checkpoint(dir) every {n} steps"))
    if first is not None:
        hung = hang is not None and hang > HANG_WARN_S
        acts.append(Action(
            "exit_on_failure", 2 if hung else 5,
            "Make a crashed job exit instead of hanging",
            ("When one rank dies the others block in their next collective; without async error "
             "handling they wait there (BLOOM-176B lost hours this way), and without "
             "--kill-on-bad-exit srun keeps the step alive, so nothing restarts it."
             + (f" Here the last failure line came {hang / 60:.0f} min after the first."
                if hang else "")),
            "export TORCH_NCCL_ASYNC_ERROR_HANDLING=1  # torch<2.2: NCCL_ASYNC_ERROR_HANDLING=1; "
            "srun --kill-on-bad-exit=1 --wait=60 …  # end the step 60 s after the first task "
            "dies; #SBATCH --requeue (or a job array with %1) so the restart is automatic"))
    return acts


def _software_actions(first: pd.Series, kind: str, msg: str, f: dict[str, Any]) -> list[Action]:
    who = _who(f)
    if kind == "oom" and first["code"] in HOST_OOM_CODES:
        return [Action(
            "reduce_memory", 1, "Reduce host (CPU) memory before restarting",
            f"{who} was killed by the out-of-memory killer ({msg[:120]}): host RAM, not GPU "
            "memory, ran out; the same step will fail again.",
            "sacct -j $SLURM_JOB_ID -o JobID,MaxRSS,ReqMem,NodeList; fewer DataLoader workers or "
            "prefetch, no full dataset in RAM per rank, CPU-offload buffers sized to the node; "
            "or ask for more memory (#SBATCH --mem=…)")]
    if kind == "oom":
        return [Action(
            "reduce_memory", 1, "Reduce peak GPU memory before restarting",
            f"{who} ran out of GPU memory ({msg[:120]}); the same step will fail again.",
            "lower the micro-batch size or sequence length, enable activation checkpointing; "
            "if much memory is 'reserved but unallocated', "
            "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")]
    if kind == "cuda_error":
        return [Action(
            "debug_kernel", 1, "Find the faulting kernel",
            f"'{msg}' usually comes from the program (bad index, kernel bug), reported "
            "asynchronously where it was noticed.",
            "rerun the failing step with CUDA_LAUNCH_BLOCKING=1 (or under compute-sanitizer); "
            "TORCH_USE_CUDA_DSA builds give device-side asserts")]
    if kind == "python":
        return [Action(
            "fix_exception", 1, "Fix the Python exception",
            f"{who} raised it first ({msg[:160]}); every other failure followed from it.",
            f"read the traceback ending at {_path_words(first['source'])}")]
    if kind == "signal" and first["code"] in FAULT_SIGNALS:
        return [Action(
            "debug_native_crash", 1, "Find the native code that crashed",
            f"{who} died of {first['code']} ({msg[:120]}): a fault in native code (a library, "
            "a driver, a custom kernel), not a kill from outside.",
            f"read the Python stack dumped at {_path_words(first['source'])} (faulthandler) for the call "
            "that crashed; for the native frames: ulimit -c unlimited, rerun, then gdb -batch "
            "-ex bt $(which python) core; check that the GPU driver and runtime match the torch "
            "build (python -m torch.utils.collect_env)")]
    if kind in ("signal", "exit"):
        return [Action(
            "why_killed", 1, "Find out who killed the process",
            f"{who} was {msg or 'terminated'} without an error of its own.",
            "on its node: sudo dmesg -T | grep -i -E 'killed process|out of memory|NVRM'; "
            "sacct -j $SLURM_JOB_ID -o JobID,State,ExitCode,MaxRSS,NodeList; look for "
            "scancel/preemption in the scheduler log")]
    if kind == "nccl_error" and first["code"] in ("nccl_unhandled_cuda", "nccl_warn_cuda"):
        return [Action(  # (hardware words in the message drain instead: _actions)
            "debug_cuda_in_nccl", 1, "Find the CUDA error NCCL hit",
            f"{who} reported {msg[:120]}: a CUDA call inside NCCL failed; without an Xid, ECC "
            "or bus error that is no proof of broken hardware (an invalid argument or out of "
            "memory is the program's).",
            "rerun with NCCL_DEBUG=INFO CUDA_LAUNCH_BLOCKING=1 to see the failing call; read the "
            "node's kernel log (sudo dmesg -T | grep -E 'NVRM|Xid') and add it to log_path: the "
            "runbook names a drain when the fault is the GPU's")]
    if kind == "nccl_error":
        return [Action(
            "check_network", 1, "Check the network path of the failed rank",
            f"{who} reported {msg[:120]} with no local cause in these logs.",
            "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET; ibstat / ibv_devinfo on its node; run "
            "nccl-tests all_reduce_perf across the nodes involved")]
    return []


def _verdict(crash: Crash, f: dict[str, Any], n_hosts: int) -> tuple[str, str]:
    if crash.first is None:
        if len(crash.cascade):
            return ("Only symptoms of a peer's failure (NCCL/gloo errors, timeouts, kills) are in "
                    "these logs; the rank that failed first left no line here — add every "
                    "rank's log and the nodes' dmesg.", "low")
        return ("No GPU crash, fatal error or failed process was found in these logs.", "low")
    when = f" at {when_text(f['first_failure_time'])}" if f["first_failure_time"] else ""
    casc = ""
    if len(crash.cascade):
        n_r = crash.cascade["rank"].dropna().nunique()
        n_h = n_hosts
        on = f" on {count(n_h, 'host')}" if n_h else ""
        casc = (f"; {count(n_r, 'other rank')}{on} failed after it "
                "as a cascade" if n_r else "; its peers' failures followed as a cascade")
    lost = ""
    if f["lost_iterations"] is not None:
        base = (f"the checkpoint at iteration {f['last_checkpoint_iteration']}"
                if f["last_checkpoint_iteration"] is not None else "the start of training")
        lost = (f"; {f['lost_iterations']} iteration(s) lost since {base}"
                + (f" ({f['lost_hours']:.2f} h)" if f["lost_hours"] is not None else ""))
    elif f["last_iteration"] is not None:
        lost = f"; last iteration {f['last_iteration']}, no checkpoint line to measure the loss"
    what = (f"with {KIND_WORDS.get(f['error_kind'], f['error_kind'])}: {f['error_message']}"
            if f["error_kind"] else f"({f['error_message']})")
    verdict = f"{_who(f)} failed first{when} {what}{casc}{lost}."
    if crash.by == "silent":
        conf = "medium"
    elif crash.by in ("time", "root_cause"):
        conf = "high"
    else:
        causes = crash.events[crash.events["role"] == "cause"]
        conf = "high" if len(crash.independent) == 0 and causes["rank"].nunique() <= 1 \
            else "medium"
    return verdict, conf
