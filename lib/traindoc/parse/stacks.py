"""Stack dumps of live processes into the ``stacks`` table: py-spy (text and ``--json``) and
Python's faulthandler.

py-spy ``dump`` text (py-spy 0.3/0.4, ``src/dump.rs``; checked against real dumps of 0.4.3
kept in ``tests/data/pyspy/``)::

    Process 5024: /usr/bin/python3 -u train.py --lr 1e-4
    Python v3.11.7 (/usr/bin/python3.11)
    Parent Process 5020: /usr/bin/python3 torchrun ...        (--subprocesses only)

    Thread 5024 (idle): "MainThread"                          (idle | active | active+gil)
        broadcast (torch/distributed/distributed_c10d.py:3151)
            Arguments:                                        (--locals: name: repr lines)
                tensor: <Tensor at 0x7f...>
        0x7f72b8ea3f16 (libc.so.6)                            (--native: native frames)
    --------------------------------------------------------------------------------

py-spy 0.1 (``py-spy --dump``) printed the interpreter, ``Python version 3.6.8`` and threads as
``Thread 0x7F3C2A6B5740/0x1A2B (active)`` with tab-indented frames, no Process line; ``ray
stack`` puts ``Stack dump for <the worker's ps row>`` (its pid) before each worker's dump.

Many dumps are often concatenated in one file (``xargs py-spy dump --pid`` under ``srun
--output=trace-%N.out``), and py-spy's own errors land in it too (``Error: Failed to …``); an
error becomes a row with ``state`` ``dump_error`` and no frames. The BLOOM chronicle's condensed
form — ``4 in:`` then several ``Thread N (active): "MainThread"`` lines sharing one frame list —
loads as one row per listed thread, each with the shared frames; the tr11 hang notes' ``6
processes are in:`` over one thread gives that row ``count`` 6 (the processes it stands for). A ``MainThread``'s thread id is
its pid (Linux: the main thread's TID equals the PID), which names processes when no
``Process`` line does.

faulthandler (CPython ``Python/traceback.c``; 3.14 adds `` [os thread name]``); a dump is one
writer's: behind launcher prefixes (Ray's ``(Actor pid=N)`` names the process, torchrun's the
rank) a line of another writer ends it::

    Thread 0x00007f3a1c9ff640 (most recent call first):
      File "/usr/lib/python3.11/threading.py", line 327 in wait
    Current thread 0x00007f3a2d6b5740 (most recent call first):
      File "/work/train.py", line 12 in <module>

CPython lists threads newest first, so in an all-threads dump the last thread is the main thread;
it is named ``MainThread`` here (unless the dump was cut with ``...``, or that thread's stack
starts in threading's ``_bootstrap``: a paste moved or cut the main thread, which is then the
current thread where that one is no threading thread).
A dump under ``faulthandler.dump_traceback_later``'s header (``Timeout (0:00:10)!``: pytest's
``faulthandler_timeout``, Spark's periodic dump) that the process's own output follows (not a
kill, not the next dump) is a slow step's: its threads' ``state`` is ``progress``, no hang.

gdb's ``py-bt`` (``thread apply all py-bt``; CPython ``Tools/gdb/libpython.py``), most recent
call first, a source line under each frame, built-in calls as pseudo-frames::

    Thread 1 (Thread 0x7f9af26b3700 (LWP 13663)):           (gdb thread 1: the main thread)
    Traceback (most recent call first):
      <built-in method acquire of _thread.RLock object at remote 0x7f9aeed3ed00>
      File "/usr/lib/python3.5/logging/__init__.py", line 804, in acquire
        self.lock.acquire()

gdb's ``thread apply all bt`` under the same thread headers: C frames, innermost first, read as
``function (library)`` or ``function (file:line)`` (see ``GDB_C_FRAME_RES``); an evaluation
loop's frame that CPython's gdb helpers name (``f=Frame 0x…, for file x.py, line 88, in step``)
is read as that Python frame.

Home-made dumpers over ``sys._current_frames()`` + ``traceback.extract_stack`` print most recent
call LAST (frames are reversed here): ``# ThreadID: N`` then ``File: "x", line N, in f`` (the
ActiveState recipe many projects copy; python-manhole's ``######### ProcessID=P, ThreadID=N
#########`` names the process too), or ``Printing stack`` / ``-- Thread ID: N ---`` then
``File "x", line N, in f``; a source line may follow each frame. The id is Python's thread
ident, not an OS id. pytest-timeout's dump of a test that ran past its limit is one of them
(``+++ Timeout +++``, then ``~~~ Stack of MainThread (140366038940544) ~~~`` per thread, the
name before the id).

Where a dump was taken is often said only by what precedes it: a loop's separator
(``=== PID 544360 ===``, ``=== node17 4242 ===``, ``== pid 12 ==``), the shell prompt of the
command (``[user@tpgds-aihub0007 ~]$ py-spy dump --pid 544105``), an ``ssh HOST`` before it.
The host and pid they name are the next dump's (and a py-spy error's: the process it could not
dump), until the next one. A dumper's per-rank section (``=== Rank 0 ===``, the torch.distributed
debug server's stacks file) names the rank the same way; under it even one bare faulthandler
frame is a stack, and a poster's note after the function (``in main    ← all_reduce``) is dropped.

A condensed per-node listing of leaves (BigScience tr11's perl one-liner over ``trace-%N.out``
files: ``trace-jean-zay-iam52`` then one indented function name per process's MainThread) loads
as one row per name, ``state`` ``listed``, its only frame the name, its host the file's.

A comparer's roll call of per-rank dumps groups the ranks by where they stopped, one stack per
group, innermost first (underworld3's ``hang_report`` over its watchdog's faulthandler files:
``ranks [0, 2, 3]  stopped at  mesh.py:6954 in get_max_radius``, ``        via  swarm.py:3786 in
migrate`` lines, ``rank  [1]  stopped at  …``): one row per rank listed, with the group's frames.

A Python traceback (most recent call last) is one sample of the stack of the process that
printed it (``PYTB_*`` below): ``state`` ``interrupted`` (KeyboardInterrupt), ``raised`` (any
other exception) or ``traceback`` (no exception line); a frame line a terminal wrapped at its
width is joined again (``PYTB_WRAP_PIECES``). gdb's ``info threads`` gives one row per
thread with its one (C) frame, thread 1 the main thread whose LWP is the pid. The kernel's
hung-task report (``INFO: task python:280058 blocked for more than 120 seconds`` and its ``Call
Trace:``) is a row with ``state`` ``D``, its pid, command and kernel frames.

A ``ps`` row of a process in uninterruptible sleep (``STAT`` ``D…``, from ``ps aux`` or ``ps
PID``) is a row with ``state`` ``D``, its pid and command, and no frames.

A frame reads ``function (file:line)`` exactly as py-spy prints it (faulthandler frames are
written the same way), innermost first; ``leaf`` is the innermost frame as printed.

Host and rank: from the loader's prefixes and file name (``trace-<host>.out``). A file name
``trace-<host>-<pid>.out`` (the pid of the dumped process) or ``trace-<host>-rank<N>[-<pid>].out``
yields the host without the suffix, and the rank.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from .base import FileLoader, Row
from .prefixes import path_origin

# --- py-spy text ------------------------------------------------------------------------------
PROCESS_RE = re.compile(r"^Process (?P<pid>\d+): ?(?P<cmd>.*)$")
PARENT_RE = re.compile(r"^Parent Process \d+: ")
PYTHON_VERSION_RE = re.compile(r"^Python v(?:ersion )?\d")  # py-spy 0.1: "Python version 3.6.8"
# "Thread 5024 (idle): "MainThread"", "Thread 0x7F12AB (active+gil)" (no name), the plain
# "Thread 5024" / "Thread 5024 (gil)" of py-spy's record/top printers, and py-spy 0.1's
# "Thread 0x7F3C2A6B5740/0x1A2B (active)" (Python's thread id / the OS thread id, both hex).
THREAD_RE = re.compile(
    r'^Thread (?:(?P<tid>0[xX][0-9A-Fa-f]+|\d+)(?:/0[xX][0-9A-Fa-f]+)? ?)?'
    r'(?:\((?P<state>idle|active\+gil|active|gil)\))?'
    r'(?::\s*"(?P<name>[^"]*)")?\s*$')  # the id may be cut out of a paste: 'Thread (idle): "…"'
# "broadcast (torch/distributed/distributed_c10d.py:1191)", "0x7f… (libc.so.6)". The file is
# the last parenthesised group; a --locals line ("name: repr") is never a frame. A paste may pad
# the function names to one column ("run_busy_loop       (vllm/v1/engine/core.py:1142)").
FRAME_RE = re.compile(r"^(?P<func>\S.*?) +\((?P<file>[^()]+?)(?::(?P<line>\d+))?\)$")
LOCALS_HEADER_RE = re.compile(r"^(?:Arguments|Locals):+$")
# A hand-condensed listing (not py-spy's own output): the BLOOM chronicle's "4 in:" before the
# threads that share one frame list, the tr11 hang notes' "6 processes are in:" before one
# thread that stands for all six.
CONDENSED_RE = re.compile(r"^(?P<n>\d+) (?:(?:processes|procs|ranks)(?: are)? )?in:$")
SEPARATOR_RE = re.compile(r"^-{20,}$")  # between --subprocesses dumps
# py-spy's own errors, as its anyhow chain prints them first ("Error: Failed to find python
# version from target process", "Error: Failed to get process executable name. Check that the
# process is running." — both seen in tests/data/pyspy/; the rest from py-spy's sources, 0.1-0.4:
# a Python it cannot read, "Error: Failed to copy PyThreadState", "Error: Unsupported version of
# Python: 3.13.0"). Only these: "Error: Failed to …" alone is any program's.
PYSPY_ERRORS = (
    "Failed to find python version", "Failed to find a python version",
    "Failed to get process executable name", "Failed to open process", "Failed to get stack trace",
    "Failed to suspend process", "Failed to find python interpreter",
    "Failed to find a python interpreter", "Failed to connect to process",
    "Failed to get interpreter", "Failed to copy PyThreadState", "Failed to copy PyInterpreterState",
    "Failed to parse python binary", "Failed to get virtual memory maps",
    "Failed to find _PyRuntime", "Unsupported version of Python", "Permission denied",
    "Permission Denied", "No python processes found", "Operation not permitted",
)
PYSPY_ERROR_RE = re.compile(r"^Error: (?:" + "|".join(re.escape(e) for e in PYSPY_ERRORS) + ")")

# --- faulthandler ---------------------------------------------------------------------------
FH_THREAD_RE = re.compile(
    r"^(?P<current>Current thread|Thread) (?P<tid>0x[0-9a-fA-F]+)(?: \[(?P<name>[^\]]*)\])?"
    r"(?: <(?P<oldname>[^>]*)>)? \(most recent call first\):\s*$")
FH_STACK_RE = re.compile(r"^Stack \(most recent call first\):\s*$")
# faulthandler.dump_traceback_later's header (pytest's faulthandler_timeout, Spark's periodic dump)
FH_WATCHDOG_RE = re.compile(r"^Timeout \((?:\d+ days?, )?\d+:\d{2}:\d{2}(?:\.\d+)?\)!\s*$")
# what ends a watchdog's dump without the process going on: a kill, or the next dump
FH_STOPPED_RE = re.compile(r"Killed|Terminated|CANCELLED|Aborted|timed out|Timeout \(|[Ee]xit",
                           re.IGNORECASE)
# (a poster's note after the function, two spaces on, is no part of it: "in main    ← all_reduce")
FH_FRAME_RE = re.compile(
    r'^File "(?P<file>.*)", line (?P<line>\d+|\?\?\?) in (?P<func>\S+(?: \S+)*?)(?:\s{2,}\S.*)?\s*$')
# what faulthandler prints in place of, or before, a thread's frames (CPython traceback.c):
# no frame, the collector running in the current thread (3.12+), a thread state already freed
# A collector's time before each line of a faulthandler dump, then two spaces
# (VLM-R1#309: "2025-06-22 03:09:55  Thread 0x… (most recent call first):"; frigate#22137
# (discussion): "2026-02-28 17:01:34.863630573  Current thread 0x…"): stripped inside a dump and
# on the lines that start one.
COLLECTOR_STAMP_RE = re.compile(r"20\d\d-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:  |\s*$)")
FH_STAMPED_STARTS = ("Fatal Python error", "Thread 0x", "Current thread 0x", "Stack (most")
# the outermost frame of a thread that ``threading`` started ("_bootstrap (…/threading.py:995)",
# or "run (…\\Lib\\threading.py:975)" where a paste cut the rest)
THREAD_BOOTSTRAP_RE = re.compile(
    r"^(?:Thread\.)?(?:run|_bootstrap|_bootstrap_inner) \((?:.*[/\\])?threading\.py:\d+\)$")
FH_NOTES = ("<no Python frame>", "Garbage-collecting", "<freed thread state>", "<tstate is freed>")

# --- gdb py-bt and most-recent-call-last thread dumps ----------------------------------------
# "Thread 1 (Thread 0x7f9af26b3700 (LWP 13663)):", newer gdb: '… (LWP 13663) "python3"):'
GDB_THREAD_RE = re.compile(
    r'^Thread (?P<num>\d+) \((?:Thread 0x[0-9a-fA-F]+ )?\(?LWP (?P<lwp>\d+)\)?\)?'
    r'(?: "[^"]*")?\):\s*$')
GDB_TRACEBACK_RE = re.compile(r"^Traceback \(most recent call first\):\s*$")
# '<built-in method acquire of _thread.RLock object at remote 0x…>', '<built-in function sleep>'
GDB_BUILTIN_RE = re.compile(r"^<built-in (?:method|function) (?P<func>[\w.]+)")
# what py-bt prints in place of a frame it cannot show
GDB_NOTES = ("(unable to read python frame information)", "(frame information optimized out)",
             "Waiting for the GIL", "Garbage-collecting", "Unable to locate python frame")
# gdb's ``bt`` under the same thread headers (``thread apply all bt``), C frames innermost first:
# "#0  0x00007f05daa8fe8b in pthread_rwlock_wrlock () from /usr/lib/x86_64-linux-gnu/libpthread.so.0"
# (no debug info: empty arguments, the library; C++ names keep their own parentheses),
# "#3  0x00007f326f3d9740 in ncclProxyGetPostedOps (added=<synthetic pointer>, proxyState=0x5603…)
# at proxy.cc:713" (debug info: arguments and the source line; an inlined frame has no address),
# and a frame whose arguments or "at file:line" gdb wrapped onto indented lines of their own.
# A frame reads ``function (library)`` or ``function (file:line)``; an unknown function with no
# library ("?? ()") is left out.
GDB_C_FRAME_RES = (
    re.compile(r"^#\d+\s+(?:0x[0-9a-fA-F]+ in )?(?P<func>\S.*?) \(\)(?: from (?P<file>\S+))?$"),
    re.compile(r"^#\d+\s+(?:0x[0-9a-fA-F]+ in )?(?P<func>[^\s(]+) \(.*\)"
               r"(?: (?:at|from) (?P<file>\S+?)(?::(?P<line>\d+))?)?$"),
    re.compile(r"^#\d+\s+(?:0x[0-9a-fA-F]+ in )?(?P<func>[^\s(]+)(?: \(|$)"),  # cut or wrapped
)
GDB_C_FRAME_START_RE = re.compile(r"^#\d+\s")
# the Python frame CPython's gdb helpers (Tools/gdb/libpython.py) print for an evaluation loop's
# frame argument, "f=Frame 0x7f…, for file /x/train.py, line 88, in train_step (model=…)", and
# for a whole frame in Python 2's py-bt ("#4 Frame 0x2cd6a10, for file …, line 339, in wait (…)")
GDB_PY_FRAME_RE = re.compile(
    r"Frame 0x[0-9a-fA-F]+, for file (?P<file>[^,]+?), line (?P<line>\d+), in (?P<func>[^\s(),]+)")
GDB_C_WHERE_RE = re.compile(r"(?:^|\s)(?:at|from) (?P<file>\S+?)(?::(?P<line>\d+))?$")
UNKNOWN_FILE = "?"
MAX_GDB_WRAP = 3  # lines one wrapped frame may take
# "# ThreadID: 140289192748800" (the recipe), "-- Thread ID: 139870071547712 ---"
LAST_THREAD_RE = re.compile(r"^(?:# ThreadID|-+ ?Thread ID): (?P<tid>\d+)(?: -+)?\s*$")
# python-manhole's dump_stacktraces: "######### ProcessID=82627, ThreadID=4617211392 #########",
# newer '## ProcessID=1, ThreadID=2 "MainThread" ##'
MANHOLE_THREAD_RE = re.compile(
    r'^#+ ProcessID=(?P<pid>\d+), ThreadID=(?P<tid>\d+)(?: "(?P<name>[^"]*)")? #+$')
# pytest-timeout's dump_stacks (both methods): "~~~~~~ Stack of MainThread (8452218496) ~~~~~~",
# "~~~ Stack of Thread-1 (_monitor) (31076) ~~~" (a name may hold parentheses: the id is the last)
PYTEST_TIMEOUT_THREAD_RE = re.compile(r"^~+ Stack of (?P<name>.+) \((?P<tid>\d+)\) ~+$")
DUMPER_THREAD_RES = (LAST_THREAD_RE, MANHOLE_THREAD_RE, PYTEST_TIMEOUT_THREAD_RE)
LAST_NAME_RE = re.compile(r"^# Name: (?P<name>.+)$")
LAST_BANNERS = ("Printing stack", "*** STACKTRACE - START ***", "*** STACKTRACE - END ***")
# 'File "x", line 804, in acquire' (gdb, traceback) and 'File: "x", line 888, in _bootstrap'
# (the recipe; a paste may lose the opening quote). Only inside a dump begun by a header: a
# bare one is a line of an exception's traceback.
TB_FRAME_RE = re.compile(
    r"""^File:? ["']?(?P<file>[^"']*?)["']?, line (?P<line>\d+|\?\?\?),? in (?P<func>\S.*)$""")

# --- a Python traceback (most recent call last) -----------------------------------------------
# A traceback a hung process printed when interrupted (Ctrl-C's KeyboardInterrupt, an atexit hook
# timing out) or when it crashed is one sample of its stack: ``Traceback (most recent call
# last):`` (after "^C", "Exception ignored in atexit callback: …"), or the frames pasted without
# it; each frame 'File "x", line N, in f', its source and Python 3.11's caret lines indented
# under it. The exception line ends it; a chained exception ("The above exception was the
# direct cause …", "During handling of the above exception …") continues the same sample, its
# traceback the outer frames.
PYTB_HEADER = "Traceback (most recent call last):"
PYTB_FRAME_RE = re.compile(r'^File "(?P<file>[^"]*)", line (?P<line>\d+|\?\?\?), in (?P<func>\S.*)$')
# "KeyboardInterrupt", "RuntimeError: DataLoader worker (pid 624) is killed by signal: …",
# "subprocess.TimeoutExpired: Command … timed out"
PYTB_EXC_RE = re.compile(r"^(?P<exc>[A-Za-z_][\w.]*)(?::(?:\s.*)?)?$")
# the exception right under a frame (where its source line is expected): a name that says so,
# or one followed by its message
PYTB_EXC_STRICT_RE = re.compile(
    r"^(?P<exc>[A-Za-z_][\w.]*?(?:Error|Exception|Interrupt|Exit|Expired|Timeout|Warning|Failure"
    r"|Iteration))(?::.*)?$|^(?P<named>[A-Za-z_][\w.]*): \S")
# A terminal wraps a long frame line at its width, anywhere in it ('File "…/nn/modules/mod' +
# 'ule.py", line 1739, in _wrapped_call_impl'; a Windows console at 80 columns: '…", line 1' +
# '4, in index', '…", line 109,' + 'in post'): at most this many pieces make one frame
PYTB_WRAP_PIECES = 3
PYTB_CHAIN = ("The above exception was the direct cause of the following exception:",
              "During handling of the above exception, another exception occurred:")
# what a traceback shows between frames: carets, the interpreter's elisions, a poster's own
PYTB_FILLER_RE = re.compile(r"^(?:[\^~\s]+|\.\.\.|<omitted[^>]*>|\[Previous line repeated \d+ more times?\])$")
INTERRUPTS = ("KeyboardInterrupt",)
# the state of a traceback row: interrupted (Ctrl-C), raised (any other exception),
# ``traceback`` (frames pasted with no header and no exception line: a stack pasted as such) or
# ``cut`` (the header, the frames, and the output cut before the exception's line: a crash's)
TRACEBACK_STATES = ("interrupted", "raised", "traceback", "cut")

# --- gdb's ``info threads`` (C frames only) -----------------------------------------------------
# "* 1    Thread 0x7fc73ac5d700 (LWP 52422) "" select_poll_poll () at …/selectmodule.c.h:219",
# "  5    Thread 0x7fc6b71e9700 (LWP 52742) "" 0x00007fc739c909c8 in accept4 (fd=7, …) at …:40"
GDB_INFO_THREADS_RE = re.compile(r"^(?:\(gdb\) +)?info threads\s*$")
GDB_INFO_HEAD_RE = re.compile(r"^\s*Id\s+Target Id\s+Frame\s*$")
GDB_INFO_ROW_RE = re.compile(
    r'^(?P<cur>\*)?\s*(?P<num>\d+)\s+Thread 0x[0-9a-fA-F]+ \(LWP (?P<lwp>\d+)\)(?: "(?P<name>[^"]*)")?'
    r"\s+(?:0x[0-9a-fA-F]+ in )?(?P<func>[\w.@:~<>]+) \(.*?\)(?: (?:at|from) (?P<file>\S+?))?"
    r"(?::(?P<line>\d+))?\s*$")

# --- the kernel's hung-task report (dmesg) ------------------------------------------------------
# "INFO: task python:280058 blocked for more than 120 seconds.", then "Call Trace:" and one
# kernel frame a line (" __schedule+0x2d1/0x860", " cxiWaitEventWait+0x208/0x330 [mmfslinux]";
# "? " marks a frame the unwinder is unsure of, left out): a process in uninterruptible sleep
HUNG_TASK_RE = re.compile(r"INFO: task (?P<cmd>.+?):(?P<pid>\d+) blocked for more than \d+ seconds")
KERNEL_FRAME_RE = re.compile(
    r"^(?:\[<[0-9a-f]+>\] )?(?P<unsure>\? )?(?P<func>[\w.$]+)\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[(?P<mod>[\w-]+)\])?$")
SCHEDULER_FRAMES = ("__schedule", "schedule", "schedule_timeout", "io_schedule",
                    "schedule_preempt_disabled")  # how a task sleeps, not where
# older kernels' lines under the header: "python3  D ffff880838017788  0  5604  3943 0x00000000"
# (name, state, task address, pids) and the raw stack words ("ffff880838017788 0000000100000000")
HUNG_TASK_RAW_RE = re.compile(r"^(?:\S+\s+D\s+[0-9a-f]{8,}\s.*|[0-9a-f]{8,}(?: [0-9a-f]{8,})*)$")
# what dmesg and syslog put before a kernel line: "[  843.133443] ", "[Sat Mar  4 04:10:52 2023] "
# (dmesg -T), "Oct 11 06:07:26 glustern1 kernel: "
KERNEL_STAMP_RE = re.compile(
    r"^(?:\[\s*(?:\d+\.\d+|\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})\]"
    r"|\w{3} [ \d]\d \d\d:\d\d:\d\d \S+ kernel:)")
HUNG_TASK_LINES = ("Tainted:", '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs"', "task:", "Call Trace:", "<TASK>",
                   "</TASK>", "RIP:", "RSP:", "RAX:", "RDX:", "RBP:", "R10:", "R13:")

# --- where a dump was taken ---------------------------------------------------------------------
# a loop's separator: "=== PID 544360 ===", "== pid 12 ==", "=== node17 4242 ===",
# "=== node17 pid 4242 ==="
# a dumper's per-rank section: "=== Rank 0 ===" (the torch.distributed debug server's stacks
# file), "=== RANK 1 ===": the rank of the next dump
SEPARATOR_RANK_RE = re.compile(r"^={2,} ?(?:rank|RANK|Rank)[ :=]*(?P<rank>\d+) ?={2,}\s*$")
SEPARATOR_PID_RE = re.compile(
    r"^={2,} ?(?:(?P<host>[A-Za-z][\w.\-]*?)[ :/]+)?(?:PID|pid)?[ :=]*(?P<pid>\d+) ?={2,}\s*$")
# a shell prompt running py-spy: "[user@host ~]$ py-spy dump --pid 1", "user@host:~# sudo py-spy …"
# (searched: conda/venv tags may come first, "((env) ) [user@host ~]$ …")
PROMPT_PYSPY_RE = re.compile(
    r"(?:^|[\s(\[])[\w.\-]+@(?P<host>[A-Za-z][\w.\-]*)[: ][^$#@]*[$#] +(?:sudo +)?(?:\S*/)?"
    r"py-spy (?:dump|record|--dump)(?:.*?(?:--pid|-p)[ =](?P<pid>\d+))?")
# the command without a user@host prompt: "py-spy dump --pid 280058", zsh's
# "➜  py-spy git:(master) sudo py-spy dump -p 555"
PYSPY_COMMAND_RE = re.compile(
    r"(?:^|\s)(?:sudo +)?(?:\S*/)?py-spy (?:dump\b|--dump\b).*?(?:--pid|-p)[ =](?P<pid>\d+)")
# `ps` rows of a process in uninterruptible sleep (STAT D…): `ps aux` ("wust 13620 0.3 0.5
# 1394124 253628 pts/9  D    19:18   0:00 python classify.py …") and plain `ps PID` ("20463 ?
# Dl   43:28 /usr/bin/python …"). Only D rows are kept: the process stuck in the kernel.
PS_D_ROW_RE = re.compile(
    r"^(?:(?P<user>[A-Za-z_][\w.\-+]*) +(?P<pid>\d+) +[\d.]+ +[\d.]+ +\d+ +\d+ +"
    r"|(?P<pid2>\d+) +)(?:\?|pts/\d+|tty\w*) +(?P<stat>D[<NLsl+]*) +(?:\S+ +)?\d+:\d\d(?:[:.]\d\d)? +"
    r"(?P<cmd>\S.*)$")
# ps pads STAT to 4 columns: "D" and its flags, then spaces
PS_D_NEEDLES = (" D   ", " Dl  ", " Ds  ", " D+  ", " D<  ", " DN  ", " Dl+ ", " Ds+ ", " Dsl ",
                " DNl ", " D<l ")
# `ray stack` (python/ray/scripts/scripts.py): "Stack dump for <the worker's `ps aux` row>" before
# each worker's py-spy dump; the row's second column is the pid (old py-spy printed no Process line)
RAY_STACK_RE = re.compile(r"^Stack dump for \S+\s+(?P<pid>\d+)\s")
# "ssh jean-zay-iam06": the commands (and dumps) after it ran there
SSH_RE = re.compile(r"^ssh +(?:-\S+ +)*(?:[\w.\-]+@)?(?P<host>[A-Za-z][\w.\-]*)$")
# BigScience's per-node listing: "trace-jean-zay-iam52" then one leaf name per line
LISTING_HEAD_RE = re.compile(r"^(?:\./)?trace-(?P<host>[A-Za-z][\w.\-]*?)(?:\.(?:out|txt|log))?:?\s*$")
LISTING_ENTRY_RE = re.compile(r"^\s*(?P<func>[A-Za-z_][\w.]*|<\w+>)\s*$")
# a roll call of ranks by where they stopped (underworld3's utilities/hang_report.py): the group's
# innermost frame, then its callers ("via", indented: the reader strips the indent), "... N more
# frame(s)" where it cut them
ROLL_CALL_RE = re.compile(r"^\s*ranks?\s+\[(?P<ranks>\d+(?:\s*,\s*\d+)*)\]\s+stopped at\s+"
                          r"(?P<file>\S.*?):(?P<line>\d+) in (?P<func>\S+)\s*$")
ROLL_CALL_VIA_RE = re.compile(r"^\s*via\s+(?P<file>\S.*?):(?P<line>\d+) in (?P<func>\S+)\s*$")
ROLL_CALL_MORE_RE = re.compile(r"^\s*\.\.\. \d+ more frames?(?:\(s\))?\s*$")
ROLL_CALL_MAX_RANK = 1 << 20  # no job has more ranks: a larger number is no rank


# Cheap first-character/prefix checks before any regex (the loader feeds every line).
def _thread_line(text: str) -> re.Match[str] | None:
    """A py-spy thread header: an id, a state or a name at least (a bare 'Thread ' is prose).
    After other words on the line only with a state and a name (a poster's prose before it)."""
    m = THREAD_RE.match(text)
    if m is not None and (m["tid"] or m["state"] or m["name"]):
        return m
    if "Thread " in text and text.endswith('"'):
        m = THREAD_TAIL_RE.search(text)
        if m is not None and m["state"] and m["name"] is not None:
            return m
    return None


THREAD_TAIL_RE = re.compile(
    r'(?<=\s)Thread (?P<tid>0[xX][0-9A-Fa-f]+|\d+) \((?P<state>idle|active\+gil|active|gil)\): '
    r'"(?P<name>[^"]*)"$')
# A stack pasted without its header: py-spy frame lines ("__to_tensor (pytorch_lightning/core/
# module.py:619)") or faulthandler ones ('File "/x/distributed_c10d.py", line 2050 in all_reduce').
# Only a Python file with a line number and a function name without spaces starts one.
BARE_FRAME_RE = re.compile(r"^(?:[\w.<>]+) +\([^()]+\.py:\d+\)$")


STARTERS = ("Process ", "Thread ", "Current thread ", "Stack (most", "Error: ",
            "Traceback (most recent call first)", "# ThreadID", "-- Thread ID", "trace-", "./trace-")
# A bare faulthandler frame starts a stack in a stream; bare py-spy frames only as a whole file
# (``BARE_LOADER``): ".py:" is in every Python warning line, too common a needle.
BARE_NEEDLES = ('File "',)

# trace-<host>.<ext> as srun --output=trace-%N.out names it, optionally -rank<N> and -<pid>.
TRACE_NAME_RE = re.compile(r"(?:^|[/\\])trace-(?P<host>[^/\\]+?)\.(?:out|txt|log|json)$")
RANK_SUFFIX_RE = re.compile(r"[-_.]rank[-_]?(?P<rank>\d+)(?=$|[-_.])", re.IGNORECASE)
PID_SUFFIX_RE = re.compile(r"[-_.](?P<pid>\d+)$")

# Ray's log deduplication (on by default since Ray 2.5) ends a line that other workers printed
# too with how often: '(WorkerDict pid=358920)   File "…/ray/_private/worker.py", line 953 in
# main_loop [repeated 3x across cluster]' (PeterGriffinJin/Search-R1#134): no part of the frame
RAY_REPEAT_RE = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")

MAIN_THREAD_NAMES = ("MainThread", "pt_main_thread")
MAX_CMD_LINES = 20  # a "Process N:" line not followed by "Python v…" within this is no dump


def frame_text(func: str, file: str, line: int | None) -> str:
    """A frame as py-spy prints it: ``function (file:line)`` (``function (file)`` without line)."""
    return f"{func} ({file}:{line})" if line else f"{func} ({file})"


# Thousands of dumps repeat the same frame lines and file-name shapes: both are memoised (pure
# functions of the text), for lines and names up to this long.
MEMO_MAX_LEN = 512


def pyspy_frame(text: str) -> str | None:
    """A py-spy frame line as the ``stacks`` table keeps it (see ``frame_text``); None when the
    line is no frame (a ``--locals`` line ``name: repr (…)`` included)."""
    return _pyspy_frame(text) if len(text) <= MEMO_MAX_LEN else _pyspy_frame.__wrapped__(text)


@lru_cache(maxsize=8192)
def _pyspy_frame(text: str) -> str | None:
    m = FRAME_RE.match(text.strip())  # old py-spy (ray stack) indents frames with "\t "
    if not m or ": " in m["func"]:
        return None
    return frame_text(m["func"], m["file"], _int(m["line"]))


def name_hints(source: str, pid: int | None = None) -> tuple[str | None, int | None, int | None]:
    """(host, rank, pid) that a ``trace-<host>[-rank<N>][-<pid>].out`` file name carries. A
    trailing ``-<digits>`` is taken as a pid only after ``-rank<N>`` or when it equals ``pid``
    (the dumped process's): host names end in digits too (``gpu-node-12``)."""
    m = TRACE_NAME_RE.search(source)
    if not m:
        return None, None, None
    host = m["host"]
    rank = name_pid = None
    r = RANK_SUFFIX_RE.search(host)
    if r:
        rank = int(r["rank"])
        p = PID_SUFFIX_RE.fullmatch(host[r.end():])
        name_pid = int(p["pid"]) if p else None
        host = host[: r.start()]
    else:
        p = PID_SUFFIX_RE.search(host)
        if p and p.start() > 0 and pid is not None and int(p["pid"]) == pid:
            host = host[: p.start()]
    return host or None, rank, name_pid


class StackParser:
    """Reads py-spy and faulthandler dumps from one stream into ``stacks`` rows."""

    tables = ("stacks",)  # what it fills (``load(tables=…)`` leaves it out otherwise)
    # start needles (see ``base.BlockParser``), read off ``feed``: text.startswith(STARTERS) or
    # (digit first and endswith(" in:")), a thread header after prose ("Thread "), or a bare
    # frame (BARE_NEEDLES)
    needles = ("Process ", "Thread ", "Current thread ", "Stack (most", "Error: ", " in:",
               'File "', "(most recent call first)", "ThreadID", "Thread ID", "trace-", "== ",
               "py-spy", "ssh ", "Stack dump for ", "Timeout (", " Stack of ", "(most recent call last)", "info threads", "Target Id", "blocked for more than",
               " stopped at ",
               *PS_D_NEEDLES)
    section: str | None = None  # "pyspy" | "faulthandler" while inside a dump

    def __init__(self) -> None:
        self.section: str | None = None  # "pyspy" | "faulthandler" | None
        self._proc: dict[str, Any] = {}
        self._threads: list[dict[str, Any]] = []  # threads sharing the frame list being read
        self._frames: list[str] = []
        self._in_locals = False
        self._fh: list[dict[str, Any]] = []  # threads of the faulthandler dump being read
        self._fh_cut = False
        self._watchdog = False  # a dump_traceback_later header was read: the next dump is its
        self._fh_watchdog = False  # the faulthandler dump being read is a watchdog's
        self._condensed: int | None = None  # the N of the last "N processes are in:" header
        self._hint: dict[str, Any] = {}  # host/pid a separator or prompt named for the next dump
        self._tb: list[dict[str, Any]] = []  # threads of the gdb / call-last dump being read
        self._tb_last = False  # frames printed most recent call last (reversed at flush)
        self._tb_after_frame = False  # the line before was a frame: this one may be its source
        self._listing_host: str | None = None
        self._py: dict[str, Any] = {}  # the Python traceback being read
        self._gdb_info: list[dict[str, Any]] = []  # the rows of gdb's `info threads` being read
        self._hung: dict[str, Any] = {}  # the kernel's hung-task report being read
        self._roll: dict[str, Any] = {}  # the roll call's group being read: ranks, frames

    # -- protocol ------------------------------------------------------------------------
    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the thread rows it completed."""
        if text.startswith("20"):
            text = _unstamped(text, self.section == "faulthandler")
        if text.endswith("across cluster]"):
            text = RAY_REPEAT_RE.sub("", text)
        if self.section is None:
            if "(most recent call last)" in text and text.rstrip().endswith(PYTB_HEADER):
                return self._pytb_start(ctx, header=True)
            if "blocked for more than" in text:
                return self._hung_start(text, ctx)
            if " stopped at " in text and (m := ROLL_CALL_RE.match(text)):
                return self._roll_start(m, ctx)
            if text.startswith("Timeout (") and FH_WATCHDOG_RE.match(text):
                self._watchdog = True
                return []
            if ("info threads" in text and GDB_INFO_THREADS_RE.match(text.strip())) or (
                    "Target Id" in text and GDB_INFO_HEAD_RE.match(text)):
                self.section, self._gdb_info = "gdb_info", []
                return []
            if _starts(text) or (text[:1].isdigit() and text.endswith(" in:")):
                return self._start(text, ctx)
            if "Thread " in text and text.endswith('"'):
                m = _thread_line(text)
                if m:
                    self.section, self._proc = "pyspy", {}
                    return self._thread(m, ctx)
            if self._where(text):
                return []
            if any(n in text for n in PS_D_NEEDLES):
                return self._ps_row(text, ctx)
            return self._bare(text.strip(), ctx) if any(n in text for n in BARE_NEEDLES) else []
        if self.section == "faulthandler":
            return self._feed_faulthandler(text, ctx)
        if self.section == "traceback":
            return self._feed_traceback(text, ctx)
        if self.section == "listing":
            return self._feed_listing(text, ctx)
        if self.section == "pytb":
            return self._feed_pytb(text, ctx)
        if self.section == "gdb_info":
            return self._feed_gdb_info(text, ctx)
        if self.section == "hung":
            return self._feed_hung(text, ctx)
        if self.section == "roll_call":
            return self._feed_roll_call(text, ctx)
        return self._feed_pyspy(text, ctx)

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: emit what is pending."""
        out = (self._flush_threads() + self._flush_faulthandler() + self._flush_traceback()
               + self._flush_pytb() + self._flush_gdb_info() + self._flush_hung()
               + self._flush_roll_call())
        self.section = None
        self._proc = {}
        self._hint = {}
        self._listing_host = None
        return out

    def _restart(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        """A line that ended a dump: it may start the next one, say where it is taken, or be a
        ``ps`` row of a process in uninterruptible sleep."""
        if _starts(text):
            return self._start(text, ctx)
        if self._where(text):
            return []
        return self._ps_row(text, ctx) if any(n in text for n in PS_D_NEEDLES) else []

    def _where(self, text: str) -> bool:
        """A loop's separator or a shell prompt running py-spy: the host/pid of the next dump."""
        if "== " in text:
            m = SEPARATOR_RANK_RE.match(text.strip())
            if m:
                self._hint = {"host": self._hint.get("host"), "pid": None, "rank": int(m["rank"])}
                return True
            m = SEPARATOR_PID_RE.match(text.strip())
            if m:
                host = m["host"] if m["host"] and m["host"].lower() not in ("pid", "rank") else None
                self._hint = {"host": host or self._hint.get("host"), "pid": int(m["pid"])}
                return True
        if "py-spy" in text:
            m = PROMPT_PYSPY_RE.search(text) if "@" in text else None
            if m:
                self._hint = {"host": m["host"], "pid": _int(m["pid"])}
                return True
            m = PYSPY_COMMAND_RE.search(text)
            if m:  # the command without a prompt: the pid, on the host an ssh before it named
                self._hint = {"host": self._hint.get("host"), "pid": int(m["pid"])}
                return True
        if text.startswith("ssh "):
            m = SSH_RE.match(text.strip())
            if m:
                self._hint = {"host": m["host"], "pid": None}
                return True
        if text.startswith("Stack dump for "):
            m = RAY_STACK_RE.match(text)
            if m:
                self._hint = {"host": self._hint.get("host"), "pid": int(m["pid"])}
                return True
        return False

    # -- starting a section --------------------------------------------------------------
    def _start(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        m = PROCESS_RE.match(text)
        if m:
            self.section = "pyspy"
            self._proc = _process(m)
            return []
        m = _thread_line(text)
        if m:
            self.section = "pyspy"
            self._proc = {}
            return self._thread(m, ctx)
        m = CONDENSED_RE.match(text)
        if m:
            self.section = "pyspy"
            self._proc = {}
            self._condensed = int(m["n"])
            return []
        m = FH_THREAD_RE.match(text)
        if m or FH_STACK_RE.match(text):
            self.section = "faulthandler"
            self._fh, self._fh_cut = [], False
            self._fh_watchdog, self._watchdog = self._watchdog, False
            return self._fh_thread(m, ctx)
        if PYSPY_ERROR_RE.match(text):
            return [self._error_row(text, ctx)]
        m = GDB_THREAD_RE.match(text)
        if m or GDB_TRACEBACK_RE.match(text):
            self.section, self._tb, self._tb_last = "traceback", [], False
            return self._tb_thread(m, ctx)
        m = _dumper_thread(text.strip())
        if m:
            self.section, self._tb, self._tb_last = "traceback", [], True
            return self._tb_thread(m, ctx)
        m = LISTING_HEAD_RE.match(text)
        if m:
            self.section, self._listing_host = "listing", m["host"]
        return []

    def _bare(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        """A faulthandler frame line with no header before it starts a stack of one unnamed
        thread."""
        m = FH_FRAME_RE.match(text)
        if m:
            self.section, self._fh, self._fh_cut = "faulthandler", [], False
            self._fh.append({"pid": _writer(ctx)[2], "cmd": None, "tid": None, "thread": None,
                             "state": None, "frames": [], "_ctx": ctx, "_all": False,
                             **self._fh_hint()})
            return self._feed_faulthandler(text, ctx)
        m = PYTB_FRAME_RE.match(text)
        if m:  # a Python traceback's frames pasted without their header
            out = self._pytb_start(ctx)
            return out + self._feed_pytb(text, ctx)
        return []

    # -- py-spy --------------------------------------------------------------------------
    def _feed_pyspy(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        if self._threads and not text.startswith("Thread "):
            # (A frame line ends in ")", a locals header in ":": never both; an unnamed thread's
            # header "Thread 0x7F4AA2ED8700 (active)" has a frame's shape.)
            frame = pyspy_frame(text)
            if frame is not None:
                self._in_locals = False
                self._frames.append(frame)
                return []
            if LOCALS_HEADER_RE.match(text):
                self._in_locals = True
                return []
            if self._in_locals and ": " in text:
                return []
        m = _thread_line(text)
        if m:
            return self._thread(m, ctx)
        if not text.strip() or SEPARATOR_RE.match(text):
            return self._flush_threads() if self._frames else []
        m = PROCESS_RE.match(text)
        if m:
            out = self._flush_threads()
            self._proc = _process(m)
            return out
        if PYSPY_ERROR_RE.match(text):  # "Process N: …" then py-spy could not read it
            out = self._flush_threads()
            if self._proc.get("pid") is not None and not self._threads:
                self._hint = {"host": self._hint.get("host"), "pid": self._proc["pid"]}
            self.section, self._proc = None, {}
            return out + [self._error_row(text, ctx)]
        if PYTHON_VERSION_RE.match(text) or PARENT_RE.match(text):
            self._proc["in_cmd"] = False
            return []
        if PYSPY_ERROR_RE.match(text):
            # py-spy could not dump the process its header named ("Process 280058: …" then
            # "Error: Failed to suspend process"): an error row that keeps its pid
            out = self._flush_threads()
            row = self._error_row(text, ctx)
            row[1]["pid"] = self._proc.get("pid")
            self.section, self._proc = None, {}
            return [*out, row]
        if self._proc.get("in_cmd") and self._proc.get("cmd_lines", 0) < MAX_CMD_LINES:
            # a command line with newlines (python -c "…"), until "Python v…"
            self._proc["cmd"] = f"{self._proc.get('cmd') or ''}\n{text}"
            self._proc["cmd_lines"] = self._proc.get("cmd_lines", 0) + 1
            return []
        m = CONDENSED_RE.match(text)
        if m:
            out = self._flush_threads()
            self._condensed = int(m["n"])
            return out
        # Anything else ends the dump; it may start the next one (an error, faulthandler) or
        # say where the next one is taken.
        out = self._flush_threads()
        self.section = None
        self._proc = {}
        return out + self._restart(text, ctx)

    def _thread(self, m: re.Match[str], ctx: object) -> list[tuple[str, Row]]:
        out: list[tuple[str, Row]] = []
        if self._frames:
            out = self._flush_threads()
        name = m["name"]
        tid = m["tid"]
        pid = self._proc.get("pid")
        if name in MAIN_THREAD_NAMES and tid is not None and tid.isdigit():
            main_pid = int(tid)
            # The condensed form lists several processes' MainThreads without Process lines.
            if pid is None or (pid != main_pid and self._proc.get("has_main")):
                pid = main_pid
                self._proc = {"pid": pid, "cmd": None}
            self._proc["has_main"] = True
        if pid is None and self._hint.get("pid") is not None and not self._hint.get("used"):
            pid = self._proc["pid"] = self._hint["pid"]  # "=== PID N ===" before a headless dump
        if pid is not None and pid == self._hint.get("pid"):
            self._hint["used"] = True
        self._threads.append({
            "pid": pid, "cmd": self._proc.get("cmd"), "tid": tid, "thread": name,
            "state": m["state"], "_ctx": ctx, "host": self._hint.get("host"),
            "rank": self._hint.get("rank"),
        })
        self._in_locals = False
        return out

    def _flush_threads(self) -> list[tuple[str, Row]]:
        out = []
        n, self._condensed = self._condensed, None
        if n is not None and 0 < len(self._threads) < n:
            # Fewer threads listed than the header counts: the last one stands for the rest.
            self._threads[-1]["count"] = n - len(self._threads) + 1
        for t in self._threads:
            out.append(("stacks", _row(t, list(self._frames))))
        self._threads, self._frames, self._in_locals = [], [], False
        return out

    # -- faulthandler --------------------------------------------------------------------
    def _feed_faulthandler(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        if self._fh and _writer(ctx) != _writer(self._fh[0]["_ctx"]):
            # another writer's line (Ray's "(Actor pid=N)", torchrun's "[default3]:"): a dump is
            # one process's; this one ends here and the line is read afresh
            out = self._flush_faulthandler()
            self.section = None
            return out + self.feed(text, ctx)
        m = FH_FRAME_RE.match(text)
        if m and self._fh:
            line = m["line"]
            self._fh[-1]["frames"].append(
                frame_text(m["func"].strip(), m["file"], int(line) if line.isdigit() else None))
            return []
        m = FH_THREAD_RE.match(text)
        if m or FH_STACK_RE.match(text):
            return self._fh_thread(m, ctx)
        stripped = text.strip()
        if not stripped or stripped in FH_NOTES:
            return []
        if stripped == "...":
            self._fh_cut = True
            return []
        out = self._flush_faulthandler(went_on=not FH_STOPPED_RE.search(stripped))
        self.section = None
        return out + self._restart(text, ctx)

    def _fh_thread(self, m: re.Match[str] | None, ctx: object) -> list[tuple[str, Row]]:
        out: list[tuple[str, Row]] = []
        if m is None and self._fh:  # "Stack (most recent…)" starts a dump of its own
            out = self._flush_faulthandler()
            self.section = "faulthandler"
        name = None if m is None else (m["name"] or m["oldname"])
        self._fh.append({
            "pid": _writer(ctx)[2], "cmd": None, "tid": None if m is None else m["tid"], "thread": name,
            "state": None if m is None else ("current" if m["current"] == "Current thread" else None),
            "frames": [], "_ctx": ctx, "_all": m is not None, **self._fh_hint(),
        })
        return out

    def _fh_hint(self) -> dict[str, Any]:
        """The rank a dumper's section header named for this faulthandler dump (``=== Rank N
        ===``); such a header makes even one bare frame a stack."""
        rank = self._hint.get("rank")
        return {} if rank is None else {"rank": rank, "named": True}

    def _flush_faulthandler(self, went_on: bool = False) -> list[tuple[str, Row]]:
        """The dump's thread rows; a watchdog's dump that the process's own output follows
        (``went_on``) is a slow step's ``progress`` dump, no hang."""
        threads, self._fh = self._fh, []
        if went_on and self._fh_watchdog:
            for t in threads:
                t["state"] = "progress" if t["state"] in (None, "current") else t["state"]
        self._fh_watchdog = False
        # a bare frame line (no header) with nothing after it is no stack
        threads = [t for t in threads if t["_all"] or t["tid"] is not None or len(t["frames"]) > 1
                   or t["state"] is not None or (t.get("named") and t["frames"])]
        if threads and threads[-1]["_all"] and not self._fh_cut:
            # CPython prepends new thread states: the last one listed is the main thread; unless
            # it is one threading started (a paste moved or cut the rest), then the current
            # thread where it is none
            main = threads[-1]
            if _threading_started(main["frames"]):
                main = next((t for t in threads if t["state"] == "current"
                             and not _threading_started(t["frames"])), None)
            if main is not None:
                main["thread"] = "MainThread"
        self._fh_cut = False
        return [("stacks", _row(t, t.pop("frames"))) for t in threads]

    # -- errors --------------------------------------------------------------------------
    def _error_row(self, text: str, ctx: object) -> tuple[str, Row]:
        """py-spy's error, for the process a separator or prompt before it named (if any)."""
        pid = None if self._hint.get("used") else self._hint.get("pid")
        self._hint["used"] = True
        return ("stacks", {"state": "dump_error", "frames": [], "leaf": None, "_ctx": ctx,
                           "pid": pid, "host": self._hint.get("host")})

    def _ps_row(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        """A ``ps`` row of a process in uninterruptible sleep: a row with ``state`` ``D``."""
        m = PS_D_ROW_RE.match(text.strip())
        if not m:
            return []
        return [("stacks", {"pid": int(m["pid"] or m["pid2"]), "cmd": m["cmd"].strip(),
                            "state": "D", "frames": [], "leaf": None, "_ctx": ctx,
                            "host": self._hint.get("host")})]

    # -- gdb py-bt and most-recent-call-last dumps ---------------------------------------
    def _tb_thread(self, m: re.Match[str] | None, ctx: object) -> list[tuple[str, Row]]:
        """A thread header (gdb's, or a dumper's thread id), or gdb's bare ``Traceback (most
        recent call first):`` (``py-bt`` of the current thread only)."""
        if m is None and self._tb and not self._tb[-1]["frames"]:
            return []  # the Traceback line under gdb's own thread header
        tid = name = None
        pid = self._hint.get("pid")
        if m is not None:
            tid = m["lwp"] if "lwp" in m.re.groupindex else m["tid"]
            # gdb numbers the main thread 1 (its LWP is the pid)
            name = "MainThread" if "num" in m.re.groupindex and m["num"] == "1" else None
            if "pid" in m.re.groupindex:  # a dumper's header that names its process
                pid, name = int(m["pid"]), m["name"]
            elif "name" in m.re.groupindex:  # one that names the thread only
                name = m["name"]
        self._tb.append({"pid": pid, "cmd": None, "tid": tid, "thread": name,
                         "state": None, "frames": [], "_ctx": ctx, "host": self._hint.get("host")})
        self._tb_after_frame = False
        return []

    def _feed_traceback(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        s = text.strip()
        m = TB_FRAME_RE.match(s)
        if m and self._tb:
            line = m["line"]
            self._tb[-1]["frames"].append(
                frame_text(m["func"].strip(), m["file"], int(line) if line.isdigit() else None))
            self._tb_after_frame = True
            return []
        m = GDB_BUILTIN_RE.match(s)
        if m and self._tb:
            self._tb[-1]["frames"].append(frame_text(m["func"], "built-in", None))
            self._tb_after_frame = False
            return []
        if self._tb and not self._tb_last and GDB_C_FRAME_START_RE.match(s):
            frame = gdb_c_frame(s)
            if frame is not None:
                self._tb[-1]["frames"].append(frame)
            self._tb_after_frame = False
            self._tb[-1]["c_frames"] = True
            self._tb[-1]["wrapped"] = 0
            return []
        if self._tb and self._gdb_wrapped(s):
            return []  # a frame's arguments or 'at file:line' that gdb wrapped
        m = GDB_THREAD_RE.match(s) or _dumper_thread(s)
        if m or GDB_TRACEBACK_RE.match(s):
            return self._tb_thread(m, ctx)
        m = LAST_NAME_RE.match(s)
        if m and self._tb:
            self._tb[-1]["thread"] = m["name"].strip()
            return []
        if not s or s in GDB_NOTES or s in LAST_BANNERS:
            self._tb_after_frame = False
            return []
        if self._tb_after_frame:  # the source line under a frame
            self._tb_after_frame = False
            return []
        out = self._flush_traceback()
        self.section = None
        return out + self._restart(text, ctx)

    def _gdb_wrapped(self, s: str) -> bool:
        """Whether ``s`` continues gdb's last C frame, which did not say where it is (its
        arguments or its 'at file:line' / 'from lib' wrapped onto lines of their own, at most
        ``MAX_GDB_WRAP``): the frame takes the place when the line names it."""
        t = self._tb[-1]
        frames = t["frames"]
        if not (t.get("c_frames") and frames and frames[-1].endswith(f" ({UNKNOWN_FILE})")
                and t.get("wrapped", 0) < MAX_GDB_WRAP and s):
            return False
        t["wrapped"] = t.get("wrapped", 0) + 1
        m = GDB_C_WHERE_RE.search(s)
        if m:
            func = frames[-1][: -len(UNKNOWN_FILE) - 3]
            frames[-1] = frame_text(func, _gdb_file(m["file"], m["line"]), _int(m["line"]))
        return True

    def _flush_traceback(self) -> list[tuple[str, Row]]:
        threads, self._tb = self._tb, []
        out = []
        # gdb numbers the main thread 1 and its LWP is the process id
        main = next((t["tid"] for t in threads if t.get("c_frames") and t["thread"] == "MainThread"
                     and t["tid"] and t["tid"].isdigit() and t["pid"] is None), None)
        for t in threads:
            t.pop("c_frames", None)
            t.pop("wrapped", None)
            if main is not None and t["pid"] is None:
                t["pid"] = int(main)
            frames = t.pop("frames")
            if not frames:
                continue
            out.append(("stacks", _row(t, frames[::-1] if self._tb_last else frames)))
        return out

    # -- a Python traceback (most recent call last) ---------------------------------------
    def _pytb_start(self, ctx: object, header: bool = False) -> list[tuple[str, Row]]:
        """A traceback starts: its header, or its first frame (fed next)."""
        self.section = "pytb"
        self._py = {"frames": [], "inner": [], "phase": "frames", "state": None, "_ctx": ctx,
                    "after_frame": False, "header": header}
        return []

    def _feed_pytb(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        py, s = self._py, text.strip()
        if _writer(ctx) != _writer(py["_ctx"]):  # another writer's line: this sample ends
            out = self._flush_pytb()
            self.section = None
            return out + self.feed(text, ctx)
        if py["phase"] != "frames":  # after the exception line: a chained one continues it
            if not s:
                return []
            if s in PYTB_CHAIN:
                py["phase"] = "chain"
                return []
            if py["phase"] == "chain" and s.endswith(PYTB_HEADER):
                py["inner"], py["frames"] = py["frames"] + py["inner"], []
                py["phase"], py["after_frame"] = "frames", False
                return []
        else:
            m = self._pytb_wrapped(s) if py.get("wrap") or s.startswith('File "') else None
            if m is True:
                return []  # the first pieces of a frame a terminal wrapped
            m = m or PYTB_FRAME_RE.match(s)
            if m:
                line = m["line"]
                py["frames"].append(
                    frame_text(m["func"].strip(), m["file"], int(line) if line.isdigit() else None))
                py["after_frame"] = True
                return []
            if s and PYTB_FILLER_RE.match(s):
                return []
            # (the reader hands lines over without their indentation: the line after a frame
            # is its source unless it can only be an exception)
            after, py["after_frame"] = py.get("after_frame"), False
            m = (PYTB_EXC_STRICT_RE if after else PYTB_EXC_RE).match(s)
            if m and py["frames"] and not s.endswith(PYTB_HEADER):
                exc = m["exc"] or m["named"]
                py["state"] = "interrupted" if exc.rsplit(".", 1)[-1] in INTERRUPTS else "raised"
                py["phase"] = "after"
                return []
            if after and s:  # the source line under a frame; a wrapping terminal's its tail too
                py["after_frame"] = "tail" if after is True and py.get("wrapped") else False
                return []
        out = self._flush_pytb()
        self.section = None
        return out + self.feed(text, ctx)

    def _pytb_wrapped(self, s: str) -> re.Match[str] | bool | None:
        """A frame line a terminal wrapped at its width (``PYTB_WRAP_PIECES``): the joined frame
        once its last piece arrives; True while pieces are kept; None for no wrapped frame
        (a piece that never completes one is dropped, and the line is read as it is)."""
        py = self._py
        pieces = py.pop("wrap", [])
        if pieces and not s.startswith('File "'):
            head = "".join(pieces)
            # the wrap falls mid-word (kept tight) or at a space the terminal dropped
            m = PYTB_FRAME_RE.match(head + s) or PYTB_FRAME_RE.match(f"{head} {s}")
            if m:
                py["wrapped"] = True
                return m
            if len(pieces) + 1 < PYTB_WRAP_PIECES and s:
                py["wrap"] = [*pieces, s]
                return True
            return None
        if s.startswith('File "') and not PYTB_FRAME_RE.match(s):
            py["wrap"], py["after_frame"] = [s], False
            return True
        return None

    def _flush_pytb(self) -> list[tuple[str, Row]]:
        py, self._py = self._py, {}
        frames = (py.get("frames") or []) + (py.get("inner") or [])
        if not frames:
            return []
        # (Python prints its header only over an exception's traceback: with no exception line
        # after the frames, the output was cut, "cut"; frames pasted alone may be a stack)
        state = py["state"] or ("cut" if py.get("header") else "traceback")
        t = {"pid": _writer(py["_ctx"])[2], "cmd": None, "tid": None, "thread": None,
             "state": state, "_ctx": py["_ctx"]}
        return [("stacks", _row(t, frames[::-1]))]

    # -- gdb's info threads ----------------------------------------------------------------
    def _feed_gdb_info(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        m = GDB_INFO_ROW_RE.match(text.rstrip())
        if m:
            func, file = m["func"], m["file"] or "?"
            self._gdb_info.append({
                "tid": m["lwp"], "thread": "MainThread" if m["num"] == "1" else (m["name"] or None),
                "state": "current" if m["cur"] else None, "_ctx": ctx, "cmd": None,
                "frames": [frame_text(func, file, _int(m["line"]))]})
            return []
        if not text.strip() or GDB_INFO_HEAD_RE.match(text) or (
                self._gdb_info and text.strip().startswith(("from /", "at "))):
            return []  # (a long row's "from /usr/lib/libpthread.so.0" wraps to a line of its own)
        out = self._flush_gdb_info()
        self.section = None
        return out + self.feed(text, ctx)

    def _flush_gdb_info(self) -> list[tuple[str, Row]]:
        """The listed threads, each with its one frame; gdb's thread 1 is the main thread,
        whose LWP is the process id."""
        rows, self._gdb_info = self._gdb_info, []
        main = next((r["tid"] for r in rows if r["thread"] == "MainThread"), None)
        out = []
        for r in rows:
            r["pid"] = _int(main) or self._hint.get("pid")
            out.append(("stacks", _row(r, r.pop("frames"))))
        return out

    # -- the kernel's hung-task report -----------------------------------------------------
    def _hung_start(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        m = HUNG_TASK_RE.search(text)
        if not m:
            return []
        self.section = "hung"
        self._hung = {"pid": int(m["pid"]), "cmd": m["cmd"], "tid": m["pid"], "thread": None,
                      "state": "D", "_ctx": ctx, "frames": []}
        return []

    def _feed_hung(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        s = KERNEL_STAMP_RE.sub("", text.strip(), count=1).strip()
        m = KERNEL_FRAME_RE.match(s)
        if m:
            if not m["unsure"] and not (not self._hung["frames"] and m["func"] in SCHEDULER_FRAMES):
                self._hung["frames"].append(frame_text(m["func"], m["mod"] or "kernel", None))
            return []
        if not s or s.startswith(HUNG_TASK_LINES) or HUNG_TASK_RAW_RE.match(s):
            return []
        out = self._flush_hung()
        self.section = None
        return out + self.feed(text, ctx)

    def _flush_hung(self) -> list[tuple[str, Row]]:
        t, self._hung = self._hung, {}
        return [("stacks", _row(t, t.pop("frames")))] if t else []

    # -- a roll call of ranks by where they stopped ---------------------------------------
    def _roll_start(self, m: re.Match[str], ctx: object) -> list[tuple[str, Row]]:
        self.section = "roll_call"
        self._roll = {"ranks": [int(r) for r in m["ranks"].split(",")], "_ctx": ctx,
                      "frames": [frame_text(m["func"], m["file"], int(m["line"]))]}
        return []

    def _feed_roll_call(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        m = ROLL_CALL_VIA_RE.match(text)
        if m:
            self._roll["frames"].append(frame_text(m["func"], m["file"], int(m["line"])))
            return []
        if ROLL_CALL_MORE_RE.match(text):
            return []
        out = self._flush_roll_call()
        self.section = None
        return out + self.feed(text, ctx) if text.strip() else out

    def _flush_roll_call(self) -> list[tuple[str, Row]]:
        """One row per rank of the group, each with the group's frames (the comparer's sample)."""
        g, self._roll = self._roll, {}
        if not g:
            return []
        return [("stacks", {"rank": r, "_named_rank": True, "thread": "MainThread",
                            "frames": list(g["frames"]), "leaf": g["frames"][0],
                            "_ctx": g["_ctx"]})
                for r in dict.fromkeys(g["ranks"]) if r < ROLL_CALL_MAX_RANK]

    # -- a condensed per-node listing of leaves -----------------------------------------
    def _feed_listing(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        m = LISTING_ENTRY_RE.match(text)
        if m:
            return [("stacks", {"host": self._listing_host, "thread": "MainThread",
                                "state": "listed", "frames": [m["func"]], "leaf": m["func"],
                                "_ctx": ctx})]
        self.section, self._listing_host = None, None
        return self._restart(text, ctx) if text.strip() else []


def _unstamped(text: str, in_dump: bool) -> str:
    """A faulthandler line without the collector's time before it (``COLLECTOR_STAMP_RE``);
    any other line as it is."""
    rest = text
    while m := COLLECTOR_STAMP_RE.match(rest):  # a blank line reads as two stamps
        rest = rest[m.end():]
    if rest is text or not (in_dump or rest.startswith(FH_STAMPED_STARTS)):
        return text
    return rest.strip()


def _threading_started(frames: list[str]) -> bool:
    """Whether a stack's outermost frame is threading's bootstrap (``THREAD_BOOTSTRAP_RE``): a
    thread that ``threading`` started, never the main thread."""
    return bool(frames) and bool(THREAD_BOOTSTRAP_RE.match(frames[-1]))


def _starts(text: str) -> bool:
    """Whether a line may start a dump (``STARTERS``, python-manhole's '#… ProcessID=', or
    pytest-timeout's '~~~ Stack of')."""
    return text.startswith(STARTERS) or (text.startswith("#") and "ProcessID=" in text) or (
        text.startswith("~") and " Stack of " in text)


def _dumper_thread(text: str) -> re.Match[str] | None:
    """A stack dumper's thread header (``DUMPER_THREAD_RES``), stripped."""
    return next((m for m in (rx.match(text) for rx in DUMPER_THREAD_RES) if m), None)


def gdb_c_frame(text: str) -> str | None:
    """A gdb ``bt`` frame line as the ``stacks`` table keeps it: ``function (library)`` or
    ``function (file:line)``; ``function (?)`` until a wrapped line says where; None for an
    unknown function in no known library."""
    m = GDB_PY_FRAME_RE.search(text)
    if m:  # a Python frame the interpreter's frame names: the frame that says where
        return frame_text(m["func"], m["file"], int(m["line"]))
    for rx in GDB_C_FRAME_RES:
        m = rx.match(text)
        if m:
            func = m["func"].strip()
            file = m["file"] if "file" in rx.groupindex else None
            line = m["line"] if "line" in rx.groupindex else None
            if func == "??" and not file:
                return None
            return frame_text(func, _gdb_file(file, line), _int(line))
    return None


def _gdb_file(file: str | None, line: str | None) -> str:
    """A library by its name as py-spy's native frames show it (``libc.so.6``); a source file
    as gdb printed it."""
    if not file:
        return UNKNOWN_FILE
    return file if line else file.rsplit("/", 1)[-1]


def _writer(ctx: object) -> tuple[Any, Any, Any]:
    """(rank, host, pid) the line's prefixes named (Ray's ``(Actor pid=N)`` gives the pid)."""
    origin = ctx[2] if isinstance(ctx, tuple) and len(ctx) > 2 else None
    return (getattr(origin, "rank", None), getattr(origin, "host", None),
            getattr(origin, "pid", None))


def _process(m: re.Match[str]) -> dict[str, Any]:
    """A "Process N: cmd" header; until "Python v…" further lines continue the command line."""
    return {"pid": int(m["pid"]), "cmd": m["cmd"].strip() or None, "in_cmd": True}


def _int(v: str | None) -> int | None:
    return int(v) if v else None


def _row(t: dict[str, Any], frames: list[str]) -> Row:
    """A ``stacks`` row, with host/rank/pid hints from the file name where the lines had none."""
    ctx = t.get("_ctx")
    row: Row = {
        "pid": t.get("pid"), "cmd": t.get("cmd"), "tid": t.get("tid"), "thread": t.get("thread"),
        "state": t.get("state"), "frames": frames, "leaf": frames[0] if frames else None,
        "_ctx": ctx,
    }
    if t.get("count"):
        row["count"] = t["count"]
    if t.get("rank") is not None and _writer(ctx)[0] is None:
        row["rank"] = t["rank"]  # named by a dumper's "=== Rank N ===" header
    if t.get("host"):
        row["host"] = t["host"]  # named by a separator or prompt before the dump
    elif isinstance(ctx, tuple) and len(ctx) > 2:
        source, origin = str(ctx[0]), ctx[2]
        hints = (_file_hints(source, row["pid"]) if len(source) <= MEMO_MAX_LEN
                 else _file_hints.__wrapped__(source, row["pid"]))
        if hints is not None:
            name_host, host, rank, name_pid = hints
            if getattr(origin, "host", None) in (None, name_host):
                row["host"] = host  # else a line prefix named the host
            if rank is not None and getattr(origin, "rank", None) is None:
                row["rank"] = rank
            if row["pid"] is None and name_pid is not None:
                row["pid"] = name_pid
    return row


@lru_cache(maxsize=1024)
def _file_hints(source: str, pid: int | None) -> tuple[str, str | None, int | None, int | None] | None:
    """(host as the file name spells it, then ``name_hints``); None for no ``trace-*`` name."""
    m = TRACE_NAME_RE.search(source)
    return None if m is None else (m["host"], *name_hints(source, pid))


# --- py-spy --json ------------------------------------------------------------------------------
THREAD_KEY_RE = re.compile(r'"thread_id"\s*:')


def looks_like_pyspy_json(path: Path, head: bytes) -> bool:
    """A py-spy ``dump --json`` file: a JSON array of thread traces."""
    h = head.lstrip()
    return h[:1] == b"[" and b'"thread_id"' in h and b'"frames"' in h and (
        b'"owns_gil"' in h or b'"os_thread_id"' in h or b'"thread_name"' in h)


def _json_docs(text: str) -> list[Any]:
    """Every JSON document in ``text`` (``xargs py-spy dump --json`` concatenates arrays)."""
    dec = json.JSONDecoder()
    out, pos = [], 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            return out
        try:
            obj, pos = dec.raw_decode(text, pos)
        except RecursionError:
            raise ValueError("nests lists or dicts too deeply to read (deeper than Python's "
                             "recursion limit)") from None
        except ValueError as e:
            if not out:
                raise ValueError(f"not valid py-spy JSON ({e})") from None
            return out  # a cut-off tail: keep what came before
        out.append(obj)


def _line_numbers(text: str) -> list[int]:
    """The line of each ``"thread_id"`` key in ``text`` (one per thread object)."""
    starts, line, last = [], 1, 0
    for m in THREAD_KEY_RE.finditer(text):
        line += text.count("\n", last, m.start())
        last = m.start()
        starts.append(line)
    return starts


def load_pyspy_json(path: Path) -> list[tuple[str, Row]]:
    """A py-spy ``--json`` dump as ``stacks`` rows (ValueError when it cannot be read, or would
    build more than a flight-recorder dump may)."""
    from .flight_recorder import check_json_size

    data = path.read_bytes()
    check_json_size(data, "a py-spy dump")
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    del data  # (read_text's newlines, from the bytes whose size was checked)
    # Each thread object holds one "thread_id" key: its line is the row's source line.
    starts = _line_numbers(text)
    try:
        return _pyspy_rows(path, text, starts)
    except RecursionError:
        raise ValueError("nests lists or dicts too deeply to read (deeper than Python's "
                         "recursion limit)") from None
    except MemoryError:
        raise ValueError("needs more memory than there is to read; skipped") from None


def _pyspy_rows(path: Path, text: str, starts: list[int]) -> list[tuple[str, Row]]:
    rows: list[tuple[str, Row]] = []
    i = 0
    for doc in _json_docs(text):
        for t in doc if isinstance(doc, list) else [doc]:
            if not isinstance(t, dict) or not isinstance(t.get("frames"), list):
                continue
            frames = []
            for f in t["frames"]:
                if not isinstance(f, dict):
                    continue
                line = f.get("line") if isinstance(f.get("line"), int) else None
                frames.append(frame_text(str(f.get("name")),
                                         str(f.get("short_filename") or f.get("filename")), line))
            tid = t.get("os_thread_id") or t.get("thread_id")
            tid_s = str(tid) if t.get("os_thread_id") else (
                f"{tid:#X}" if isinstance(tid, int) else None)
            state = "idle" if not t.get("active") else ("active+gil" if t.get("owns_gil") else "active")
            name = t.get("thread_name")
            pid = t.get("pid") if isinstance(t.get("pid"), int) else None
            host, rank, name_pid = name_hints(str(path), pid)
            rank = rank if rank is not None else path_origin(str(path)).rank
            pid = pid if pid is not None else name_pid
            info = t.get("process_info") if isinstance(t.get("process_info"), dict) else {}
            cmd = info.get("command_line")
            header = f'Thread {tid_s} ({state})' + (f': "{name}"' if name else "")
            rows.append(("stacks", {
                "host": host, "rank": rank, "pid": pid, "cmd": cmd if isinstance(cmd, str) else None,
                "tid": tid_s, "thread": name, "state": state, "frames": frames,
                "leaf": frames[0] if frames else None,
                "source": f"{path}:{starts[i] if i < len(starts) else 1}", "line": header,
            }))
            i += 1
    if not rows:
        raise ValueError("a JSON array without py-spy thread traces")
    return rows


JSON_LOADER = FileLoader("py-spy --json", looks_like_pyspy_json, load_pyspy_json)


# -- a file of bare py-spy frames (a paste saved without its thread header) ----------------------
def looks_like_bare_stack(path: Path, head: bytes) -> bool:
    """The file's first non-blank lines (two at least, all of the head's) are py-spy frames."""
    lines = [ln.strip() for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()]
    if len(head) >= 4096 and lines:
        lines = lines[:-1]  # the head may cut its last line
    return len(lines) >= 2 and all(BARE_FRAME_RE.match(ln) for ln in lines)


def load_bare_stack(path: Path) -> list[tuple[str, Row]]:
    """One unnamed thread's stack from a file of bare py-spy frames (innermost first)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    frames = [f for f in map(pyspy_frame, (ln.strip() for ln in text.splitlines() if ln.strip()))
              if f is not None]
    if len(frames) < 2:
        raise ValueError("fewer than two py-spy frames")
    host, rank, pid = name_hints(str(path))
    rank = rank if rank is not None else path_origin(str(path)).rank
    return [("stacks", {"host": host, "rank": rank, "pid": pid, "cmd": None, "tid": None,
                        "thread": None, "state": None, "frames": frames, "leaf": frames[0],
                        "source": f"{path}:1", "line": frames[0]})]


BARE_LOADER = FileLoader("py-spy frames", looks_like_bare_stack, load_bare_stack)
PARSERS = (StackParser,)
