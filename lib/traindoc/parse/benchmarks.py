"""Per-host and per-rank timings into the ``host_timings`` table.

- Benchmark CSVs (a whole-file loader, in ``FILE_LOADERS``): one row per host, a ``host``
  (or ``hostname``/``node``) column, optionally ``rank``/``gpu``, and one or more numeric
  columns (``seconds``, ``tflops``, ``busbw_gbps`` …), each becoming a ``metric``; or the long
  form ``host,metric,value``. Whether a metric is better high or low is read from its name
  (``metric_direction``). This is what a per-node burn-in or matmul benchmark run with
  ``srun --ntasks-per-node=1`` writes: ``host,seconds`` / ``jean-zay-iam52,303.6``.
- Megatron's straggler detector (``megatron/core/utils.py`` ``StragglerDetector.report``, enabled
  by ``--log-straggler``)::

      [2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | MnPwr/Rnk:
      601796W/8 | … | MnClk/Rnk: 1950MHz/28 | … | MnEtpt/Rnk: 296.02TF/0 | MxEtpt/Rnk: 297.32TF/8

  each ``<Mn|Mx><Name>/Rnk: <value><unit>/<rank>`` a row (metric ``Rtt/Mx``, ``Etpt/Mn``…), plus
  its ``^^^^ Bottom N Ranks with lowest  Etpt(TF): 240.79TF/1, …`` companion lines.
- Megatron's timers (``megatron/core/timers.py``): ``(min, max) time across ranks (ms):`` with
  ``    forward-backward ....: (26094.39, 26095.09)`` lines (metric ``timer:<name>:min|max``, no
  rank), ``max time across ranks (ms):``, and with ``--timing-log-option all`` ``times across
  ranks (ms):`` / ``  forward-backward:`` / ``     rank  3: 3621.02`` (metric ``timer:<name>``
  per rank).
- SLURM node lists: ``SLURM_JOB_NODELIST=…``, scontrol's ``NodeList=…`` and BigScience's
  PULSE heartbeat ``… on 'gpu_p5' partition (jean-zay-iam[01-34,36-49])``: metric ``nodelist``,
  ``host`` the expression, ``value`` its number of nodes.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from ..hostlist import expand
from .base import FileLoader, LineParser, Row, to_float, to_int

MAX_CSV_BYTES = 256 * 1024 * 1024
CSV_SUFFIXES = (".csv", ".tsv")
HOST_COLUMNS = ("host", "hostname", "node", "nodename", "node_name", "host_name")
RANK_COLUMNS = ("rank", "global_rank", "gpu", "gpu_id", "gpu_index", "local_rank", "device")
LONG_FORM = ("metric", "value")
# Metric-name words that say lower is better (a time) / higher is better (a rate).
TIME_WORDS = ("sec", "second", "time", "latency", "duration", "elapsed", "_ms", "_s", "rtt")
RATE_WORDS = ("flop", "throughput", "per_s", "/s", "bandwidth", "bw", "gbps", "samples",
              "tokens", "tps", "etpt", "clk", "clock", "util", "mfu")


def metric_direction(metric: str) -> int:
    """+1 when a larger value of ``metric`` is worse (a time), -1 when smaller is worse (a
    rate, a clock), 0 when its name does not tell."""
    m = metric.lower()
    if m in ("s", "ms", "seconds"):
        return 1
    if any(w in m for w in RATE_WORDS):
        return -1
    if any(w in m for w in TIME_WORDS) or m.endswith(("_s", " s", "(s)", "(ms)")):
        return 1
    return 0


def _dialect(head_line: str) -> str:
    return "\t" if head_line.count("\t") > head_line.count(",") else ","


def _header(head: bytes) -> list[str]:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    first = text.splitlines()[0] if text.strip() else ""
    try:
        cells = next(csv.reader([first], delimiter=_dialect(first)))
    except (csv.Error, StopIteration):
        return []
    return [c.strip().lower() for c in cells]


def looks_like_benchmark(path: Path, head: bytes) -> bool:
    """A CSV/TSV whose header names a host column and at least one other column."""
    if path.suffix.lower() not in CSV_SUFFIXES:
        return False
    cols = _header(head)
    return len(cols) >= 2 and any(c in HOST_COLUMNS for c in cols)


def load_benchmark(path: Path) -> list[tuple[str, Row]]:
    """A per-host benchmark table as ``host_timings`` rows (ValueError when unusable)."""
    if path.stat().st_size > MAX_CSV_BYTES:
        raise ValueError(f"larger than the {MAX_CSV_BYTES} byte cap for a benchmark table")
    out: list[tuple[str, Row]] = []
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as fh:
        first = fh.readline()
        fh.seek(0)
        reader = csv.reader(fh, delimiter=_dialect(first))
        try:
            header = [c.strip() for c in next(reader)]
        except StopIteration:
            raise ValueError("empty benchmark table") from None
        low = [h.lower() for h in header]
        host_i = next(i for i, c in enumerate(low) if c in HOST_COLUMNS)
        rank_i = next((i for i, c in enumerate(low) if c in RANK_COLUMNS), None)
        long_form = all(c in low for c in LONG_FORM)
        metric_i = low.index("metric") if long_form else None
        value_i = low.index("value") if long_form else None
        for lineno, cells in enumerate(reader, start=2):
            if not cells or host_i >= len(cells) or not cells[host_i].strip():
                continue
            base: Row = {"host": cells[host_i].strip(), "source": f"{path}:{lineno}",
                         "line": ",".join(cells)}
            if rank_i is not None and rank_i < len(cells):
                base["rank"] = to_int(cells[rank_i])
            if long_form:
                assert metric_i is not None and value_i is not None
                if max(metric_i, value_i) < len(cells):
                    v = to_float(cells[value_i])
                    if v is not None:
                        out.append(("host_timings", {**base, "metric": cells[metric_i].strip(),
                                                     "value": v}))
                continue
            for i, name in enumerate(header):
                if i in (host_i, rank_i) or i >= len(cells):
                    continue
                v = to_float(cells[i])
                if v is not None:
                    out.append(("host_timings", {**base, "metric": name, "value": v}))
    if not out:
        raise ValueError("no numeric column next to the host column")
    return out


LOADER = FileLoader("benchmark", looks_like_benchmark, load_benchmark)

# -- SLURM node lists -----------------------------------------------------------------------
# (as the environment prints it, "SLURM_JOB_NODELIST=gpu[01-04]", or a trainer's dump of it,
# "0 - SLURM_JOB_NODELIST: indigo54": SymbolicMathematics' and XLM's init_distributed)
_HOSTEXPR = r"[A-Za-z0-9][\w.\-]*(?:\[[\d,\-]+\][\w.\-]*)*"
NODELIST_RE = re.compile(
    r"(?:SLURM_(?:JOB_)?NODELIST(?:=|:\s*+)|\bNodeList=|' partition \()"
    rf"(?P<expr>{_HOSTEXPR}(?:,{_HOSTEXPR})*)")
# The job-log header Kaldi's queue.pl/slurm.pl (and ESPnet, icefall after them) write:
# "# Running on r7n01": the one machine the job ran on; RETURNN's start-up header
# ("Hostname: cn-234", rwth-i6/returnn's __main__.py prints socket.gethostname(): returnn#1486);
# a job script's own banner, alone or before its next " | " field ("Node: fc10713 | Job:
# 35598063 | Start: …", ermia's HF-TRL job-35598063.out) or a sentence naming the host
# ("Running on host gpu-a100-07", "Running on node: c4-n35"); a site's SLURM prolog and
# epilogue banners ("Running SLURM prolog script on indigo54.cluster.local", "Running epilogue
# script on indigo52.": Southampton's Iridis, AndreiS22/Reproduce_GCD_LLM's slurm-*.out); Kaldi's
# run.pl header ("# Invoked at Tue Oct 22 09:31:32 +08 2024 from node09" / "# Started at Tue Oct
# 22 09:31:35 +08 2024 on node09", its footer "# Ended (code 256) at …": the machine that ran it,
# hexin's AVSE_Journal train log).
JOB_HEADER_HOST_RE = re.compile(
    rf"^(?:#\s*Running on|Hostname:|Node:|Running on (?:host|node):?"
    rf"|Running (?:SLURM )?(?:prolog|epilogue) script on"
    rf"|#\s*Started at [\w:+ -]{{20,50}}? on) (?P<expr>{_HOSTEXPR})"
    r"\s*(?:$|\| )")
# A program's own start-up line naming its machine beside its pid: Marian's logger, "[2019-01-07
# 04:46:00] [marian] Running on spider3.lingea.cz as process 19132 with command line:"
# (cepin19/dp's train logs)
PROGRAM_HOST_RE = re.compile(
    rf"(?:^|\] )Running on (?P<expr>{_HOSTEXPR}) as process \d+\b")
# An interactive session's shell prompt ("(abnn) mingzeya@c002:~/case1    $ ", "[user@gpu03 run]$
# python train.py", "root@4012…-taskrole1-0:/code# python train.py"): the machine the commands
# ran on, as pasted terminal captures show it (ArjunaCluster/ArjunaUsers#52: the prompt after a
# bare "Killed"; jaewon-lee-b/lte#22: the prompt that started "python train.py", then
# "Killed"). A prompt whose command runs the work elsewhere (ssh, a scheduler, a container) names
# no machine of the job.
SHELL_PROMPT_RE = re.compile(
    r"^(?:\([\w.\-]+\) ?)*(?:\[[\w.\-]+@(?P<h1>[A-Za-z0-9][\w.\-]*) [^\]]*\]"
    r"|[\w.\-]+@(?P<h2>[A-Za-z0-9][\w.\-]*):[^$#@]*?)\s*[$#](?:\s+(?P<cmd>\S.*?))?\s*$")
ELSEWHERE_COMMANDS = frozenset(("ssh", "scp", "rsync", "sbatch", "srun", "salloc", "qsub", "bsub",
                                "kubectl", "docker", "pdsh", "squeue", "sinfo", "scontrol",
                                "sacct"))
# ... and a prompt that only reads a log ("tail -f slurm-42.out") or sits on a login node names
# the machine of the terminal, not of the job: no machine either
VIEWER_COMMANDS = frozenset(("tail", "cat", "less", "more", "head", "grep", "zcat", "zless",
                             "vim", "vi", "nano", "watch", "ls", "cd", "echo"))
LOGIN_HOST_RE = re.compile(r"^(?:login|head|frontend|submit)[\w\-]*$", re.IGNORECASE)


# DeepSpeed's launcher (launch.py): "WORLD INFO DICT: {'worker-0': [0, 1, …, 15]}", the
# hostfile's machines as keys (their GPU ids as values); "localhost" names no machine
# (DeepSpeedExamples' check-7b training.log; a two-node job: {'v100x16-1': […], 'v100x16-2': […]}).
WORLD_INFO_RE = re.compile(r"WORLD INFO DICT: \{(?P<body>[^{}]*)\}")
WORLD_INFO_KEY_RE = re.compile(r"'(?P<host>[A-Za-z0-9][\w.\-]*)': \[")
NO_MACHINE = frozenset({"localhost", "127.0.0.1"})


def parse_nodelist(text: str) -> Row | None:
    """A SLURM node list (``SLURM_JOB_NODELIST=``, ``NodeList=``, BigScience's PULSE line), a
    job-log header naming its machine (``# Running on r7n01``, ``Hostname: cn-234``), a shell
    prompt's machine, or the machines of DeepSpeed's ``WORLD INFO DICT``."""
    w = WORLD_INFO_RE.search(text) if "WORLD INFO DICT" in text else None
    if w is not None:
        hosts = [k["host"] for k in WORLD_INFO_KEY_RE.finditer(w["body"])]
        if not hosts or any(h in NO_MACHINE for h in hosts):
            return None
        return {"host": ",".join(hosts), "metric": "nodelist", "value": float(len(hosts))}
    p = SHELL_PROMPT_RE.match(text) if "@" in text else None
    if p is not None:
        host = p["h1"] or p["h2"]
        cmd = [w for w in (p["cmd"] or "").split() if w != "sudo"]
        program = cmd[0].rsplit("/", 1)[-1] if cmd else ""
        if (host in NO_MACHINE or LOGIN_HOST_RE.match(host)
                or program in ELSEWHERE_COMMANDS or program in VIEWER_COMMANDS):
            return None
        return {"host": host, "metric": "nodelist", "value": 1.0}
    m = (NODELIST_RE.search(text) or JOB_HEADER_HOST_RE.match(text)
         or PROGRAM_HOST_RE.search(text))
    expr = m["expr"].rstrip(".") if m else ""  # (a sentence's full stop: "script on indigo52.")
    if not expr or expr in ("(null)", "None"):
        return None
    try:
        hosts = expand(expr)
    except ValueError:
        return None
    return {"host": expr, "metric": "nodelist", "value": float(len(hosts))}


# -- the node layout a launcher states: which node this is and how many processes per node ----
# Metric "layout:<key>" (value the number; host the line's host when a prefix names one).
# A launcher's local rank becomes a global rank only with these (``diagnose.common.global_rank``).
# Real lines: torch elastic's rendezvous result ("  group_rank=0", "  group_world_size=2",
# "  local_ranks=[0]": meta-pytorch/torchx#492), DeepSpeed's launcher ("[launch.py:142:main]
# nnodes=1, num_local_procs=8, node_rank=0": Megatron-DeepSpeed MoE log), torchrun's command
# line ("--standalone --nproc_per_node=8", "--nnodes=2 --node_rank=1"), also as the Python list
# a wrapper's subprocess.CalledProcessError quotes ("Command '['torchrun', '--nnodes', '1',
# '--node_rank', '0', '--nproc_per_node', '8', …]'", LLaMA-Factory's CLI).
_N = r"(?:[= ]|',\s*')\s*(?P<n>\d+)\b(?![:.])"
LAYOUT_KEYS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("node_rank", re.compile(rf"(?:--node[_-]rank|\bnode_rank|\bgroup_rank|\bNODE_RANK){_N}")),
    ("nproc_per_node", re.compile(
        rf"(?:--nproc[_-]per[_-]node|\bnum_local_procs|\blocal_world_size|\bLOCAL_WORLD_SIZE)"
        rf"{_N}")),
    ("nnodes", re.compile(rf"(?:--nnodes|\bnnodes|\bgroup_world_size|\bNNODES){_N}")),
)
LOCAL_RANKS_RE = re.compile(r"\blocal_ranks=\[(?P<list>[\d, ]*)\]")
# a job that says how many processes it has in all: levanter's "Initialized jax.distributed with
# 8 devices, 1 processes, …" (older: "… 1 hosts"; levanter/distributed.py), oumi's (and lema's)
# "Building model using device_map: None (DeviceRankInfo(world_size=1, rank=0,
# local_world_size=1, local_rank=0))..." (gtseligas/lcn-llama train.out), DeepSpeed's launcher
# "[launch.py:163:main] dist_world_size=6" (deepspeed/launcher/launch.py), Accelerate's state
# printed by its scripts, "Num processes: 1" on a line of its own after "Distributed
# environment: NO" (accelerate/state.py __repr__), llm.c's parameter table "| num_processes
# | 1 |" and its plan "batch_size B=64 * seq_len T=1024 * num_processes=1 and total_batch_size=…"
# (HectorFCardenas/llm.c gpt2_train.11672072.log; the MPI world), as Accelerate's and JAX's
# "num_processes=1" (the whole job's), Lightning's "Initializing distributed: GLOBAL_RANK: 0,
# MEMBER: 1/1" (lightning_fabric/utilities/distributed.py; older "initializing ddp: GLOBAL_RANK:
# 0, MEMBER: 1/1"), detectron2's default_setup "Rank of current process: 0. World size: 1"
# (detectron2/engine/defaults.py). Read only when it is one: a single process is one node
# running one process, whatever P processes would mean.
JOB_PROCESSES: tuple[re.Pattern[str], ...] = (
    re.compile(r"Initialized jax\.distributed with \d+ devices, (?P<n>\d+) (?:processes|hosts)\b"),
    re.compile(r"\bDeviceRankInfo\(world_size=(?P<n>\d+), rank=\d+,"),
    re.compile(r"(?<![\w.])dist_world_size=(?P<n>\d+)\b"),
    re.compile(r"^\s*Num processes: (?P<n>\d+)\s*$"),
    re.compile(r"^\|\s*num_processes\s*\|\s*(?P<n>\d+)\s*\|\s*$"),
    re.compile(r"(?<![\w.])(?:--)?num_processes[= ](?P<n>\d+)\b(?![.:])"),
    re.compile(r"\bGLOBAL_RANK: \d+, MEMBER: \d+/(?P<n>\d+)\b"),
    re.compile(r"\bRank of current process: \d+\. World size: (?P<n>\d+)\b"),
)
# a job that says it runs without torch.distributed: the HF examples' "Process rank: -1, device:
# cuda:0, n_gpu: 1, distributed training: False, 16-bits training: False" (transformers'
# examples/pytorch/*/run_*.py; n_gpu > 1 is DataParallel, still one process)
NOT_DISTRIBUTED_RE = re.compile(r"\bn_gpu: \d+,? ?distributed training: False\b")
# the devices a Lightning process sees: "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]"
# (lightning/pytorch/accelerators/cuda.py: CUDA_VISIBLE_DEVICES, else every GPU of the machine):
# one device listed is one GPU process on the machine, its processes per node 1
VISIBLE_DEVICES_RE = re.compile(r"\bLOCAL_RANK: \d+ - CUDA_VISIBLE_DEVICES: \[(?P<list>[^\]]*)\]")
# any other statement of a world of several processes (torch's "world_size=8", "WORLD_SIZE: 4",
# "world size: 2", Megatron's argument dump "  world_size ........ 16"): read only above one, as ``layout:world_size`` (the processes in all, no layout per node); with a
# job's own count of several processes (``JOB_PROCESSES``) or a Lightning process seeing several
# devices, it tells that more processes than the one that printed may write to the log
WORLD_SIZE_RE = re.compile(r"\bworld[_ ]size\b['\"]?\s*(?:[:=]|\.{3,})\s*(?P<n>\d+)\b",
                           re.IGNORECASE)
# a launcher's machine config: processes per machine (one per GPU) and machines, nerfstudio's
# "machine=MachineConfig(seed=42, num_devices=1, num_machines=1, machine_rank=0, …)" (older
# "num_gpus=1", Chaklader/Difix train.log) and detectron2's "Command Line Args: Namespace(…,
# machine_rank=0, num_gpus=1, num_machines=1, opts=[], …)" (a YOLOF training log, find_string
# index id 45552067125), both from detectron2's launch(num_gpus_per_machine, num_machines)
MACHINE_CONFIG_RE = re.compile(r"\bnum_(?:devices|gpus)=(?P<per>\d+), num_machines=(?P<n>\d+)\b")
STANDALONE_RE = re.compile(r"(?:^|\s)--standalone\b")
LAYOUT_NEEDLES = ("node_rank", "node-rank", "group_rank", "NODE_RANK", "nproc", "num_local_procs",
                  "local_world_size", "LOCAL_WORLD_SIZE", "nnodes", "NNODES", "group_world_size",
                  "local_ranks=", "--standalone", "Initialized jax.distributed with ",
                  "DeviceRankInfo(world_size=", "dist_world_size=", "Num processes: ", "num_processes",
                  "num_machines=", ", MEMBER: ", "World size: ", "distributed training: False",
                  " - CUDA_VISIBLE_DEVICES: [", "world_size", "WORLD_SIZE", "world size",
                  "World Size")


def parse_node_layout(text: str) -> list[Row] | None:
    """A launcher's statement of the node layout: node rank, processes per node, node count
    (``--standalone``: one node) as ``layout:`` rows."""
    rows: list[Row] = []
    for key, rx in LAYOUT_KEYS:
        m = rx.search(text)
        if m:
            rows.append({"metric": f"layout:{key}", "value": float(m["n"])})
    m = LOCAL_RANKS_RE.search(text)
    if m and m["list"].strip():
        rows.append({"metric": "layout:nproc_per_node", "value": float(len(m["list"].split(",")))})
    if STANDALONE_RE.search(text) and not any(r["metric"] == "layout:nnodes" for r in rows):
        rows.append({"metric": "layout:nnodes", "value": 1.0})
    m = MACHINE_CONFIG_RE.search(text)
    if m and not rows:
        rows += [{"metric": "layout:nnodes", "value": float(m["n"])},
                 {"metric": "layout:nproc_per_node", "value": float(m["per"])}]
    m = next((m for rx in JOB_PROCESSES if (m := rx.search(text))), None)
    if (m and int(m["n"]) == 1) or NOT_DISTRIBUTED_RE.search(text):
        rows += [{"metric": "layout:nnodes", "value": 1.0},
                 {"metric": "layout:nproc_per_node", "value": 1.0}]
    several = m["n"] if m and int(m["n"]) > 1 else None
    m = VISIBLE_DEVICES_RE.search(text)
    devices = len([d for d in m["list"].split(",") if d.strip()]) if m else 0
    if devices == 1 and not rows:
        rows.append({"metric": "layout:nproc_per_node", "value": 1.0})
    m = WORLD_SIZE_RE.search(text)
    if several is None and m and int(m["n"]) > 1:
        several = m["n"]
    if several is not None and not rows:
        rows.append({"metric": "layout:world_size", "value": float(several)})
    elif devices > 1 and not rows:
        rows.append({"metric": "layout:visible_devices", "value": float(devices)})
    return rows or None


# -- a schedule the run is configured with that makes each step do more work as it goes ---------
# Metric "schedule:<kind>": value 1 where a config dump turns the schedule on, else the value
# the schedule has reached (the sequence length kept). Such a run's throughput slides by design
# while the schedule grows (``diagnose.throughput``). Real lines: DeepSpeed's config print
# ("data_efficiency_config ... {'data_routing': {'enabled': True, 'random_ltd': {'enabled': True,
# …", DeepSpeedExamples' data_efficiency logs; "curriculum_enabled_legacy .... True"),
# Megatron-DeepSpeed's argument dump ("random_ltd ........ True", "rampup_batch_size ....
# ['16', '16', '5859375']") and step line ("| curriculum seqlen:    80 |", "| random ltd
# reserved length:   128 |", microsoft/Megatron-DeepSpeed megatron/training.py), and the
# per-epoch or per-step prints of DeepSpeedExamples ("0 epoch at time 185.19s | reserved_length
# 48", "'step':10, 'ppl': 61.77, 'seq_len': 264").
SCHEDULE_ON: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("random_ltd", re.compile(r"'random_ltd': \{'enabled': True\b|\brandom_ltd \.{3,} True\b")),
    ("curriculum", re.compile(
        r"'curriculum_learning': \{'enabled': True\b"
        r"|\b(?:curriculum_enabled_legacy|curriculum_learning_legacy|curriculum_learning"
        r"|data_efficiency_curriculum_learning) \.{3,} True\b")),
    ("batch_size_rampup", re.compile(r"\brampup_batch_size \.{3,} \[")),
    # a sequence length warmed up in stages: Composer's algorithm ("SeqLengthWarmup(duration=0.3,
    # min_seq_length=8, max_seq_length=1024, step_size=8, …)", its YAML key
    # "seq_length_warmup:"), a JAX modded-nanogpt port's echoed Config
    # ("sequence_warmup_intervals: int = 1024"); one set to 0, False or None is off
    ("seq_len_warmup", re.compile(
        r"\bSeqLengthWarmup\(|\bseq(?:uence)?_?(?:len(?:gth)?_?)?warmup\w*['\"]?\s*"
        r"(?::\s*[A-Za-z_]\w*\s*=|[:=](?!\s*[A-Za-z_]\w*\s*=))\s*"  # (a type annotation)
        r"(?!(?:0|False|false|None|null)\b)(?:\S|$)")),
)
SCHEDULE_VALUE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("seq_len", re.compile(
        r"(?:\breserved_length|\brandom ltd reserved length:|\bcurriculum seqlen:|'seq_len':)"
        r"\s*(?P<n>\d+)\b")),
)
# A batch size that grows in stages, as the hyperparameters a run prints state it (a tuple or a
# comma list of sizes, each a number or a product of numbers): modded-nanogpt's echoed
# Hyperparameters ("train_bs_schedule: tuple = (8 * 2048 * 8, 16 * 2048 * 8, 24 * 2048 * 8)",
# KellerJordan/modded-nanogpt records/track_1_short/2025-11-29_BatchSizeSchedule), its forks'
# environment ("TRAIN_BS_SCHEDULE=18432,36864,55296"): "schedule:batch_size_rampup" where the
# sizes grow. A table of stages, one per line ("TrainingStage(duration=1/3,
# train_max_seq_len=896, batch_size=8 * 2048 * 8, …", records/track_1_short/
# 2026-06-11_RecursiveFromBest): "schedule:batch_size", each stage's size (kept where it grows).
_SIZE = r"\d+(?:\s*\*\s*\d+)*"
BATCH_SCHEDULE_RE = re.compile(
    rf"\b(?:train_)?(?:bs|batch_size)_schedule\b['\"]?\s*(?::\s*\w+\s*)?[:=]\s*+['\"]?[(\[]?"
    rf"\s*(?P<sizes>{_SIZE}(?:\s*,\s*{_SIZE})+)", re.IGNORECASE)
STAGE_BATCH_RE = re.compile(rf"\b\w*Stage\w*\((?:[^()]|\([^()]*\))*?\bbatch_size\s*=\s*(?P<size>{_SIZE})\b")
SCHEDULE_NEEDLES = ("random_ltd", "curriculum", "rampup_batch_size", "reserved_length",
                    "reserved length", "'seq_len'", "bs_schedule", "BS_SCHEDULE",
                    "batch_size_schedule", "BATCH_SIZE_SCHEDULE", "Stage(", "SeqLengthWarmup",
                    "_warmup", "seqwarmup", "lenwarmup", "lengthwarmup")


def _size(expr: str) -> int:
    """A size written as a number or a product of numbers ('8 * 2048 * 8')."""
    return math.prod(int(f) for f in expr.split("*"))


def parse_schedule(text: str) -> list[Row] | None:
    """A schedule that grows each step's work, turned on or where it stands, as ``schedule:``
    rows."""
    rows: list[Row] = [{"metric": f"schedule:{key}", "value": 1.0}
                       for key, rx in SCHEDULE_ON if rx.search(text)]
    for key, rx in SCHEDULE_VALUE:
        m = rx.search(text)
        if m:
            rows.append({"metric": f"schedule:{key}", "value": float(m["n"])})
    m = BATCH_SCHEDULE_RE.search(text)
    if m:
        sizes = [_size(v) for v in m["sizes"].split(",")]
        if sizes[-1] > sizes[0]:
            rows.append({"metric": "schedule:batch_size_rampup", "value": 1.0})
    m = STAGE_BATCH_RE.search(text)
    if m:
        rows.append({"metric": "schedule:batch_size", "value": float(_size(m["size"]))})
    return rows or None



# -- the run length a trainer's start-up header states ------------------------------------------
# Metric "plan:<key>": HF Trainer's "***** Running training *****" header (transformers
# trainer.py, copied by Accelerate's no_trainer examples and many hand-written loops):
# "  Num Epochs = 1,000" and "  Total optimization steps = 17,000" (LLaMA-Factory's running log
# prefixes them "[INFO|…] trainer.py:2314 >>"). HF's stepless log dicts are placed by their
# epoch with it where no bar or end summary gives the run's steps
# (``diagnose.common.place_by_epoch``).
PLAN_KEYS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("epochs", re.compile(r"\bNum [Ee]pochs = (?P<n>\d[\d,]*)(?![\d.,])")),
    ("total_steps", re.compile(r"\bTotal optimization steps = (?P<n>\d[\d,]*)(?:\.0)?(?![\d.,])")),
    # VinVL-Paddle's header (cattidea/VinVL-Paddle log/workerlog.0: "Num Iters: 4425" per epoch,
    # then "Optim Steps: 132750" for the run)
    ("total_steps", re.compile(r"\bOptim Steps: (?P<n>\d[\d,]*)(?![\d.,])")),
    # verl's ray_trainer ("(TaskRunner pid=625502) Total training steps: 3746"; older verl's
    # "(main_task pid=…)"), and hand-written loops' "🎯 Total training steps: 13002"
    ("total_steps", re.compile(r"\bTotal train(?:ing)? steps\s*[:=]\s*(?P<n>\d[\d,]*)(?![\d.,])")),
    # fairseq's arguments at start-up, the updates it stops at (0: no limit, read as none):
    # up to 0.10 a Namespace ("fairseq_cli.train | Namespace(…, max_update=300000, …)",
    # corpus timeout-syngec-glat-enro-8gpu-train), since 0.10.2 the hydra config's dict
    # ("'optimization': {'_name': None, 'max_epoch': 2, 'max_update': 0, …}",
    # facebookresearch/fairseq#3215); the first is the run's (lr_scheduler repeats it)
    ("total_steps", re.compile(r"(?<!\w)(?:max_update=|'max_update':\s*)(?P<n>\d+)(?![\d.])")),
    # torchtitan's start-up line, with the batch and sequence sizes before the steps: "Training
    # starts at step 1, with local batch size 8, …, total steps 10 (warmup 2)" (pytorch/
    # torchtitan#810, corpus gpu_crash-torchtitan-810), since 2025 "Trainer is initialized with
    # local batch size 1, …, total steps 1000 (warmup 2)" (corpus gpu_crash-auroragpt-torchtitan-
    # aurora, its fork under ezpz's logger)
    ("total_steps", re.compile(r"\b(?:Training starts at step \d+, with|Trainer is initialized with)"
                               r" local batch size\b[^()]*?\btotal steps (?P<n>\d+)\b")),
)
PLAN_NEEDLES = ("Num Epochs = ", "Num epochs = ", "Total optimization steps = ", "Optim Steps: ",
                "Total training steps", "Total train steps", "max_update=", "'max_update': ",
                "Training starts at step", "Trainer is initialized with")


def parse_run_plan(text: str) -> Row | None:
    """The number of epochs or optimizer steps a trainer's header says the run will take, as a
    ``plan:`` row."""
    for key, rx in PLAN_KEYS:
        m = rx.search(text)
        if m:
            value = float(m["n"].replace(",", ""))
            return {"metric": f"plan:{key}", "value": value} if value > 0 else None
    return None


# the step a run's training loop starts at, "plan:start_step" (the first step it trains): an
# fp16 overflow logged after it and before any step line is that step or one after it
# (``diagnose.common.place_unnumbered_skips``). torchtitan's train.py logs "Training starts at
# step 1" (and forks add ", with local batch size 1, …"; a resumed run names its next step);
# DeepSpeed-Chat's training loops log "Beginning of Epoch 1/16, Total Micro Batches 1840"
# before each epoch's micro-batches: only the first epoch says where the steps start (a later
# epoch's first step depends on the accumulation steps, which the line does not give).
START_STEP_RE = re.compile(r"\bTraining starts at step (?P<n>\d+)\b")
FIRST_EPOCH_RE = re.compile(r"\bBeginning of Epoch 1/\d+, Total Micro Batches \d+")
START_STEP_NEEDLES = ("Training starts at step ", "Beginning of Epoch 1/")


def parse_start_step(text: str) -> Row | None:
    """The first step a training loop says it is about to train, as a ``plan:start_step`` row."""
    m = START_STEP_RE.search(text)
    if m:
        return {"metric": "plan:start_step", "value": float(m["n"])}
    if FIRST_EPOCH_RE.search(text):
        return {"metric": "plan:start_step", "value": 1.0}
    return None


# the evaluation schedule a trainer states, "plan:eval_start" and "plan:eval_every": PaddleOCR's
# tools/program.py (and the trainers copied from it: PaddleOCR's forks, OpenOCR) logs "During the
# training process, after the 0th iteration, an evaluation is run every 19 iterations" (from
# Global.eval_batch_step [start, every]; a disabled evaluation's start, 1e111, reads as none):
# evaluations at steps start + k x every, k >= 1, the best model saved after them
# (``diagnose.common.place_unnumbered_saves``)
EVAL_SCHEDULE_RE = re.compile(r"\bafter the (?P<s>\d+)th iteration, an evaluation is run every "
                              r"(?P<e>\d+) iterations\b")
EVAL_SCHEDULE_NEEDLES = ("an evaluation is run every ",)


def parse_eval_schedule(text: str) -> list[Row] | None:
    """The evaluation schedule a trainer states (its first step, its period), as ``plan:``
    rows."""
    m = EVAL_SCHEDULE_RE.search(text)
    if m is None or int(m["e"]) < 1:
        return None
    return [{"metric": "plan:eval_start", "value": float(m["s"])},
            {"metric": "plan:eval_every", "value": float(m["e"])}]


# MLPerf's logger (mlperf_logging) closing a run that reached its target: ":::MLLOG {…
# "key": "run_stop", "value": null, "metadata": {…, "status": "success"}}" (training_results
# v4.0 HPE xd670 ssd result_1.txt). A ``plan:finished`` row: what the program prints after it
# (finalizers' tracebacks at exit) is its teardown, no failure. "aborted" gives no row.
RUN_STOP_RE = re.compile(r'"key":\s*"run_stop".*?"status":\s*"(?P<status>\w+)"')


def parse_run_stop(text: str) -> Row | None:
    """MLPerf's run_stop of a run that succeeded, as a ``plan:finished`` row."""
    m = RUN_STOP_RE.search(text)
    if m is None or m["status"] != "success":
        return None
    return {"metric": RUN_FINISHED_METRIC, "value": 1.0}


RUN_FINISHED_METRIC = "plan:finished"

# A trainer's own last words on a run that reached its end: BasicSR's and its forks' "21-09-19
# 01:01:10.393 - INFO: End of training." (ClassSR under PaddleCloud, whose wrapper then says
# "[INFO]: train job success!"), HF Trainer's "Training completed. Do not forget to share your
# model on huggingface.co/models =)", "Training finished." / "Training done!" of hand-written
# loops. A ``plan:finished`` row, like MLPerf's run_stop: the DataLoader threads' tracebacks
# that follow as the workers go away are the teardown, no failure.
RUN_END_RE = re.compile(r"\b(?:End of training|[Tt]raining (?:is )?(?:finished|completed?|done)|"
                        r"train job success)(?:[.!]|\s*$)")
RUN_END_NEEDLES = ("End of training", "raining finished", "raining complete", "raining done",
                   "raining is ", "train job success")


def parse_run_end(text: str) -> Row | None:
    """A trainer's words that its run reached its end, as a ``plan:finished`` row."""
    return {"metric": RUN_FINISHED_METRIC, "value": 1.0} if RUN_END_RE.search(text) else None

# Python's multiprocessing resource tracker at the interpreter's shutdown, the objects its
# processes left behind: "/usr/lib/python3.8/multiprocessing/resource_tracker.py:216:
# UserWarning: resource_tracker: There appear to be 662 leaked semaphore objects to clean up at
# shutdown" (ROPADet's fairseq train.out, after its DataLoader feeder's ENOSPC), "… 5 leaked
# shared_memory objects …" (a vLLM user's crash as system memory ran out). An ``exit:shutdown``
# row (the count as its value): the program ended there; a normal end prints it too, so only
# what came before it says whether it failed (``diagnose.triage``).
SHUTDOWN_RE = re.compile(r"resource_tracker: There appear to be (?P<n>\d+) leaked \w+ objects to "
                         r"clean up at shutdown")
SHUTDOWN_NEEDLES = ("objects to clean up at shutdown",)
SHUTDOWN_METRIC = "exit:shutdown"


# A training loop that logs the exception it stops on and raises it again: detectron2's and
# fvcore's TrainerBase.train ("except Exception: logger.exception('Exception during training:');
# raise"), copied by LiBai and AdelaiDet: "[02/25 03:02:13] d2.engine.train_loop ERROR: Exception
# during training:", then the traceback. An ``exit:loop_raised`` row: the exception after it
# ended the training (``diagnose.triage``).
LOOP_RAISED_RE = re.compile(r"\bERROR:? Exception during training:\s*$")
LOOP_RAISED_NEEDLES = ("Exception during training:",)
LOOP_RAISED_METRIC = "exit:loop_raised"


def parse_loop_raised(text: str) -> Row | None:
    """A training loop's report of the exception it re-raises, as an ``exit:loop_raised`` row."""
    return {"metric": LOOP_RAISED_METRIC, "value": 1.0} if LOOP_RAISED_RE.search(text) else None


def parse_shutdown(text: str) -> Row | None:
    """The resource tracker's warning at the interpreter's shutdown, as an ``exit:shutdown``
    row."""
    m = SHUTDOWN_RE.search(text)
    return None if m is None else {"metric": SHUTDOWN_METRIC, "value": float(m["n"])}


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "slurm_nodelist",
        "host_timings",
        ("NODELIST=", "NODELIST:", "NodeList=", "' partition (", "Running on ", "script on ", "Hostname: ", "Node: ",
         "WORLD INFO DICT", "@", "# Started at "),
        parse_nodelist,
        example="[2022-05-01 03:56:11] PULSE: tr11-176B-ml is running for 1-07:27:33 since "
        "2022-04-29T20:28:38 (1528763 on 'gpu_p5' partition (jean-zay-iam[01-34,36-49])",
    ),
    LineParser(
        "node_layout",
        "host_timings",
        LAYOUT_NEEDLES,
        parse_node_layout,
        example="[2022-10-29 00:41:40,882] [INFO] [launch.py:142:main] nnodes=1, num_local_procs=8, "
        "node_rank=0",
    ),
    LineParser(
        "schedule",
        "host_timings",
        SCHEDULE_NEEDLES,
        parse_schedule,
        example="0 epoch at time 185.19143652915955s | reserved_length 48",
    ),
    LineParser(
        "run_plan",
        "host_timings",
        PLAN_NEEDLES,
        parse_run_plan,
        example="[INFO|2024-11-26 22:07:15] trainer.py:2321 >>   Total optimization steps = 17,000",
    ),
    LineParser(
        "start_step",
        "host_timings",
        START_STEP_NEEDLES,
        parse_start_step,
        # data/corpus/loss_spike/loss_spike-deepspeed-931 (deepspeedai/DeepSpeed#931)
        example="Beginning of Epoch 1/16, Total Micro Batches 1840",
    ),
    LineParser(
        "eval_schedule",
        "host_timings",
        EVAL_SCHEDULE_NEEDLES,
        parse_eval_schedule,
        # YunSungJu/OderformKIE log/workerlog.0 (PaddleOCR tools/program.py)
        example="[2023/12/19 01:51:20] ppocr INFO: During the training process, after the 0th "
        "iteration, an evaluation is run every 19 iterations",
    ),
    LineParser(
        "loop_raised",
        "host_timings",
        LOOP_RAISED_NEEDLES,
        parse_loop_raised,
        # vaishnavmohit/imageclassification-detectron output/log.txt (detectron2's train loop)
        example="[02/25 03:02:13] d2.engine.train_loop ERROR: Exception during training:",
    ),
    LineParser(
        "shutdown",
        "host_timings",
        SHUTDOWN_NEEDLES,
        parse_shutdown,
        # tungtk2/ROPADet's fairseq train.out (corpus gpu_crash-ropadet-fairseq-enospc)
        example="/usr/lib/python3.8/multiprocessing/resource_tracker.py:216: UserWarning: "
        "resource_tracker: There appear to be 662 leaked semaphore objects to clean up at shutdown",
    ),
    LineParser(
        "run_end",
        "host_timings",
        RUN_END_NEEDLES,
        parse_run_end,
        # XDpaddle/irn_paddle: ClassSR (BasicSR's logger) under PaddleCloud
        example="21-09-19 01:01:10.393 - INFO: End of training.",
    ),
    LineParser(
        "run_stop",
        "host_timings",
        ('"run_stop"',),
        parse_run_stop,
        # mlcommons/training_results_v4.0 HPE xd670 ssd result_1.txt
        example=':::MLLOG {"namespace": "", "time_ms": 1714978963120, "event_type": '
        '"INTERVAL_END", "key": "run_stop", "value": null, "metadata": {"file": '
        '"/workspace/ssd/engine.py", "lineno": 315, "status": "success"}}',
    ),
)

# -- Megatron straggler detector and timers (a block parser: timers span lines) ---------------
STRAGGLER_PAIR_RE = re.compile(
    r"\b(?P<mm>Mn|Mx)(?P<name>[A-Za-z]+)/Rnk:\s*(?P<v>[-+]?[\d.]+(?:[eE][-+]?\d+)?)"
    r"(?P<unit>[A-Za-z%]*)/(?P<rank>\d+)")
STRAGGLER_RANKS_RE = re.compile(
    r"\^\^\^\^ (?P<which>Bottom|Top)\s+\d+ Ranks with (?:lowest|highest)\s+(?P<name>\w+)\((?P<unit>\w+)\):"
    r"(?P<rest>.*)")
RANKED_VALUE_RE = re.compile(r"(?<![\d.])(?P<v>[-+]?[\d.]+)(?P<unit>[A-Za-z%]*)/(?P<rank>\d+)")
TIMERS_HEAD_RE = re.compile(r"(?P<kind>\(min, max\) time|max time|times) across ranks \(ms\):"
                            r"(?P<rest>.*)")
# (the name starts and ends with a character that is no space or dot, and spaces and dots are
# read possessively: a long line of spaces is read in linear time)
TIMER_NAME = r"^\s*+(?P<name>[^\s:()](?:[^:()]*[^\s:().])?)\s*+\.*+:\s*+"
TIMER_MINMAX_RE = re.compile(TIMER_NAME + r"\((?P<min>[\d.]+),\s*(?P<max>[\d.]+)\)")
TIMER_MAX_RE = re.compile(TIMER_NAME + r"(?P<max>[\d.]+)\s*$")
# (the loader has stripped the leading spaces of these indented lines with the line's prefixes)
TIMER_NAME_RE = re.compile(r"^\s*(?P<name>[^\s:][^:]*):\s*$")
TIMER_RANK_RE = re.compile(r"^\s*rank\s+(?P<rank>\d+):\s*(?P<v>[\d.]+)\s*$")
ITERATION_RE = re.compile(r"\biteration\s+(?P<it>\d+)\s*/\s*\d+\s*\|")


def parse_straggler(text: str) -> list[Row]:
    """Rows of one straggler-detector report line (empty when it is none)."""
    rows: list[Row] = []
    for p in STRAGGLER_PAIR_RE.finditer(text):
        rows.append({"metric": f"{p['name']}/{p['mm']}", "rank": int(p["rank"]),
                     "value": to_float(p["v"])})
    m = STRAGGLER_RANKS_RE.search(text)
    if m:
        for p in RANKED_VALUE_RE.finditer(m["rest"]):
            rows.append({"metric": f"{m['name']}/{m['which']}", "rank": int(p["rank"]),
                         "value": to_float(p["v"])})
    return rows


class RankTimingsParser:
    """Megatron straggler-detector lines and timer blocks of one stream; rows carry the last
    iteration number the stream printed before them."""

    tables = ("host_timings",)  # what it fills (``load(tables=…)`` leaves it out otherwise)
    section: str | None = None  # "timers" | "straggler" while inside a block
    # Every line that starts a record or changes the idle state holds one of these.
    needles = ("iteration", "/Rnk:", "^^^^ ", "across ranks (ms):")

    def __init__(self) -> None:
        self.section: str | None = None
        self.mode: str | None = None  # "minmax", "max", "all"
        self.timer: str | None = None
        self.iteration: int | None = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the ``host_timings`` rows it completes."""
        self.section = None
        if "iteration" in text:
            m = ITERATION_RE.search(text)
            if m:
                self.iteration = int(m["it"])
        if "/Rnk:" in text or "^^^^ " in text:
            self.mode = None
            return self._rows(parse_straggler(text), ctx)
        if "across ranks (ms):" in text:
            m = TIMERS_HEAD_RE.search(text)
            if m:
                self.mode = {"(min, max) time": "minmax", "max time": "max"}.get(m["kind"], "all")
                self.timer = None
                self.section = "timers"
                rest = m["rest"].strip()
                return self._timer_line(rest, ctx) if rest else []
        if self.mode is not None:
            out = self._timer_line(text, ctx)
            if self.section is None:
                self.mode = None
            return out
        return []

    def _timer_line(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        if self.mode == "all":
            m = TIMER_RANK_RE.match(text)
            if m and self.timer:
                self.section = "timers"
                return self._rows([{"metric": f"timer:{self.timer}", "rank": int(m["rank"]),
                                    "value": to_float(m["v"])}], ctx)
            m = TIMER_NAME_RE.match(text)
            if m:
                self.timer = m["name"].strip()
                self.section = "timers"
            return []
        m = TIMER_MINMAX_RE.match(text)
        if m and self.mode == "minmax":
            self.section = "timers"
            name = m["name"].strip()
            return self._rows([{"metric": f"timer:{name}:min", "value": to_float(m["min"])},
                               {"metric": f"timer:{name}:max", "value": to_float(m["max"])}], ctx)
        m = TIMER_MAX_RE.match(text)
        if m and self.mode == "max":
            self.section = "timers"
            return self._rows([{"metric": f"timer:{m['name'].strip()}:max",
                                "value": to_float(m["max"])}], ctx)
        return []

    def _rows(self, rows: list[Row], ctx: object) -> list[tuple[str, Row]]:
        out = []
        for r in rows:
            if r.get("value") is None:
                continue
            r["iteration"] = self.iteration
            r["_ctx"] = ctx
            out.append(("host_timings", r))
        if out:
            self.section = self.section or "straggler"
        return out

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: nothing pending."""
        self.section = self.mode = None
        return []


BLOCKS = (RankTimingsParser,)
