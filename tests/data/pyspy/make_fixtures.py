"""Regenerate the real py-spy and faulthandler dumps in this folder (needs py-spy and ptrace
rights, e.g. root): ``python tests/data/pyspy/make_fixtures.py [path/to/py-spy]``.

The target is a small "trainer" whose MainThread waits on an eval-batch queue that a loader
thread never fills (the shape of the BLOOM eval hang), with a busy helper subprocess so that
``--subprocesses`` shows ``active+gil`` threads and ``Parent Process`` lines.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

TARGET = textwrap.dedent('''
    import faulthandler, queue, signal, subprocess, sys, threading

    SPIN = "def spin():\\n    x = 0\\n    while True:\\n        x += 1\\nspin()\\n"

    def read_eval_shard(batches, never):
        never.wait()
        batches.put(1)

    class Trainer:
        def evaluate(self):
            batches = queue.Queue(maxsize=2)
            never = threading.Event()
            threading.Thread(target=read_eval_shard, args=(batches, never), name="eval-loader",
                             daemon=True).start()
            rank = 1
            print("ready", HELPER.pid, flush=True)
            return batches.get()

    def main():
        global HELPER
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        HELPER = subprocess.Popen([sys.executable, "-c", SPIN])
        Trainer().evaluate()

    if __name__ == "__main__":
        main()
''')


def main() -> None:
    pyspy = sys.argv[1] if len(sys.argv) > 1 else shutil.which("py-spy") or "py-spy"
    work = HERE / "_target"
    work.mkdir(exist_ok=True)
    (work / "trainer.py").write_text(TARGET)
    err = open(HERE / "faulthandler.txt", "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "trainer.py"], cwd=work, stdout=subprocess.PIPE,
                            stderr=err, text=True)
    helper = None
    try:
        assert proc.stdout is not None
        word, helper = proc.stdout.readline().split()
        assert word == "ready"
        time.sleep(1.0)
        pid = str(proc.pid)
        for name, flags in [("plain.txt", []), ("native.txt", ["--native"]),
                            ("locals.txt", ["--locals"]), ("subprocesses.txt", ["--subprocesses"]),
                            ("dump.json", ["--json"])]:
            out = subprocess.run([pyspy, "dump", "--pid", pid, *flags], capture_output=True,
                                 text=True, timeout=60, check=True).stdout
            (HERE / name).write_text(out)
        # py-spy on a process that is not Python: its error output, as srun collects it.
        sleeper = subprocess.Popen(["sleep", "60"])
        res = subprocess.run([pyspy, "dump", "--pid", str(sleeper.pid)], capture_output=True,
                             text=True, timeout=60, check=False)
        sleeper.kill()
        (HERE / "error.txt").write_text(res.stdout + res.stderr)
        os.kill(proc.pid, signal.SIGUSR1)
        time.sleep(0.5)
    finally:
        if helper is not None:
            os.kill(int(helper), signal.SIGKILL)
        proc.kill()
        proc.wait()
        err.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
