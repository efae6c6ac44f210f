"""A hang with no timeout: group every process by where its main thread is, name the one(s)
that are somewhere else, and tie that to the flight recorder when dumps are there.

``analyse(incident, thread=…, depth=…)`` gives a ``DeadlockAnalysis`` (the tables and values the
runbook shows), ``report(analysis)`` the ``Report``; ``diagnose`` is the two in one call.
Modules: ``stacks`` (frames, leaves, signatures, processes, ranks from the flight recorder),
``analysis`` (groups, outliers, the flight-recorder view, known traps), ``report`` (the prose).

Rules (documented because the runbook's facts depend on them):

- **Processes.** One per (host, pid); else per rank; else per dump file. DataLoader worker and
  pin-memory processes (``torch/utils/data/_utils/worker.py`` …) are helpers, not ranks: they
  are counted apart. When one process was dumped several times, the last snapshot counts and
  the others say whether it moved; a native-only snapshot (frames, none of them Python's: gdb's
  backtrace after py-spy's dump of the same pid) neither counts over one that has Python frames
  nor says it moved. A py-spy error counts as a process only when the log names
  the process it failed on (``Process N:`` before it, a loop's ``=== PID N ===``, the
  ``py-spy dump --pid N`` command) and nothing else of that process was read; its leaf is
  ``not dumped: <the error>``. Each entry of a condensed per-node listing of leaves is one
  process; a full stack whose innermost frame's function is a listed name takes the place of
  one such entry (it is that process, shown in full), so nothing is counted twice. A Python
  traceback the process printed (Ctrl-C, an atexit hook, a crash) is a sample of its stack
  where no dump was taken; beside ranks' tracebacks, unranked ones are the launcher's and left
  out. When every process seen is a helper (a worker's own dump), they are the processes. Pid 1
  on no named host is every container's first process: each dump of it is another process.
  Ranks a hang report shows without a stack (waiting in the store-based barrier, compared by a
  DETAIL mismatch report, ready in a Horovod stalled op, entering a collective in DETAIL's
  ``Running collective`` log) are processes too, with no leaf; they name no outlier by
  themselves. With no stack and no such report, the processes are the ranks the logs name
  (per-rank files, rank prefixes): the four ``rank<N>.log`` files of a healthy run are four.
- **Thread.** ``MainThread`` by default (``pt_main_thread`` in faulthandler's OS names; a
  process with one unnamed thread uses it); ``thread="*"`` takes every thread except idle
  helpers (pt_autograd, tqdm's monitor, pin_memory, and non-main threads parked in a stdlib
  wait).
- **Leaf.** The innermost *Python* frame that is not in the standard library's generic
  blocking primitives (``threading``, ``queue``, ``selectors``, ``multiprocessing`` queues /
  connections / locks / process joins, ``concurrent.futures``), printed as py-spy prints it,
  ``function (file:line)``. Those primitives say *that* a thread waits, not *for what*; their
  line numbers even change with the Python version (``wait (threading.py:306)`` on 3.8,
  ``Condition.wait (threading.py:327)`` on 3.11). So the BLOOM eval hang's leaf is
  ``_try_get_data (torch/utils/data/dataloader.py:1011)``, not the ``wait``/``get`` under it.
  Native frames (``--native``) are skipped the same way. A stack of native frames only (gdb's
  ``thread apply all bt``) leafs at its innermost frame outside the C library's waits (libc,
  libpthread, the vDSO, glibc's sources) and unknown ``??`` frames: ``ncclGroupEnd
  (libnccl.so.2)``, not the ``pthread_cond_wait`` under it. The ``stacks`` table's own ``leaf``
  column stays the innermost frame as printed. Innermost ``<module> (<string>:1)`` frames
  under others are the code a debugger ran in the process to print its stack (gdb's
  ``PyRun_SimpleString``, pyrasite), not where it waits: skipped. A thread whose Python frames
  are all those primitives (a paste cut below them) says only that it waits: its leaf is that of
  the process's other threads whose innermost frames are the same, line for line (printed
  whole), else of its threads at work (none parked in a stdlib wait); none when two tie.
- **Signature.** The leaf and the Python frames outside it (``depth`` of them; 0 = all): two
  processes share a signature when they wait at the same place reached the same way.
- **Outliers.** A process py-spy could not attach to (EPERM, ``Failed to suspend process``:
  one in uninterruptible sleep, ``D``, cannot be stopped by ptrace) while others could be
  dumped is the outlier, named as such. Else, when some processes wait inside a collective (``torch.distributed`` /
  DeepSpeed comm) and no more of them are outside one, those outside are the outliers: a
  collective only finishes when every rank calls it, so the ranks outside it are the ones
  everyone waits for. Otherwise (all, none or only a few in collectives — NCCL ranks often
  block later, in ``.item()`` or a CUDA sync), the members of the strictly smallest group(s)
  are. When the
  stacks single out no one, a decisive flight-recorder disagreement (ranks missing from a
  collective, or a minority that issued a different one) names them; so does a report of ranks
  that never arrived (fr_trace's missing ranks, a store-based barrier's silent ranks), and,
  with neither, DETAIL's log of the collectives each rank entered (``Running collective:
  CollectiveFingerPrint(SequenceNumber=N, …)``): the ranks whose last one is behind the
  furthest any rank entered.
- **Ranks** come from the logs (prefixes, per-rank files, ``trace-<host>-rank<N>.out``). When a
  dump names no rank and flight-recorder dumps exist, a process whose Python call chain (torch
  frames aside) equals a rank's last recorded collective's stack is that rank; one process and
  one rank left over are matched by elimination. Either is reported as an inference.
"""

from __future__ import annotations

from .analysis import DeadlockAnalysis, analyse
from .report import FACT_KEYS, diagnose, report

NAME = "deadlock"
RUNBOOK = "deadlock.ipynb"  # in traindoc/runbooks/
# the incident tables ``analyse`` reads
TABLES = ("stacks", "collectives", "processes")

__all__ = ["DeadlockAnalysis", "FACT_KEYS", "NAME", "RUNBOOK", "TABLES", "analyse",
           "diagnose", "report"]
