"""Who wrote a line: rank/host/pid prefixes, ANSI colour, timestamps, and path hints.

Launchers prepend their own tags, often stacked (``0: [default3]:[rank3]:[E708 ...] ...``):

- srun ``-l``: ``3: `` (the SLURM task id, right-justified)
- torchrun ``--tee``: ``[default7]:`` (``[{role}{local_rank}]:``; a role naming the node:
  ``[gpu187:2]:``); c10 logging: ``[rank3]:``
- MPI: ``[1,3]<stdout>:`` (with ``--timestamp-output``: ``Fri Aug 11 12:31:45 2023[1,0]<stdout>:``)
- Determined: ``[2022-05-31T14:27:44.145650Z] dc5b74e6 [rank=0] || ``; short: ``[f35a2cc1] [rank=0] ``
  or ``[f35a2cc1] 172.31.42.141: `` (the container's id, then a pdsh host)
- kubectl logs --prefix: ``[pod/trainer-0-x7k2p/pytorch] `` (stripped; a pod is no machine)
- Ray: ``(FSDPPolicyWorkerBase pid=959049)`` / ``(RayTrainWorker pid=1, ip=10.0.0.1)``;
  SkyPilot's alike: ``(worker1, rank=1, pid=15406, ip=10.164.0.57)`` (the node's index, no rank)
- journald/syslog: ``Mar  1 12:00:00 gpu-node-17 python[1234]: `` (the host; kernel lines kept)
- pdsh / DeepSpeed launcher: ``worker-0: `` (a host name holding a digit), the hostfile's IP
  ``104.171.201.172: ``, ``localhost: ``, or any name before a rank tag (``gpu-a: [rank3]:``)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from .base import digits_int

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]")

# srun -l's task id, except before a line that is one bracketed list of names to its end: a
# report's numbered line, Horovod's stall inspector's ``0: [HorovodAllreduce_grads_0, …]``
# under ``Missing ranks:`` (horovod#2564, the corpus's hvd-tf-worker-desync), whose number is
# a rank that has not submitted those ops, not a task's prefix (srun's own lines are rarely a
# bare list of names). The check reads to the line's end: ``SRUN_SHAPE_RE`` is the prefix's
# shape alone, and ``reader.fast.PrefixCache`` memoises no line it decides.
SRUN_SHAPE_RE = re.compile(r"(?P<n>\d{1,6}): ")
NAME_LIST_LINE_RE = re.compile(r"\[[A-Za-z_][^\[\]]*\]\s*$")
SRUN_RE = re.compile(r"(?P<n>\d{1,6}): (?!\[[A-Za-z_][^\[\]]*\]\s*$)")
IP_HOST_RE = re.compile(r"(?P<host>\d{1,3}(?:\.\d{1,3}){3}): (?= *\S)")
# torchrun's role is the user's --role: recipes pass the node's name and a colon
# (``--role `hostname -s`:``, stas00/ml-engineering), so "[gpu187:2]:" is role "gpu187:" and local
# rank 2 (accelerate#1519). That name is not kept as the host: scripts hard-code it for every node.
ROLE_RE = re.compile(
    r"\[(?P<role>[A-Za-z_][A-Za-z_]*?|[A-Za-z][\w.\-]{0,62}:)(?P<n>\d+)\]:\s?")
# Polyaxon's CLI/UI (v0.x ``polyaxon experiment logs``): "2020-01-15 22:44:33 UTC master.0 -- " (its
# time with zone, the job's role and replica: master.N / worker.N / ps.N, polyaxon-cli's
# logs handler; polyaxon/polyaxon#657): a prefix; its time is the line's, the replica is no host
POLYAXON_RE = re.compile(
    r"(?P<ts>20\d\d-\d{1,2}-\d{1,2} \d{1,2}:\d\d:\d\d) [A-Z]{2,5} (?:master|worker|ps)\.\d+ -- ")
# Tags some launchers and wrappers put before the rank: [stderr], a pid or line count [80746]
# (a bare number only before another prefix: "[5000] expl_amount …" is Dreamer's step).
NOISE_RE = re.compile(r"\[(?:stdout|stderr)\]\s|\[\d{1,9}\]\s(?=[\[(])")
# Determined's trial logs: "[2022-05-31T14:27:44.145650Z] dc5b74e6 [rank=0] || " (the
# container's short id; no "[rank=N]" on the agent's own lines)
DETERMINED_RE = re.compile(
    r"\[20\d\d-\d\d-\d\dT[\d:.]+Z?\] [0-9a-f]{8} (?:\[rank=(?P<n>\d+)\] )?\|\| ?")
# kubectl logs --prefix: "[pod/NAME/CONTAINER] " (connaisseur#555). A pod is not a machine
# that could be drained: stripped, not kept as the host.
KUBECTL_RE = re.compile(r"\[pod/[a-z0-9][a-z0-9.\-]{0,252}/[a-z0-9][a-z0-9.\-]{0,62}\] ?")
# Determined's short form ("determined … logs"): "[f35a2cc1] [rank=0] …", "[f35a2cc1] 172.31.42.141:
# …": the container's short id (no machine), the rank; a launcher's host prefix may follow it
DETERMINED_SHORT_RE = re.compile(r"\[(?=[0-9]*[a-f])[0-9a-f]{8}\] (?:\[rank=(?P<n>\d+)\] )?")
MPI_RE = re.compile(r"\[\d+,(?P<n>\d+)\]<std(?:out|err)>:\s?")
# mpirun --tag-output tags every write() of a process, so a line written in pieces (glog's
# header, Horovod's stall inspector) carries the same tag again inside it:
# "[1,0]<stderr>:[[1,0]<stderr>:2020-01-15 22:44:33[1,0]<stderr>:.[1,0]<stderr>:214399…"
# (polyaxon/polyaxon#657): removed wherever it stands after the line's own tag
MPI_TAG_RE = re.compile(r"\[\d+,\d+\]<std(?:out|err)>:")
# mpirun --timestamp-output glues a ctime stamp before its tag: "Fri Aug 11 12:31:45 2023[1,0]<stdout>:"
MPI_STAMP_RE = re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d "
                          r"\d\d:\d\d:\d\d \d{4}(?=\[\d+,\d+\]<std(?:out|err)>:)")
# (a node's IPv6 address in brackets: "(LLMRayActor pid=3823828, ip=[2605:340:cd51:4900::4be7])",
# OpenRLHF/OpenRLHF#1052). SkyPilot writes the same prefix with its node's name and index and a
# comma: "(head, rank=0, pid=17894)", "(worker1, rank=1, pid=15406, ip=10.164.0.57)", a one-node
# task's "(task, pid=17499)" (skypilot-org/skypilot sky/skylet/executor/slurm.py, its "Build
# log prefix"; real lines in its examples/tpu/v6e/README.md): its "rank" numbers the node, no
# process (torchrun's ranks on worker1 are 8-15 with 8 GPUs a node), so only the pid and the
# node's ip are read
RAY_RE = re.compile(
    r"\((?:(?P<actor>[\w.\-:]+)(?:, rank=\d+)?(?: |, ))?pid=(?P<pid>\d+)"
    r"(?:, ip=(?:\[(?P<ip6>[0-9A-Fa-f:.]+)\]|(?P<ip>[\w.:\-]+)))?\)\s?"
)
# a line number a paste fused to a Ray prefix (GitHub's gutter copied with the text:
# "49192(LLMRayActor pid=3810036, ip=[…])   File …", OpenRLHF/OpenRLHF#1052): dropped
PASTED_NUMBER_RE = re.compile(r"\d{1,7}(?=\((?:[\w.\-:]+ )?pid=\d+[,)])")
# docker compose's "sglang-1  | " (v1: "web_1  | "): the container's name, padded, and a bar.
# It names a container, not a host that could be drained: stripped, not kept.
# (two letters at least and a replica number of 1-3 digits: "E-05 | " in a wrapped Megatron
# line is no container)
COMPOSE_RE = re.compile(r"(?P<name>[A-Za-z][\w.-]{0,62}[-_]\d{1,3}) +\| ?")  # bounded: no backtracking blow-up
# journald/syslog's header: "Mar  1 12:00:00 gpu-node-17 python[1234]: " (BSD form, RFC 3164:
# time, host, program and pid), or after a collector's RFC 3339 time the host and the program
# with its pid ("journalctl -o short-iso"). The host is the line's; the kernel's own lines keep
# their header (parse.xid reads the host before "kernel:").
SYSLOG_RE = re.compile(
    r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) )?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r" [ \d]\d \d\d:\d\d:\d\d (?P<host>[A-Za-z0-9][\w.\-]{0,62}) (?!kernel:)"
    r"[\w.\-/@]{1,64}(?:\[(?P<pid>\d{1,9})\])?: ")
SYSLOG_AFTER_TIME_RE = re.compile(
    r"(?P<host>[A-Za-z0-9][\w.\-]{0,62}) (?!kernel\[)[\w.\-/@]{1,64}\[(?P<pid>\d{1,9})\]: ")
# slurmstepd names itself after its node ("slurmstepd-gpu20-15: error: …"; Slurm's slurmstepd.c:
# argv0 = "slurmstepd-%s" with the node name): the node is the host, the daemon's name is not.
SLURMSTEPD_PREFIX = "slurmstepd-"
# (pdsh writes "host: " and the line as it was: an indented line keeps its spaces or tabs after
# it (torch_ucc's "node-17: \tAborting comms #12 …", PR #53); a tqdm bar's description is no
# host: "lokr-test-2:  40%|###9 | 1199/3000" (ai-toolkit#595), nor is a module's exception class
# ending a traceback: "cv2.error: OpenCV(4.5.1) …" (linhandev/iann log/workerlog.0), nor an
# Ascend CANN error code, E, a letter and four digits ("EI0002: [PID: 2969] … The wait execution
# of the Notify register times out", "EE9999: Inner Error!", vllm-project/vllm-ascend#3413))
HOST_RE = re.compile(
    r"(?<![A-Za-z])(?![\w.\-]*\.\w*(?:error|Error|Exception|Warning): )(?!E[A-Z]\d{4}: )"
    r"(?P<host>[A-Za-z](?=[\w.\-]*?\d)[\w.\-]*+)"
    r"(?:: (?=[ \t]*\S)(?![ \t]*\d{1,3}%\|)| (?=\[std(?:out|err)\]))"
)
# pdsh / DeepSpeed's launcher name the local node "localhost" (no digit), and any host name
# stands before a torchrun or c10 rank tag ("localhost: [rank0]: …", "gpu-a: [default3]:")
HOST_BEFORE_TAG_RE = re.compile(
    r"(?P<host>localhost|[A-Za-z][\w.\-]{0,62}(?=: \[(?:rank|default)\d+\]:)): (?=\S)")

# Whatever a collector or wrapper writes before torch's rank tag at the line's start (its own
# time "18:00:35.575 " (ms-swift#7992), an app tag "[TRAINING] " (GeneticTrading), a date in
# full-width brackets, a Markdown quote "> "): up to 48 characters that end in a space or a
# bracket. Each is a prefix; the rank tag names the writer. A host ("gpu3: "), a Ray actor or a
# [stdout] tag before it is read by its own pattern (``lead_before_rank``).
LEAD_MAX = 48
LEAD_BEFORE_RANK_RE = re.compile(
    rf"(?P<lead>[^\r\n]{{1,{LEAD_MAX}}}?)(?<=[\s\]\u3011>])(?=\[(?:rank|default)\d+\]:)")
# the head of a line where such a lead and the tag's start stand
LEAD_HEAD = LEAD_MAX + len("[default")
# A log collector's timestamp before the launcher's rank prefix (``2024-11-20 14:37:16 [rank3]: …``):
# both are prefixes (the body that follows is what the rank wrote; the collector's time is not
# the line's own and is dropped with them, so every engine reads the same body).
TS_THEN_RANK_RE = re.compile(
    r" ?(?P<ts>\[?20\d\d-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?\]?) (?=\[(?:rank|default)\d+\]:)")
# The same time before a Ray actor's prefix (``[2025-05-10 00:18:21] (WorkerDict pid=1230,
# ip=…) [rank15]:`` in verl#1309; ``2024-… (RayTrainWorker pid=…)``): a prefix too; the actor's
# prefix and the rank tag after it are read as without it. The time is kept as the line's.
TS_THEN_RAY_RE = re.compile(
    r" ?(?P<ts>\[?20\d\d-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?\]?) "
    r"(?=\((?:[\w.\-:]+(?:, rank=\d+)?(?: |, ))?pid=\d+(?:, ip=[\w.:\-]+)?\))")
# A collector's RFC 3339 time before everything a process wrote (kubectl logs --timestamps,
# docker logs -t, cloud log exports: "2024-03-01T12:00:00.123456789Z "): a prefix, stripped with
# the launcher's that may follow it; its time is the line's when the text carries none.
COLLECTOR_TIME_RE = re.compile(
    r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d) (?=.)")
# The end of prefixes after which a host prefix or a collector's time may still stand (a
# container's or pod's tag, a collector's time, srun's task id; over-approximated: the fast engine memoises no
# line whose text starts there)
HOST_MAY_FOLLOW_RE = re.compile(r"(?:\]|\dZ|[+-]\d\d:?\d\d|(?:^|\s)\d{1,6}:) *$")
# A rank prefix in the middle of a line: a tqdm bar (no newline) followed by a rank's log line.
MIDLINE_PREFIX_RE = re.compile(r"(?<=[^\s:])(?=\[(?:rank|default)\d+\]:)")

# c10/glog header: [E708 01:47:23.901930947 ProcessGroupNCCL.cpp:629] (month unpadded, no year);
# absl's and glog's own, unbracketed at the line's start with the thread id after the time
# (ML4HPC/JAX-CFD logs/train_log.txt: "I1216 14:22:57.913980 139628846601088 train.py:577] …")
GLOG_TIME_RE = re.compile(
    r"(?:\[|^\s*(?=[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ ))[IWEF](?P<mo>1[0-2]|0?[1-9])(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.(?P<frac>\d+))?"
)
ISO_TIME_RE = re.compile(
    r"(?P<y>20\d\d)[-/](?P<mo>\d\d)[-/](?P<d>\d\d)[ T_](?P<h>\d\d)[:\-](?P<mi>\d\d)[:\-](?P<s>\d\d)"
    r"(?:[.,](?P<frac>\d+))?"
)
# a two-digit year at the start of a line, year first: mmsr/EDVR/BasicSR's logger
# (datefmt '%y-%m-%d %H:%M:%S' then '.%(msecs)03d'): "24-09-18 13:27:08.905 - INFO: <epoch: …"
SHORT_YEAR_TIME_RE = re.compile(
    r"^\s*(?P<yy>\d\d)-(?P<mo>0[1-9]|1[0-2])-(?P<d>[0-3]\d) (?P<h>[0-2]\d):(?P<mi>[0-5]\d):"
    r"(?P<s>[0-5]\d)(?:[.,](?P<frac>\d+))?(?![\d:])"
)
# a month's name and day with no year, bracketed at the line's start: ColBERT's print_message
# (strftime "%b %d, %H:%M:%S", stanford-futuredata/ColBERT colbert/utils/utils.py and its forks):
# "[Mar 29, 16:27:48] 473 5.845928532131831"; the year is the stream's, as for glog
MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MONTH_NAME_TIME_RE = re.compile(
    r"^\s*\[(?P<mon>" + "|".join(MONTH_NAMES) + r") (?P<d>[0-3]?\d), (?P<h>[0-2]\d):(?P<mi>[0-5]\d):"
    r"(?P<s>[0-5]\d)(?:[.,](?P<frac>\d+))?\]"
)

# Rank/host hints in file names, one table, tried in order: the first row that matches names the
# file's writer. ``on``: "path" (the whole path, for a folder layout) or "name" (the base name).
# - torchrun --log-dir: attempt_0/<local rank>/stdout.log
# - py-spy's trace-<host>.out (before the rank rows: "trace-rank3-host" names a host)
# - rank3.log, log_rank_3.txt, rank-3.out, pyspy-rank0.txt
# - Paddle's launcher (paddle.distributed.launch, fleet): workerlog.<local rank>, one per process
#   of the node — on one node the rank (copied by other launchers' users, e.g. a torch DDP run)
PATH_LOCAL_RANK_RE = re.compile(r"attempt_\d+[/\\](?P<n>\d+)[/\\](?:stdout|stderr|error)")
PATH_RANK_RE = re.compile(r"(?:^|[^a-z])rank[_\-.]?(?P<n>\d+)(?=\D|$)", re.IGNORECASE)
PATH_TRACE_HOST_RE = re.compile(r"trace-(?P<host>[^/\\]+?)\.(?:out|txt|log)$")
PATH_WORKERLOG_RE = re.compile(r"^workerlog\.(?P<n>\d+)(?:\.(?:log|txt|gz))?$")
PATH_ORIGINS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("path", PATH_LOCAL_RANK_RE),
    ("name", PATH_TRACE_HOST_RE),
    ("name", PATH_RANK_RE),
    ("name", PATH_WORKERLOG_RE),
)


@dataclass(frozen=True)
class Origin:
    """Rank/host/pid read from a line's prefixes (each may be unknown)."""

    rank: int | None = None
    host: str | None = None
    pid: int | None = None
    task: int | None = None  # srun -l task id (a node or a rank: the line does not say)
    # True when ``rank`` came from c10's ``[rankN]:`` log prefix: the global rank, which beats
    # the ``[Rank N]`` tag inside the message (since torch 2.2 that tag can be a group-local
    # rank, pytorch#191305).
    rank_global: bool = False
    # the time a collector wrote before the line (``COLLECTOR_TIME_RE``); the text's own wins
    time: datetime | None = None

    def writer(self) -> Origin:
        """The same writer without the collector's time (a time names no writer)."""
        return self if self.time is None else Origin(self.rank, self.host, self.pid, self.task,
                                                     self.rank_global)


def strip_ansi(text: str) -> str:
    """Remove ANSI colour and cursor escapes."""
    return ANSI_RE.sub("", text) if "\x1b" in text else text


def split_physical(text: str) -> list[str]:
    """Split one physical line into the logical lines it holds.

    A carriage return separates tqdm's in-place updates; a rank prefix that appears mid-line
    starts a new line (tqdm writes no newline, so the next rank's message lands behind it).
    """
    parts = text.split("\r") if "\r" in text else [text]
    out: list[str] = []
    for p in parts:
        if "]:" in p and ("[rank" in p or "[default" in p):
            out.extend(s for s in MIDLINE_PREFIX_RE.split(p) if s)
        elif p:
            out.append(p)
    return out or [""]


def _compose(text: str, pos: int = 0) -> re.Match[str] | None:
    """docker compose's prefix at ``pos`` in ``text`` (a name with two letters at least)."""
    m = COMPOSE_RE.match(text, pos)
    return m if m is not None and sum(c.isalpha() for c in m["name"]) >= 2 else None


def demux(text: str) -> tuple[str, Origin]:
    """Strip stacked launcher prefixes from ``text``; return the rest and who wrote it."""
    rank = host = pid = task = when = None
    rank_global = mpi = False
    pos = 0
    if text[:1] in "[2 " and (ts := TS_THEN_RAY_RE.match(text)):
        rest, origin = demux(text[ts.end():])
        return rest, Origin(origin.rank, origin.host, origin.pid, origin.task, origin.rank_global,
                            origin.time or line_time(ts["ts"], None))
    ts = (TS_THEN_RANK_RE.match(text) if text[:1] in "[2 " else None) or lead_before_rank(text)
    if ts and (m := ROLE_RE.match(text, ts.end())):
        rest, origin = demux(text[m.end():])
        inner = origin.rank is not None and origin.rank_global
        return rest, Origin(
            rank=origin.rank if inner else digits_int(m["n"]), host=origin.host,
            pid=origin.pid, task=origin.task, rank_global=inner or m["role"] == "rank")
    start = 0  # where a host prefix may stand: the line's start, or just after a container tag
    for _ in range(6):
        at_start = pos == start and pos > 0  # (the line's own indentation is no prefix's)
        while pos < len(text) and text[pos] == " ":
            pos += 1
        if at_start:
            start = pos  # the spaces after a collector's or srun's prefix
        ch = text[pos : pos + 1]
        m = None
        if pos == start and pos and ch in "[2" and (ts := TS_THEN_RANK_RE.match(text, pos)):
            pos = ts.end()  # a log collector's time behind a pod's tag: dropped, as at the start
            continue
        if ch == "[":
            m = ROLE_RE.match(text, pos)
            if m:
                rank = digits_int(m["n"])
                rank_global = m["role"] == "rank"
            elif m := NOISE_RE.match(text, pos):
                pass
            elif m := DETERMINED_RE.match(text, pos):
                if m["n"] is not None:
                    rank = digits_int(m["n"])
            elif m := KUBECTL_RE.match(text, pos):
                start = m.end()  # the pod's own launcher prefixes follow
            elif m := DETERMINED_SHORT_RE.match(text, pos):
                if m["n"] is not None:
                    rank = digits_int(m["n"])
                start = m.end()
            else:
                m = MPI_RE.match(text, pos)
                if m:  # mpirun's [job,rank]: the global rank
                    rank, rank_global, mpi = digits_int(m["n"]), True, True
        elif ch == "(":
            m = RAY_RE.match(text, pos)
            if m:
                pid = digits_int(m["pid"])
                if m["ip"] or m["ip6"]:
                    host = m["ip"] or m["ip6"]
        elif ch.isdigit():
            m = COLLECTOR_TIME_RE.match(text, pos) if pos == start and ch == "2" else None
            if m is None and pos == start and ch == "2" and (m := POLYAXON_RE.match(text, pos)):
                when = line_time(m["ts"], None)
                start = m.end()  # the job's own launcher prefixes (mpirun's) follow
            elif pos == 0 and m is None and (m := PASTED_NUMBER_RE.match(text)):
                pass  # the Ray prefix after it names the writer
            elif m:
                when = line_time(m[0], None)
                start = m.end()  # a launcher's host prefix may follow the collector's time
            elif m := (IP_HOST_RE.match(text, pos) if pos == start else None):
                host = m["host"]
            elif not mpi:  # after mpirun's tag, ``N: `` is the program's own text
                m = SRUN_RE.match(text, pos)
                if m:
                    task = digits_int(m["n"])
                    if pos == start:
                        start = m.end()  # srun -l before a pdsh host or mpirun's stamp
        elif ch.isalpha() and pos == start and (
                m := SYSLOG_RE.match(text, pos) or (
                    SYSLOG_AFTER_TIME_RE.match(text, pos) if when is not None else None)):
            # the program's own prefixes (srun's, torchrun's) may follow; no host prefix does.
            # Its pid is the one that opened journald's stream (the launcher, for every rank it
            # started): no writer's, so not kept.
            host = m["host"]
        elif ch.isalpha() and pos == start and (m := MPI_STAMP_RE.match(text, pos)):
            pass  # the MPI tag after it gives the rank
        elif ch.isalpha() and pos == start and (m := _compose(text, pos)):
            pass
        elif ch.isalpha() and pos == start:
            m = HOST_RE.match(text, pos) or HOST_BEFORE_TAG_RE.match(text, pos)
            if m and not text.startswith(("http", "Timeout", "Exception")):
                host = m["host"].removeprefix(SLURMSTEPD_PREFIX)
            else:
                m = None
        if not m:
            break
        pos = m.end()
    return text[pos:], Origin(rank=rank, host=host, pid=pid, task=task, rank_global=rank_global,
                              time=when)


def drop_inner_tags(body: str) -> str:
    """A line's body (after ``demux``) without the mpirun tags written inside it
    (``MPI_TAG_RE``)."""
    return MPI_TAG_RE.sub("", body) if "]<std" in body else body


def lead_before_rank(text: str) -> re.Match[str] | None:
    """A collector's or wrapper's lead before torch's rank tag at the start of ``text``
    (``LEAD_BEFORE_RANK_RE``), or None: none, or one that another prefix pattern reads."""
    head = text[:LEAD_HEAD]
    if "[rank" not in head and "[default" not in head:
        return None
    m = LEAD_BEFORE_RANK_RE.match(text)
    if m is None:
        return None
    lead = m["lead"].strip()
    if not lead or ": " in m["lead"] or "[std" in lead or lead.startswith(("(", "[pod/")):
        return None
    return m


def line_time(text: str, year: int | None) -> datetime | None:
    """The timestamp a line carries (ISO, glog's month-day or a bracketed month name and day
    with ``year`` supplied, or a two-digit year first at the line's start)."""
    head = text[:80]
    m = ISO_TIME_RE.search(head)
    if m:
        return _mk(int(m["y"]), m)
    m = GLOG_TIME_RE.search(head)
    if m and year:
        return _mk(year, m)
    m = MONTH_NAME_TIME_RE.match(head) if year and head.lstrip()[:1] == "[" else None
    if m:
        return _mk(year, m, MONTH_NAMES.index(m["mon"]) + 1)
    m = SHORT_YEAR_TIME_RE.match(head)
    if m:
        return _mk(2000 + int(m["yy"]), m)
    return None


def _mk(year: int, m: re.Match[str], month: int | None = None) -> datetime | None:
    frac = (m["frac"] or "0")[:6].ljust(6, "0")
    try:
        return datetime(
            year, month or int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), int(frac)
        )
    except ValueError:
        return None


def path_origin(path: str, siblings: Iterable[str] = ()) -> Origin:
    """Rank or host implied by a log file's path (``PATH_ORIGINS``: torchrun --log-dir,
    rank3.log, trace-host.out, Paddle's workerlog.N). ``siblings``: the names of the files
    beside it; detectron2's (and fvcore's, LiBai's) setup_logger writes rank 0's log to
    ``log.txt`` and rank N's to ``log.txt.rankN``, so a file whose name is theirs without the
    suffix is rank 0's."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    for on, pattern in PATH_ORIGINS:
        m = pattern.search(path if on == "path" else name)
        if m is None:
            continue
        if "host" in pattern.groupindex:
            return Origin(host=m["host"])
        return Origin(rank=digits_int(m["n"]))
    prefix = f"{name}.rank"
    if any(s.startswith(prefix) and s[len(prefix):].isdigit() for s in siblings):
        return Origin(rank=0)
    return Origin()
