"""Write the synthetic multi-node Xid 79 bundle (job.log, dmesg.log) deterministically.

    python data/gpu_crash/xid79_multinode/make.py

A Megatron-DeepSpeed job on 4 nodes x 8 GPUs (32 ranks, launched by ``deepspeed --hostfile``
through pdsh, so every line carries its host as ``node-N: ``). GPU 3 of node-2 (global rank 11,
PCI 0000:3b:00) falls off the bus during iteration 4247; every other rank fails after it. Each
line's wording is copied from the real source that prints it (see README.md); the numbers and
the story are made up.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
HOSTS = ["node-1", "node-2", "node-3", "node-4"]
GPUS = 8
ITER_S = 12.3
SAVE_DIR = "/lustre/ckpt/gpt-13b"
TORCH_LIB = "/usr/local/lib/python3.10/dist-packages/torch/lib"
LOADED_AT = datetime(2024, 5, 13, 23, 47, 12)
LOADED_IT = 3500
SAVE_IT = 4000
SAVE_S = 36.59
LAST_LOGGED = 4240
XID_AT = datetime(2024, 5, 14, 2, 20, 51)
FAILED_HOST, FAILED_LOCAL = "node-2", 3
PIDS = {h: 48200 + 1000 * i for i, h in enumerate(HOSTS)}
PEER_IP = "10.10.1.12"  # node-2's IB address


def ds(t: datetime) -> str:
    """DeepSpeed/Python logging time: [2024-05-14 01:29:42,112]."""
    return f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}]"


def glog(t: datetime, sev: str = "E") -> str:
    """c10 glog header time: E514 02:20:52.481722905."""
    return f"{sev}{t.month}{t:%d %H:%M:%S}.{t.microsecond:06d}{(t.microsecond * 7) % 1000:03d}"


def dmesg_t(t: datetime) -> str:
    return f"[{t:%a %b} {t.day:2d} {t:%H:%M:%S %Y}]"


def iter_time(k: int) -> datetime:
    if k <= SAVE_IT:
        return LOADED_AT + timedelta(seconds=(k - LOADED_IT) * ITER_S)
    return iter_time(SAVE_IT) + timedelta(seconds=SAVE_S + 0.112 + (k - SAVE_IT) * ITER_S)


def iteration_line(k: int) -> str:
    ms = ITER_S * 1000 + ((k * 37) % 60) - 30
    loss = 2.31 - 0.00003 * (k - LOADED_IT) + ((k * 13) % 7) * 0.001
    return (f"node-4:  iteration {k:8d}/  100000 | consumed samples: {k * 512:12d} | consumed "
            f"tokens: {k * 512 * 2048:14d} | elapsed time per iteration (ms): {ms:.1f} | learning "
            f"rate: 1.494E-04 | global batch size:   512 | lm loss: {loss:.6E} | loss scale: 1.0 "
            f"| grad norm: {0.39 + ((k * 7) % 11) * 0.003:.3f} | actual seqlen:  2048 | number of "
            "skipped iterations:   0 | number of nan iterations:   0 | samples per second: "
            f"{512 / (ms / 1000):.3f} | TFLOPs: {151.07 * ITER_S * 1000 / ms:.2f} |")


def frames(watchdog: bool = True) -> list[str]:
    fr = [
        ("c10::Error::Error(c10::SourceLocation, std::string) + 0x96", "0x7f4c560b9446",
         "libc10.so"),
        ("c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&)"
         " + 0x64", "0x7f4c560626e4", "libc10.so"),
        ("c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + "
         "0x118", "0x7f4c56506a18", "libc10_cuda.so"),
        ("c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x56",
         "0x7f4c0c225726", "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0xa0", "0x7f4c0c22a3f0",
         "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::watchdogHandler() + 0x1da", "0x7f4c0c231b5a",
         "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d", "0x7f4c0c23361d",
         "libtorch_cuda.so"),
    ]
    out = [f"frame #{i}: {fn} ({addr} in {TORCH_LIB}/{lib})" for i, (fn, addr, lib)
           in enumerate(fr if watchdog else fr[:3])]
    out += ["frame #7: <unknown function> + 0xdc253 (0x7f4c9f6dc253 in "
            "/lib/x86_64-linux-gnu/libstdc++.so.6)",
            "frame #8: <unknown function> + 0x94ac3 (0x7f4ca1a94ac3 in "
            "/lib/x86_64-linux-gnu/libc.so.6)",
            "frame #9: <unknown function> + 0x126850 (0x7f4ca1b26850 in "
            "/lib/x86_64-linux-gnu/libc.so.6)"]
    return out


CUDA_ADVICE = [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "",
]


def ds_cmd(local: int) -> str:
    return (f"['/usr/bin/python3', '-u', 'pretrain_gpt.py', '--local_rank={local}', "
            "'--tensor-model-parallel-size', '4', '--pipeline-model-parallel-size', '2', "
            "'--num-layers', '40', '--hidden-size', '5120', '--micro-batch-size', '2', "
            f"'--global-batch-size', '512', '--save', '{SAVE_DIR}', '--save-interval', '500', "
            "'--deepspeed', '--deepspeed_config', 'ds_config.json']")


def job_log() -> list[str]:
    L: list[str] = []
    t = LOADED_AT - timedelta(seconds=122)
    world = ", ".join(f"'{h}': [0, 1, 2, 3, 4, 5, 6, 7]" for h in HOSTS)
    for h in HOSTS:
        L.append(f"{h}: {ds(t)} [INFO] [launch.py:145:main] WORLD INFO DICT: {{{world}}}")
        L.append(f"{h}: {ds(t)} [INFO] [launch.py:163:main] dist_world_size=32")
    L.append(f"node-1:   successfully loaded checkpoint from {SAVE_DIR} at iteration {LOADED_IT}")
    for k in range(LOADED_IT + 10, LAST_LOGGED + 1, 10):
        if k == SAVE_IT + 10:
            st = iter_time(SAVE_IT)
            L.append(f"node-1: saving checkpoint at iteration {SAVE_IT:7d} to {SAVE_DIR}")
            L.append(f"node-1: {ds(st + timedelta(seconds=0.112))} [INFO] [logging.py:96:log_dist] "
                     f"[Rank 0] [Torch] Checkpoint global_step{SAVE_IT} is about to be saved!")
            L.append(f"node-1: {ds(st + timedelta(seconds=0.130))} [INFO] [logging.py:96:log_dist] "
                     f"[Rank 0] Saving model checkpoint: {SAVE_DIR}/global_step{SAVE_IT}/"
                     "mp_rank_00_model_states.pt")
            L.append(f"node-1: {ds(st + timedelta(seconds=0.112 + SAVE_S))} [INFO] "
                     "[torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint "
                     f"global_step{SAVE_IT} is ready now!")
            L.append(f"node-1:   successfully saved checkpoint at iteration {SAVE_IT:7d} to "
                     f"{SAVE_DIR}")
        if k > LOADED_IT + 200 and k < SAVE_IT - 40:
            continue  # keep the sample small: the run-up to the save and to the crash
        L.append(f"node-1: {ds(iter_time(k))} [INFO] [logging.py:96:log_dist] [Rank 0] step={k}, "
                 "skipped=0, lr=[0.0001494], mom=[(0.9, 0.95)]")
        L.append(iteration_line(k))

    # --- the failure: rank 11 (node-2, GPU 3) -------------------------------------------------
    t11 = XID_AT + timedelta(seconds=1.481722)
    tag = "[PG 0 (default_pg) Rank 11]"
    msg = f"{tag} Process group watchdog thread terminated with exception: CUDA error: unknown error"
    L.append(f"node-2: [rank11]:[{glog(t11)} ProcessGroupNCCL.cpp:1515] {msg}")
    L += [f"node-2: {a}" for a in CUDA_ADVICE]
    L.append("node-2: Exception raised from c10_cuda_check_implementation at "
             "../c10/cuda/CUDAException.cpp:43 (most recent call first):")
    L += [f"node-2: {f}" for f in frames()]
    L.append("node-2: ")
    L.append("node-2: terminate called after throwing an instance of 'c10::DistBackendError'")
    L.append(f"node-2:   what():  {msg}")
    L += [f"node-2: {a}" for a in CUDA_ADVICE]
    L.append("node-2: Exception raised from c10_cuda_check_implementation at "
             "../c10/cuda/CUDAException.cpp:43 (most recent call first):")
    L += [f"node-2: {f}" for f in frames()]
    tk = t11 + timedelta(seconds=0.54)
    for local in range(GPUS):
        L.append(f"node-2: {ds(tk)} [INFO] [launch.py:315:sigkill_handler] Killing subprocess "
                 f"{PIDS['node-2'] + local}")
    L.append(f"node-2: {ds(tk + timedelta(seconds=0.38))} [ERROR] [launch.py:321:sigkill_handler] "
             f"{ds_cmd(FAILED_LOCAL)} exits with return code = -6")

    # --- nodes 1 and 3: the remote error, right away -------------------------------------------
    for n, host in ((0, "node-1"), (2, "node-3")):
        for local in range(GPUS):
            rank = n * GPUS + local
            tr = XID_AT + timedelta(seconds=2.6 + 0.05 * local + (0.9 if n == 2 else 0))
            L.append(f"{host}: [rank{rank}]:[{glog(tr)} ProcessGroupNCCL.cpp:1515] [PG 0 "
                     f"(default_pg) Rank {rank}] Process group watchdog thread terminated with "
                     "exception: NCCL error: remote process exited or there was a network error, "
                     "NCCL version 2.19.3")
            if local == 0:
                pid = PIDS[host] + local
                L.append(f"{host}: {host}:{pid}:{pid + 190} [{local}] transport/net_ib.cc:1295 "
                         f"NCCL WARN NET/IB : Got completion from peer {PEER_IP}<47426> with "
                         "error 12, opcode 0, len 0, vendor err 129 (Recv)")
                L.append(f"{host}: [rank{rank}]: Traceback (most recent call last):")
                L.append(f"{host}: [rank{rank}]:   File \"pretrain_gpt.py\", line 356, in <module>")
                L.append(f"{host}: [rank{rank}]:     pretrain(train_valid_test_datasets_provider,")
                L.append(f"{host}: [rank{rank}]: torch.distributed.DistBackendError: NCCL error "
                         "in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, remote process "
                         "exited or there was a network error, NCCL version 2.19.3")
                L.append(f"{host}: [rank{rank}]: ncclRemoteError: A call failed possibly due to "
                         "a network error or a remote process exiting prematurely.")
                L.append(f"{host}: [rank{rank}]: Last error:")
                L.append(f"{host}: [rank{rank}]: NET/IB : Got completion from peer {PEER_IP}"
                         "<47426> with error 12, opcode 0, len 0, vendor err 129 (Recv)")
        te = XID_AT + timedelta(seconds=4.2 + (0.9 if n == 2 else 0))
        L.append(f"{host}: {ds(te)} [ERROR] [launch.py:321:sigkill_handler] {ds_cmd(0)} exits "
                 "with return code = -6")

    # --- node-4 (last pipeline stage) waits in its collective until the 10 min timeout ---------
    for local in range(GPUS):
        rank = 3 * GPUS + local
        tt = XID_AT + timedelta(seconds=602.3 + 0.04 * local)
        seq = 184233
        L.append(f"node-4: [rank{rank}]:[{glog(tt)} ProcessGroupNCCL.cpp:632] [PG 0 (default_pg) "
                 f"Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum="
                 f"{seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
                 f"{600000 + 41 + local} milliseconds before timing out.")
        L.append(f"node-4: [rank{rank}]:[{glog(tt + timedelta(seconds=0.002))} "
                 f"ProcessGroupNCCL.cpp:681] [PG 0 (default_pg) Rank {rank}] Some NCCL "
                 "operations have failed or timed out. Due to the asynchronous nature of CUDA "
                 "kernels, subsequent GPU operations might run on corrupted/incomplete data.")
        L.append(f"node-4: [rank{rank}]:[{glog(tt + timedelta(seconds=0.002))} "
                 f"ProcessGroupNCCL.cpp:695] [PG 0 (default_pg) Rank {rank}] To avoid data "
                 "inconsistency, we are taking the entire process down.")
    L.append(f"node-4: {ds(XID_AT + timedelta(seconds=603.1))} [ERROR] "
             f"[launch.py:321:sigkill_handler] {ds_cmd(0)} exits with return code = -6")
    return L


def dmesg_log() -> list[str]:
    boot = datetime(2024, 5, 13, 22, 58, 40)
    L = [f"{h}: {dmesg_t(boot)} mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE" for h in HOSTS]
    x = XID_AT
    L += [
        f"node-2: {dmesg_t(x)} NVRM: GPU at PCI:0000:3b:00: GPU-6a1f1c3e-8f2b-4e1a-9c1a-"
        "0242ac120002",
        f"node-2: {dmesg_t(x)} NVRM: GPU Board Serial Number: 1652223018123",
        f"node-2: {dmesg_t(x)} NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus.",
        f"node-2: {dmesg_t(x)} NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
        f"node-2: {dmesg_t(x)} NVRM: A GPU crash dump has been created. If possible, please run",
        f"node-2: {dmesg_t(x)} NVRM: nvidia-bug-report.sh as root to collect this data before",
        f"node-2: {dmesg_t(x)} NVRM: the NVIDIA kernel module is unloaded.",
        f"node-2: {dmesg_t(x + timedelta(seconds=2))} NVRM: Xid (PCI:0000:3b:00): 154, GPU "
        "recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
    ]
    return L


def main() -> None:
    (HERE / "job.log").write_text("\n".join(job_log()) + "\n")
    (HERE / "dmesg.log").write_text("\n".join(dmesg_log()) + "\n")


if __name__ == "__main__":
    main()
