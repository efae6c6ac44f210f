"""Error lines into the ``errors`` table, process exits into the ``exits`` table.

Each entry of ``ERROR_PATTERNS`` is (code, kind, needle, regex); the first match wins. The
``message`` column holds the matched phrase (or the regex's ``msg`` group); a ``code`` group,
when the regex has one, replaces the entry's code (a Python exception's class, a signal name).
``kind`` is one of cuda_error, xid (see ``xid.py``), oom, nccl_error, mpi_error, ecc, signal,
python.

Wordings, checked against the sources that print them (and public issues quoting them):

- c10 (torch/csrc, c10/cuda/CUDAException.cpp): ``CUDA error: an illegal memory access was
  encountered`` / ``CUDA error: unknown error``, inside ``terminate called after throwing an
  instance of 'c10::CUDAError'`` + ``  what():  …`` + ``Exception raised from query at
  ../aten/src/ATen/cuda/CUDAEvent.h:95 (most recent call first):`` + ``frame #0: …`` blocks
  (``CudaErrorBlock`` reads these), and torch>=2.2's ``[PG ID 0 PG GUID 0(default_pg) Rank 2]
  Process group watchdog thread terminated with exception: CUDA error: …``; torch <= 1.0's THC
  checks ``cuda runtime error (2) : out of memory at …/THC/THCTensorRandom.cu:25``, ``THCudaCheck
  FAIL file=… line=58 error=2 : out of memory``, ``cublas runtime error : the GPU program failed
  to execute at …/THCBlas.cu:258``.
- C/CUDA trainers' check macros: llm.c's ``[CUDA ERROR] at file train_gpt2.cu:265:`` with the
  error string on the next line (``CheckMacroError``; ``out of memory`` there is an OOM) and its
  ``[cuBLAS ERROR]: 13 llmc/matmul.cuh 216``.
- CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp): ``CUDA out of memory. Tried to
  allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity; 74.33 GiB already allocated; 1.06 GiB
  free; 76.45 GiB reserved in total by PyTorch)`` (<=2.0) and ``… Tried to allocate 1.22 GiB.
  GPU 0 has a total capacity of 15.77 GiB of which 959.44 MiB is free. … Of the allocated
  memory 14.01 GiB is allocated by PyTorch, and 472.05 MiB is reserved by PyTorch but
  unallocated.`` (>=2.1); ``oom_figures`` reads the numbers.
- NCCL through torch (ProcessGroupNCCL / NCCLUtils): ``NCCL error in: …ProcessGroupNCCL.cpp:1275,
  internal error, NCCL version 2.14.3`` / ``unhandled cuda error (run with NCCL_DEBUG=INFO for
  details)`` / ``unhandled system error`` / ``remote process exited or there was a network
  error``, then ``ncclRemoteError: A call failed possibly due to a network error or a remote
  process exiting prematurely.`` (NVIDIA/nccl#1141, #1514, pytorch#81628); NCCL's own
  ``host:pid:tid [dev] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer
  10.0.0.2<47426> with error 12, opcode 0, len 0, vendor err 129`` and ``NCCL WARN Cuda failure
  'unknown error'``.
- XLA and TF (JAX, TF/Keras, pytorch/xla): the device allocator's ``RESOURCE_EXHAUSTED: Out of
  memory while trying to allocate 6291456 bytes.`` / ``… Failed to allocate request for 2.99GiB
  (3206250496B) on device ordinal 0`` and TF's ``OOM when allocating tensor with shape[…] … on
  …/device:GPU:0``; the CUDA driver's error names (``CUDA_ERROR_ILLEGAL_ADDRESS: an illegal
  memory access was encountered``), only those that break the context.
- gloo (third_party/gloo/gloo/transport/tcp/pair.cc): ``Connection reset by peer``,
  ``Connection closed by peer [127.0.0.1]:55461``.
- ECC: ``CUDA error: uncorrectable ECC error encountered``; ``nvidia-smi -q``'s ``Remapping
  Failure Occurred : Yes`` / ``Pending Page Blacklist : Yes``; dcgmi diag's ``GPU 3 has
  uncorrectable memory errors and row remappings are pending`` (stas00/ml-engineering,
  compute/accelerator/nvidia/debug.md; dcgmi wraps the sentence inside its table, so only its
  first part is matched).
- Host OOM: slurmstepd's ``Job 7518 exceeded memory limit (626359956 > 512000000), being
  killed`` (its ``*** JOB 7518 ON HOST CANCELLED ***`` line names the host); the kernel's ``Out of memory: Killed process 12345 (python)`` / ``Memory cgroup out
  of memory: Killed process …``; ``slurmstepd: error: Detected 1 oom_kill event in
  StepId=11300781.0. Some of the step tasks have been OOM Killed.`` and ``srun: error:
  sdumont6156: task 0: Out Of Memory`` (nextflow#5932); Ray's ``OutOfMemoryError`` and its
  raylet's ``13 Workers (tasks / actors) killed due to memory pressure (OOM), … at node (ID: …,
  IP: 10.0.10.135)`` (before Ray 2.2: ``System memory low at node with IP …``).
- Launchers and schedulers: torchrun ``failed (exitcode: -9) local_rank: 1 (pid: 4914) of
  binary: …`` and ``Sending process 4913 closing signal SIGTERM`` (or ``Closing process 4913
  via signal SIGTERM``) and ``Received Signals.SIGTERM death signal, shutting down workers``
  (2.4+: ``Received 15 death signal, …``) (torch/distributed/elastic); torch.multiprocessing's
  ``process 0 terminated with exit code 1`` (an exit of the spawned rank); DeepSpeed's
  ``[launch.py:184:sigkill_handler] ['python3', …, '--local_rank=3', …] exits with return code =
  -6`` and ``Killing subprocess 48213``; srun's ``srun: error: taurusi2031: tasks 10-11: Exited
  with exit code 1`` / ``task 3: Killed`` (picongpu#198); ``slurmstepd: error: *** STEP 1234.0
  ON node-1 CANCELLED AT 2024-05-14T03:22:41 ***``; a job script's ``line 42: 12345 Killed
  python train.py``; Ray's ``ActorDiedError: The actor died unexpectedly before finishing this
  task.`` and ``Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits
  with a connection error code 2.`` (verl#472); ``Fatal Python error: Segmentation fault``;
  torch's DataLoader: ``DataLoader worker (pid 624) is killed by signal: Segmentation fault.``
  and ``Unexpected bus error encountered in worker. This might be caused by insufficient
  shared memory (shm).``; Hydra's ``Set the environment variable HYDRA_FULL_ERROR=1 for a
  complete stack trace.`` (run_and_report then exits 1: an ``exits`` row, code 1).
- A kernel line under its syslog/journald header (``Sep  9 17:10:44 centos kernel: Out of
  memory: Kill process …``) takes the header's host.
- SLURM's lost node: ``srun: error: Node failure on jean-zay-iam49`` (GoogleCloudPlatform/
  cluster-toolkit#1600); ``*** STEP 1943824.0 ON jean-zay-iam17 CANCELLED AT … DUE TO NODE
  FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***`` names only the node that reports it; ``… DUE TO
  TIME LIMIT ***`` (desihub/desitarget#628) is a job ended on purpose, not a crash.
- Containers and Kubernetes: an exit status above 128 is death by signal 128+N (``Exit code:
  137``, ``Job exited with error code 137`` IBM/FfDL#127, ``Process 0 exit with status code
  137.`` horovod#2829, ``Exit Code: 137`` kubernetes#122256); ``Reason: OOMKilled``
  (hmcts/cnp-flux-config#28772) and ``The node was low on resource: memory.`` (kubeflow#1261);
  an eviction for another resource (``… low on resource: ephemeral-storage.``,
  kubernetes#91600) is the pod stopped by the kubelet (kind ``signal``).
- Paddle's launchers: the old one (``launch_utils.watch_local_trainers``) ``ABORT!!! Out of
  all 4 trainers, the trainer process with rank=[3] was aborted. Please check its log.``
  (global ranks, one or more; Paddle#33074, Paddle#29172); the new one (paddle.distributed.
  launch ≥ 2.3) ``Container rank 6 status failed cmd ['/usr/bin/python', '-u', 'train.py']
  code 1 log log/default.fxemxd.6.log`` after ``Container failed !!!`` (the rank on its node:
  PADDLE_LOCAL_RANK 6 beside PADDLE_GLOBAL_RANK 8 in Paddle's launch docs).
- torchrun's escalation 30 s after its SIGTERM: ``Unable to shutdown process 188 via
  Signals.SIGTERM, forcefully exiting via Signals.SIGKILL`` (torch 1.10: ``Unable to shutdown
  processes via 15, forcefully exitting via 9``, pytorch#61602).
"""

from __future__ import annotations

import re
from typing import Any

from .base import LineParser, Row, to_float
from .collectives import RANK_TAG_RE
from .torchrun import signal_name
from .xid import SYSLOG_HOST_RE

# Trailing advice torch appends to a CUDA error message (kept out of ``message``).
_CUDA_TAIL = r"(?=\s*(?:CUDA kernel errors might|For debugging consider|Compile with|Exception raised from|\(most recent|$))"

# What a framework puts before NCCL's own words, in any case: torch's "NCCL error in:
# …ProcessGroupNCCL.cpp:1275, ", Paddle 2.0's "Nccl error, " and 2.2+'s "NCCL error(1), "
# (PaddlePaddle/PaddleDetection#4139, PaddleSpeech#3171), "NCCL Error 1: " (std::runtime_error
# of a C++ extension, TheAtticusProject/cuad#9).
# XLA's abort of a communicator on NCCL's asynchronous error (xla/service/gpu/nccl_utils.cc,
# nccl_api.cc: "Aborting communicator: 0x5555a108ff90 due to async NCCL error: remote process
# exited …", NVIDIA/JAX-Toolbox#194) and CuPy's NcclError, NCCL's error name first
# ("cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_REMOTE_ERROR: remote process exited …",
# JAX-Toolbox's jax-vllm logs; "… NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda error",
# vllm-project/vllm#3222's kin) keep those words in the message, as XLA's "NCCL operation
# ncclCommInitRank(&comm, nranks, id, rank) failed: unhandled system error" (jax-ml/jax#22747)
# keeps the call that failed.
_NCCL_ERROR = (r"(?:(?:Aborting communicator: \S+ due to )?(?:async )?(?i:nccl error)\S*:?\s*"
               r"(?:\d+:\s*)?(?:[^,]*\.(?:cpp|hpp|cc):\d+,\s*)?|NCCL_ERROR_[A-Z_]+: "
               r"|NCCL operation nccl\w++\([^()]{0,200}+\) failed: )")

# XLA's device allocator (JAX, TF's XLA, torch_xla): "Out of memory while trying to allocate
# 7406166528 bytes." (google-deepmind/alphafold#1023), "Out of memory allocating 20029400304
# bytes." (onpix/LLNeRF#9), "Failed to allocate request for 2.99GiB (3206250496B) on device
# ordinal 0", and on a TPU "Attempting to reserve 6.48G at the bottom of memory." (pytorch/xla#3470)
_XLA_OOM = (r"(?:Out of memory (?:while trying to allocate|allocating) \d+ bytes|Failed to "
            r"allocate request for [\d.]+\s?[KMGT]?i?B(?: \(\d+B\))? on device ordinal \d+|"
            r"Attempting to reserve \S+ at the bottom of memory|"
            # XLA:TPU's runtime allocator and its compiler (HBM, or the core's vmem/smem/sflag):
            # "Error allocating device buffer: Attempting to allocate 104.00M. That was not
            # possible. There are 15.31M free.; (0x0x0_HBM0)", "XLA:TPU compile permanent
            # error. Ran out of memory in memory space hbm. Used 21.90G of 7.48G hbm."
            # (erfanzar/EasyDeL#78)
            r"Error allocating device buffer: Attempting to allocate [\d.]+[KMGT]?i?B?\."
            r"(?: That was not possible\. There are [\d.]+[KMGT]?i?B? free)?|"
            r"(?:XLA:TPU compile permanent error\. )?Ran out of memory in memory space \w+"
            r"(?:\. Used [\d.]+[KMGT]?i?B? of [\d.]+[KMGT]?i?B? \w+)?)")

# The launchers' grammar of a rank's death: one line that names the rank (or the process), the
# machine it ran on and the signal that killed it, as each MPI launcher words it. Named groups:
# ``rank``, ``host``, ``pid``, the signal as a number (``signum``) or in words (``what``).
# Entries in ``ERROR_PATTERNS``' shape; a new launcher is a row here, not a regex elsewhere.
LAUNCHER_DEATHS: tuple[tuple[str, str, str, re.Pattern[str]], ...] = (
    (  # Open MPI: "mpirun noticed that process rank 286 with PID 17969 on node ichost094 exited
        # on signal 11 (Segmentation fault)."; mpiexec's the same; PID and node redacted in a
        # paste ("with PID xxxxxx on node xxxxxxxx", Kay1794/Aware-of-the-history#2)
        "fatal_signal",
        "signal",
        "exited on signal",
        re.compile(r"(?P<msg>(?:mpirun|mpiexec) noticed that process rank (?P<rank>\d+) with PID "
                   r"(?P<pid>\d+|[xX*#]+) on node (?P<host>[\w.\-*#]+) exited on\s+signal \d+ "
                   r"\((?P<what>[^)]+)\))"),
    ),
    (  # HPE Cray PALS (PBS's mpiexec on Aurora, Polaris, Sunspot): "x3102c0s25b1n0.hsn.cm.polaris.
        # alcf.anl.gov: rank 96 died from signal 11 and dumped core", "…: rank 99 died from signal
        # 15" (E3SM-Project/E3SM#6985), "x4213c4s7b0n0.hsn.cm.aurora.alcf.anl.gov: rank 27421 died
        # from signal 6" (pmodels/mpich#7605), "x1922c6s0b0n0-hsn0: rank 4 died from signal 11 and
        # dumped core" (saforem2/torchtitan, the Sunspot reduce_scatter segfault); the host
        # prefix may be missing in a paste
        "fatal_signal",
        "signal",
        " died from signal ",
        re.compile(r"(?:^|\s)(?:(?P<host>[A-Za-z0-9][\w.\-]*): )?(?P<msg>rank (?P<rank>\d+) died "
                   r"from signal (?P<signum>\d+)(?: and dumped core)?)"),
    ),
    (  # MPICH's hydra and Intel MPI: the "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"
        # frame's lines, joined by ``HydraTermination``: "… RANK 6 PID 2447372 RUNNING AT node0009,
        # KILLED BY SIGNAL: 9 (Killed)" (bsc-performance-tools/extrae#101); "… PID 9665 RUNNING AT
        # NeuroRTX6000, EXIT CODE: 9 … EXIT STRING: Killed (signal 9)" (openai/jukebox#155)
        "fatal_signal",
        "signal",
        "BAD TERMINATION OF ONE OF YOUR",
        re.compile(r"(?P<msg>BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES: (?:RANK "
                   r"(?P<rank>\d+) )?PID (?P<pid>\d+) RUNNING AT (?P<host>[A-Za-z0-9][\w.\-]*)"
                   r"(?:, [^\n]*?)?(?:KILLED BY SIGNAL: (?P<signum>\d+)|\(signal (?P<signum2>\d+)\)|EXIT "
                   r"CODE: (?P<exit>1(?:29|[3-8]\d|9[0-2]))\b)[^\n]*)"),
    ),
)

# a class of a package's module of exceptions, whatever its name ends with:
# "torch._dynamo.exc.FailOnRecompileLimitHit: recompile_limit reached with fullgraph=True"
# (itssshikhar/parameter-golf), "torch._dynamo.exc.Unsupported: …",
# "torch._dynamo.exc.BackendCompilerFailed: …", "jax.errors.TracerBoolConversion…",
# "omegaconf.errors.MissingMandatoryValue: …"
EXCEPTIONS_MODULE_RE = re.compile(
    r"^\s*(?P<msg>(?P<code>(?:[A-Za-z_]\w*\.)+(?:exc|exceptions|errors)\.[A-Z]\w*): \S.*)$")

# the code of Python's "Exception ignored in …" header: the traceback under it is one the
# interpreter printed and went on from (context, never a failure: ``gpu_crash.events``)
EXCEPTION_IGNORED_CODE = "exception_ignored"

ERROR_PATTERNS: tuple[tuple[str, str, str, re.Pattern[str]], ...] = (
    (  # the line after torch's "Last error:" under ncclUnhandledCudaError: the CUDA error NCCL
        # hit ("Cuda failure 2 'out of memory'", "Cuda failure 'initialization error'")
        "nccl_last_error",
        "nccl_error",
        "Cuda failure ",
        re.compile(r"^\s*(?P<msg>Cuda failure (?:\d+ )?'[^']+')\s*$"),
    ),
    # --- local causes first: a CUDA failure wins over the NCCL/teardown wording around it -------
    (
        "cuda_ecc_uncorrectable",
        "ecc",
        "uncorrectable ECC error encountered",
        re.compile(r"(?P<msg>(?:CUDA error: )?uncorrectable ECC error encountered)"),
    ),
    (
        "cuda_oom",
        "oom",
        "CUDA out of memory",
        re.compile(r"(?P<msg>CUDA out of memory\..*?)(?=\s*(?:If reserved|See documentation|$))"),
    ),
    (  # an OOM the code catches and works around by moving the work to the CPU: Ultralytics'
        # "WARNING ⚠️ CUDA OutOfMemoryError in TaskAlignedAssigner, using CPU" (ultralytics/
        # utils/tal.py; QiuLiXiang/YOLO-DA26 train_det.log), detectron2's retry_if_cuda_oom
        # "Attempting to copy inputs of <function paste_masks_in_image at 0x…> to CPU due to
        # CUDA OOM" (detectron2/utils/memory.py). The run goes on: a failure only where nothing
        # progressed after it (``diagnose.gpu_crash.events``)
        "oom_fallback",
        "oom",
        "OutOfMemoryError in ",
        re.compile(r"(?P<msg>CUDA OutOfMemoryError in \w+, using CPU)"),
    ),
    (
        "oom_fallback",
        "oom",
        "due to CUDA OOM",
        re.compile(r"(?P<msg>Attempting to copy inputs (?:of .{1,200}? )?to CPU due to CUDA OOM)"),
    ),
    (
        "cuda_oom",
        "oom",
        "CUDA error:",  # also without its space: "RuntimeError: CUDA error:out of memory"
        re.compile(r"(?P<msg>CUDA error: ?out of memory)"),  # (bluer555/CR-GAN#8)
    ),
    (  # vLLM's sleep-mode allocator (csrc/cumem_allocator.cpp, its CUDA_CHECK): "CUDA Error:
        # out of memory at /workspace/csrc/cumem_allocator.cpp:62", a vLLM engine's wake_up
        # under OpenRLHF (TideDra/lmm-r1#43)
        "cuda_oom",
        "oom",
        "CUDA Error: out of memory",
        re.compile(r"(?P<msg>CUDA Error: out of memory(?: at \S+)?)"),
    ),
    (  # XLA's device allocator (JAX, TF's XLA, pytorch/xla), in the XlaRuntimeError or the
        # replica's log line: "RESOURCE_EXHAUSTED: Out of memory while trying to allocate
        # 6291456 bytes." (jax-ml/jax#13428), "RESOURCE_EXHAUSTED: Failed to allocate request
        # for 2.99GiB (3206250496B) on device ordinal 0" (ecmwf-lab/ai-models-graphcast#18);
        # before the status codes were upper case "Resource exhausted: Failed to allocate request
        # for 32.00MiB (33554432B) on device ordinal 0" (kingoflolz/mesh-transformer-jax#66)
        "xla_oom",
        "oom",
        "RESOURCE_EXHAUSTED: ",
        re.compile(r"(?P<msg>RESOURCE_EXHAUSTED: " + _XLA_OOM + ")"),
    ),
    (
        "xla_oom",
        "oom",
        "Resource exhausted: ",
        re.compile(r"(?P<msg>Resource exhausted: " + _XLA_OOM + ")"),
    ),
    (  # Paddle's allocator (memory/allocation/cuda_allocator.cc), under "ResourceExhaustedError: "
        # or on its own line below it: "Out of memory error on GPU 0. Cannot allocate 732.427734MB
        # memory on GPU 0, 14.383789GB memory has been allocated and available memory is only
        # 200.562500MB." (Paddle 2.x); 1.x: "… Cannot allocate 1.000000GB memory on GPU 0,
        # available memory is only 500.000000MB."; the same on XPU and custom devices
        "paddle_oom",
        "oom",
        "Out of memory error on ",
        re.compile(r"(?P<msg>Out of memory error on [A-Za-z_]+ ?\d+\.(?: Cannot allocate .*?"
                   r"[KMGT]?B\.(?=\s|$))?)"),
    ),
    (  # ROCm's build of torch's allocator says HIP for CUDA, the rest the same: "torch.
        # OutOfMemoryError: HIP out of memory. Tried to allocate 124.00 MiB. GPU 0 has a total
        # capacity of 19.94 GiB of which 554.47 MiB is free. …" (huggingface/autotrain-advanced#737)
        "cuda_oom",
        "oom",
        "HIP out of memory",
        re.compile(r"(?P<msg>HIP out of memory\..*?)(?=\s*(?:If reserved|See documentation|$))"),
    ),
    (  # Intel XPU's build of the allocator, torch 2.5+ (pytorch/pytorch c10/xpu/
        # XPUCachingAllocator.cpp): "XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has a
        # total capacity of …"; IPEX's older one: "XPU out of memory. Tried to allocate 2.00 GiB
        # (GPU 0; 15.91 GiB total capacity; …)" (intel/intel-extension-for-pytorch)
        "cuda_oom",
        "oom",
        "XPU out of memory",
        re.compile(r"(?P<msg>XPU out of memory\..*?)(?=\s*(?:If reserved|See documentation|$))"),
    ),
    (  # Level Zero / Unified Runtime under torch-xpu and SYCL, when the allocator itself did not
        # catch it: "RuntimeError: Native API failed. Native API returns: 39
        # (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)" (open-edge-platform/geti_v2#1075), "level_zero
        # backend failed with error: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)" (open-edge-platform/
        # physical-ai-studio#440); Level Zero's own ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
        "xpu_oom",
        "oom",
        "_ERROR_OUT_OF_DEVICE_MEMORY",
        re.compile(r"(?P<msg>(?:(?:Native API failed\. Native API returns|level_zero backend failed "
                   r"with error): ?\d+ \()?(?:UR|ZE|PI)_RESULT_ERROR_OUT_OF_DEVICE_MEMORY\)?)"),
    ),
    (  # TensorFlow's allocator: "ResourceExhaustedError: OOM when allocating tensor with
        # shape[25088,4096] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by
        # allocator GPU_0_bfc" (dBeker/Faster-RCNN-TensorFlow-Python3#110), its op_kernel warning
        # "… Resource exhausted: OOM when allocating tensor with shape[8,509,3072] …" (Ma-Dan/
        # XLNet-ChineseNER#4), TF 1.x "OOM when allocating tensor of shape [4096] and type float"
        "tf_oom",
        "oom",
        "OOM when allocating tensor",
        # (a CPU's is host memory: read as the Python error it is; Keras's fit: "… on
        # /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc")
        re.compile(r"(?P<msg>OOM when allocating tensor(?!.*device:CPU)(?: (?:with|of) shape ?"
                   r"\[[\d,\s]*\])?(?: and type \w+(?: on \S+(?: by allocator \w+)?)?)?)"),
    ),
    (  # a C++ trainer's own check (Marian: "Error: CUDA error 2 'out of memory' - …/device.cu:38:
        # cudaMalloc(&data_, size)", marian-nmt/marian-dev#439): cudaErrorMemoryAllocation is 2
        "cuda_oom",
        "oom",
        "CUDA error 2 'out of memory'",
        re.compile(r"(?P<msg>CUDA error 2 'out of memory')"),
    ),
    (
        "nccl_unhandled_cuda",
        "nccl_error",
        "unhandled cuda error",
        re.compile(r"(?P<msg>(?:" + _NCCL_ERROR + r")?"
                   r"unhandled cuda error.*)"),
    ),
    (
        "nccl_unhandled_cuda",
        "nccl_error",
        "ncclUnhandledCudaError",
        re.compile(r"(?P<msg>ncclUnhandledCudaError:.*)"),
    ),
    (
        "nccl_warn_cuda",
        "nccl_error",
        "NCCL WARN",
        re.compile(r"NCCL WARN (?P<msg>.*?Cuda failure.*)"),
    ),
    (  # torch <= 1.0's THC check: "RuntimeError: cuda runtime error (2) : out of memory at
        # /pytorch/aten/src/THC/THCTensorRandom.cu:25" (rowanz/neural-motifs#58) and the warning
        # printed before it, "THCudaCheck FAIL file=/pytorch/torch/lib/THC/generic/THCStorage.cu
        # line=58 error=2 : out of memory" (jiesutd/NCRFpp#121): error 2 is cudaErrorMemoryAllocation.
        # The warning's message is the CUDA error's words alone: the same failure as the
        # RuntimeError (or c10's "CUDA error: …") printed after it
        "thc_oom",
        "oom",
        "out of memory",
        re.compile(r"(?P<msg>cuda runtime error ?\(2\) ?:\s*out of memory)"),
    ),
    (
        "thc_oom",
        "oom",
        "out of memory",
        re.compile(r"THCudaCheck FAIL file=\S+ line=\d+ error=2 :\s*(?P<msg>out of memory)"),
    ),
    (
        "cuda_error",
        "cuda_error",
        "CUDA error: ",
        re.compile(r"(?P<msg>CUDA error: .*?)" + _CUDA_TAIL),
    ),
    (  # a GPU thread's failed assertion, printed by the kernel itself (one line per thread)
        # before torch raises "CUDA error: device-side assert triggered": ATen's "…/IndexKernel.
        # cu:93: operator(): block: [6,0,0], thread: [0,0,0] Assertion `-sizes[i] <= index &&
        # index < sizes[i] && "index out of bounds"` failed." (ecmwf/WeatherGenerator#255), THC's
        # with the kernel's signature or name, or none ("…/ClassNLLCriterion.cu:108: block: …",
        # hszhao/semseg#29, open-mmlab/mmdetection#5100, thu-coai/CDial-GPT#113), Triton's
        # device_assert from a .py kernel. The message is the assertion: what the kernel checked
        "cuda_kernel_assert",
        "cuda_error",
        "Assertion ",
        re.compile(r"\.(?:cu|cuh|hip|py|cpp):\d+: (?:.*: )?block: \[\d+, ?\d+, ?\d+\],? "
                   r"thread: \[\d+, ?\d+, ?\d+\],? (?P<msg>Assertion .{1,300}? failed\.?)"),
    ),
    (  # Paddle's PADDLE_ENFORCE inside a CUDA kernel, one line per failing thread ("Error: %s:%d
        # Assertion `%s` failed. %s"): "Error: /paddle/paddle/phi/kernels/funcs/gather.cu.h:68
        # Assertion `index_value >= 0 && index_value < input_dims[j]` failed. The index is out of
        # bounds, …" (OrionZJ/Fabric-Defect-Detection's RT-DETR workerlog.0, then CUDA error 719)
        "cuda_kernel_assert",
        "cuda_error",
        "Assertion ",
        re.compile(r"\bError: (?P<msg>\S+\.(?:cu|cuh|cu\.h|h):\d+ Assertion `.{1,300}?` failed\."
                   r"(?: [^.]{1,200}\.)?)"),
    ),
    (  # torch's cuDNN and cuBLAS checks without "CUDA error: " before them: "RuntimeError: cuDNN
        # error: CUDNN_STATUS_EXECUTION_FAILED" (GeneZC/ASGCN#19), torch <= 1.0 "RuntimeError:
        # CUDNN_STATUS_EXECUTION_FAILED" (tbepler/protein-sequence-embedding-iclr2019#6), torch
        # 1.5-1.7 "RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle,
        # …)`" (jadore801120/attention-is-all-you-need-pytorch#193 quotes the later form), and
        # TensorFlow's "E tensorflow/stream_executor/cuda/cuda_blas.cc:428] failed to run cuBLAS
        # routine: CUBLAS_STATUS_EXECUTION_FAILED" (google-research/electra#136; TF 1.x "routine
        # cublasSgemm_v2: …", kimiyoung/transformer-xl#139) and "E tensorflow/stream_executor/cuda/
        # cuda_dnn.cc:81] CUDNN_STATUS_EXECUTION_FAILED" (Li-Chongyi/Ucolor#9); where the
        # status starts the error only (torch 2.x's cuDNN v8 warning "… cudnn_status:
        # CUDNN_STATUS_NOT_SUPPORTED (Triggered internally at …)" is a plan it skipped)
        "cudnn_error",
        "cuda_error",
        "CUDNN_STATUS_",
        re.compile(r"(?:^\s*|Error: |\.cc:\d+\] )(?P<msg>(?:cuDNN error: )?CUDNN_STATUS_(?!SUCCESS)"
                   r"[A-Z_]+.*?)" + _CUDA_TAIL),
    ),
    (
        "cublas_error",
        "cuda_error",
        "CUBLAS_STATUS_",
        re.compile(r"(?:^\s*|Error: |(?=failed to run cuBLAS routine))(?P<msg>(?:failed to run "
                   r"cuBLAS routine(?: \w+)?: )?CUBLAS_STATUS_(?!SUCCESS)[A-Z_]+(?: when calling .*?)?)"
                   + _CUDA_TAIL),
    ),
    (  # the same THC check with any other code: "RuntimeError: cuda runtime error (59) :
        # device-side assert triggered at /pytorch/aten/src/THC/generic/THCTensorMath.cu:26"
        # (pytorch/pytorch#1204) and its THCBlas twin, "cublas runtime error : the GPU program
        # failed to execute at /pytorch/aten/src/THC/THCBlas.cu:258" (pytorch/pytorch#24018)
        "thc_error",
        "cuda_error",
        "untime error",
        re.compile(r"(?P<msg>(?:cuda runtime error ?\(\d{1,4}\)|cublas runtime error) ?: ?.*?)"
                   r"(?= at \S+:\d+|\s*$)"),
    ),
    (  # the warning THC printed before raising it: "THCudaCheck FAIL file=/pytorch/aten/src/THC/
        # THCCachingHostAllocator.cpp line=278 error=77 : an illegal memory access was encountered"
        # (facebookresearch/detectron2#1439, before c10's "what():  CUDA error: an illegal memory
        # access was encountered"): the message is the error's words, as for the OOM above
        "thc_error",
        "cuda_error",
        " error=",
        re.compile(r"THCudaCheck FAIL file=\S+ line=\d+ error=\d{1,4} :\s*(?P<msg>\S.*?)\s*$"),
    ),
    (  # llm.c's cublasCheck (and the many copies of its cuda utils): "[cuBLAS ERROR]: 13
        # llmc/matmul.cuh 216": the cublasStatus_t (13 CUBLAS_STATUS_EXECUTION_FAILED), file, line
        # (HectorFCardenas/llm.c gpt2_train.11679004.log; karpathy/llm.c dev/cuda/common.h)
        "cublas_check",
        "cuda_error",
        "BLAS ERROR]: ",
        re.compile(r"(?P<msg>\[(?:cuBLAS|CUBLAS|cuBLASLt) ERROR\]: \d{1,4} \S+ \d+)"),
    ),
    (  # the same check with any other code: "CUDA error 999 'unknown error' - …/algorithm.cu:54:
        # cudaStreamSynchronize(0)" (mozilla/translations#1002's Marian)
        "cuda_error",
        "cuda_error",
        "CUDA error ",
        re.compile(r"(?P<msg>CUDA error \d{1,4} '[^'\n]{1,200}')"),
    ),
    (
        "cuda_error",
        "cuda_error",
        "Error [CUDA]: ",
        re.compile(r"(?P<msg>\w+ Error \[CUDA\]: .*?)" + _CUDA_TAIL),
    ),
    (
        "cuda_driver_error",
        "cuda_error",
        "CUDA driver error",
        re.compile(r"(?P<msg>CUDA driver error: .*?)" + _CUDA_TAIL),
    ),
    (  # the CUDA driver API's error names, as XLA's and TF's stream executors print them (JAX,
        # TF, pytorch/xla): "failed to unload module 0x5215a9a0; leaking:
        # CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
        # (openxla/xla#15945), "Program hit CUDA_ERROR_ILLEGAL_ADDRESS (error 700) due to "an
        # illegal memory access was encountered" on CUDA API call to cuMemcpyDtoHAsync_v2"
        # (jax-ml/jax#3017); the out-of-memory and ECC names are those kinds. Only the errors
        # that break the context (700, 702, 710, 714-720) are a crash: TF prints "failed call to
        # cuInit: CUDA_ERROR_NO_DEVICE: …" at every start on a machine without a GPU
        "cuda_oom",
        "oom",
        "CUDA_ERROR_OUT_OF_MEMORY",
        re.compile(r"(?P<msg>CUDA_ERROR_OUT_OF_MEMORY(?: \(error \d+\))?(?::| due to) \"?out of "
                   r"memory)"),
    ),
    (
        "cuda_ecc_uncorrectable",
        "ecc",
        "CUDA_ERROR_ECC_UNCORRECTABLE",
        re.compile(r"(?P<msg>CUDA_ERROR_ECC_UNCORRECTABLE(?: \(error \d+\))?(?::| due to) "
                   r"\"?uncorrectable ECC error encountered)"),
    ),
    (
        "cuda_error",
        "cuda_error",
        "CUDA_ERROR_",
        re.compile(r"(?P<msg>CUDA_ERROR_(?:ILLEGAL_ADDRESS|LAUNCH_TIMEOUT|ASSERT|HARDWARE_STACK_ERROR|"
                   r"ILLEGAL_INSTRUCTION|MISALIGNED_ADDRESS|INVALID_ADDRESS_SPACE|INVALID_PC|"
                   r"LAUNCH_FAILED|NVLINK_UNCORRECTABLE)(?: \(error \d+\))?(?::| due to) \"?"
                   r"[a-z][^.\"\n]{2,200})"),
    ),
    # --- NCCL failures that usually mean a peer (or the network) went away -------------------
    (
        "nccl_remote",
        "nccl_error",
        "remote process exited or there was a network error",
        re.compile(r"(?P<msg>(?:" + _NCCL_ERROR + r")?"
                   r"remote process exited or there was a network error.*)"),
    ),
    (
        "nccl_remote",
        "nccl_error",
        "ncclRemoteError",
        re.compile(r"(?P<msg>ncclRemoteError:.*)"),
    ),
    (
        "nccl_system",
        "nccl_error",
        "unhandled system error",
        re.compile(r"(?P<msg>(?:" + _NCCL_ERROR + r")?"
                   r"unhandled system error.*)"),
    ),
    (
        "nccl_system",
        "nccl_error",
        "ncclSystemError",
        re.compile(r"(?P<msg>ncclSystemError:.*)"),
    ),
    (
        "nccl_internal",
        "nccl_error",
        "internal error",
        re.compile(r"(?P<msg>" + _NCCL_ERROR + r"internal error.*)"),
    ),
    (
        "nccl_internal",
        "nccl_error",
        "ncclInternalError",
        re.compile(r"(?P<msg>ncclInternalError:.*)"),
    ),
    (
        "nccl_invalid_usage",
        "nccl_error",
        "ncclInvalidUsage",
        re.compile(r"(?P<msg>ncclInvalidUsage:.*)"),
    ),
    (  # a system call NCCL made on its own host failed: /dev/shm full or not writable, a port
        # taken, a file missing (a local setup fault, not a peer's: pytorch/pytorch#37004,
        # NVIDIA/nccl#293, #290, #1882). The RAS client's bind (ras/client_support.cc, NCCL
        # >= 2.24) is not one: RAS retries another port and the job goes on.
        "nccl_warn_system",
        "nccl_error",
        "NCCL WARN",
        re.compile(r"^(?!.*\bras/)(?:.*?)NCCL WARN (?P<msg>.*?(?:Call to (?:shm_open|shm_unlink|"
                   r"bind|open|mmap|ftruncate|posix_fallocate) failed|Error while (?:creating|"
                   r"attaching to) shared memory|failed to extend /dev/shm|Address already in use|"
                   r"Permission denied|No space left on device).*)"),
    ),
    (
        "nccl_warn_net",
        "nccl_error",
        "NCCL WARN",
        re.compile(r"NCCL WARN (?P<msg>.*?(?:NET/|Net :|Connection closed|Call to recv|Call to "
                   r"send|Broken pipe|Connection reset|socket|Socket).*)"),
    ),
    (
        "nccl_warn",
        "nccl_error",
        "NCCL WARN",
        re.compile(r"NCCL WARN (?P<msg>.*)"),
    ),
    # --- MPI and its transport (UCX): an MPI call failed on the process that prints it --------
    (  # UCX's own log line, under Open MPI, MPICH, UCC or NCCL's UCX plugin: "[1580511823.093560]
        # [cgpu17:53890:1]          ib_md.c:478  UCX  ERROR ibv_reg_mr(address=0x2aab4bc00000,
        # length=131072, access=0xf) failed: Bad address" (sparticlesteve/pytorch-cuda-mpi-error
        # slurm-422332.out), "[node6116:69399:0] sock.c:116  UCX  ERROR connect(fd=34, …) failed:
        # Connection timed out" (open-mpi/ompi#8003); pasted with one space (openucx/ucx#9908).
        # One the run went on after is no failure (``diagnose.gpu_crash.events``)
        "ucx_error",
        "mpi_error",
        "UCX  ERROR",
        re.compile(r"(?:\[(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+)(?::\d+)?\]\s+(?:\S+:\d+\s+)?)?"
                   r"UCX\s+ERROR\s+(?P<msg>\S.{0,300}?)\s*$"),
    ),
    (
        "ucx_error",
        "mpi_error",
        "UCX ERROR",
        re.compile(r"(?:\[(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+)(?::\d+)?\]\s+(?:\S+:\d+\s+)?)?"
                   r"UCX\s+ERROR\s+(?P<msg>\S.{0,300}?)\s*$"),
    ),
    (  # Open MPI's UCX components: "[cgpu17:53890] pml_ucx.c:775  Error: ucx send failed:
        # Input/output error" (slurm-422332.out above), "[node6116:69399] pml_ucx.c:453  Error:
        # Failed to resolve UCX endpoint for rank 95" (open-mpi/ompi#8003), osc_ucx, spml_ucx
        "ompi_ucx_error",
        "mpi_error",
        "rror: ",
        re.compile(r"(?:\[(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+)\]\s+)?(?:pml|osc|spml|btl)_ucx"
                   r"\w*\.c:\d+\s+Error: (?P<msg>\S.*?)\s*$"),
    ),
    (  # Open MPI's fatal error handler: "[g32n01:32314] *** An error occurred in MPI_Allreduce"
        # then "*** MPI_ERR_COMM: invalid communicator" … "*** MPI_ERRORS_ARE_FATAL (processes in
        # this communicator will now abort," (E3SM-Project/ACME-ECP#92, open-mpi/ompi#8003); with
        # the reason on the line: "*** An error occurred in MPI_Allreduce: the reduction
        # operation MPI_SUM is not defined on the MPI_INTEGER datatype" (KaHIP/KaHIP#8)
        "mpi_errhandler",
        "mpi_error",
        "An error occurred in MPI_",
        re.compile(r"(?:\[(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+)\]\s+)?\*\*\*\s+(?P<msg>An error "
                   r"occurred in MPI_\w+(?::? .{1,200}?)?)\s*$"),
    ),
    (  # the handler's next line names the process: Open MPI's name [jobid,vpid], whose vpid is
        # the rank in MPI_COMM_WORLD ("[g32n01:32314] *** reported by process [2154496201,608]",
        # E3SM-Project/ACME-ECP#92): who the lines of that pid are (a context row)
        "mpi_reported_by",
        "mpi_error",
        "reported by process [",
        re.compile(r"(?:\[(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+)\]\s+)?\*\*\*\s+(?P<msg>reported "
                   r"by process \[\d+,(?P<rank>\d{1,7})\])\s*$"),
    ),
    (  # MPICH, Intel MPI, Cray MPICH: "Fatal error in MPI_Allreduce: Other MPI error, error
        # stack:" (Tencent/plato#164), "Abort(203042319) on node 4092 (rank 4092 in comm 0): Fatal
        # error in PMPI_Wait: Other MPI error, error stack:" (SGpp/DisCoTec#97), "MPICH ERROR
        # [Rank 11122] [job id 41595204.0] [Thu Aug 14 08:27:11 2025] [nid006700] -
        # Abort(2695311) (rank 11122 in comm 0): Fatal error in PMPI_Allreduce: Other MPI error,
        # error stack:" (ofiwg/libfabric#11307). Comm 0 is MPI_COMM_WORLD: its rank is global
        "mpi_fatal",
        "mpi_error",
        "Fatal error in ",
        re.compile(r"(?:\[(?P<host>[A-Za-z][\w.\-]*)\] - )?(?:Abort\(-?\d+\)(?: on node \d+)? "
                   r"\(rank (?P<rank>\d+) in comm 0\): )?(?P<msg>Fatal error in (?:P?MPI|MPID|MPIR|"
                   r"internal)\w*: [^,\n]{1,160}?)(?:, error stack:|\s*$)"),
    ),
    (  # the program ending the job through MPI: MPICH/Intel MPI "application called
        # MPI_Abort(MPI_COMM_WORLD, 1) - process 3" (pmodels/mpich#270: the process is the rank
        # in MPI_COMM_WORLD); Open MPI "MPI_ABORT was invoked on rank 0 in communicator
        # MPI_COMM_WORLD with errorcode 1." (its reason, when printed, is in the lines before)
        "mpi_abort",
        "mpi_error",
        "MPI_Abort(",
        re.compile(r"(?P<msg>application called MPI_Abort\((?:MPI_COMM_WORLD|comm=0x[0-9a-fA-F]+), "
                   r"-?\d+\)) - process (?P<rank>\d+)"),
    ),
    (
        "mpi_abort",
        "mpi_error",
        "MPI_ABORT was invoked",
        re.compile(r"(?P<msg>MPI_ABORT was invoked on rank (?P<rank>\d+) in communicator "
                   r"MPI_COMM_WORLD(?:\s+with errorcode -?\d+)?)"),
    ),
    # --- ProcessGroupNCCL / gloo teardown (the timeout runbook reads these codes) ------------
    (
        "nccl_teardown",
        "nccl_error",
        "Some NCCL operations have failed or timed out",
        re.compile(r"(?P<msg>Some NCCL operations have failed or timed out)"),
    ),
    (  # Hydra's report that the @hydra.main task raised (hydra/core/utils.py JobReturn): the
        # exception follows it, when printed at all ("Error executing job with overrides:
        # ['task=dexart_laptop', …]", openai/mujoco-py#808; under the job's logger "[2025-10-31
        # 05:07:11,062][__main__][ERROR] - Error executing job with overrides: [...]",
        # facebookresearch/map-anything#89; "… overrides: []", WEIRDLabUW/asid#1)
        "hydra_job_error",
        "python",
        "Error executing job with overrides",
        re.compile(r"(?P<msg>Error executing job with overrides: \[.*?\](?=\s*$)|Error executing "
                   r"job with overrides:.{0,200})"),
    ),
    (  # ProcessGroupNCCL's error after it aborted its communicator (a failure it caught, here
        # or on a peer): torch 1.5-1.8 "RuntimeError: NCCL communicator was aborted."
        # (karfly/learnable-triangulation-pytorch#81), 1.9+ "… was aborted on rank 1.  Original
        # reason for failure was: …" (pytorch/pytorch#64241; mlfoundations/open_clip#1087)
        "nccl_comm_aborted",
        "nccl_error",
        "NCCL communicator was aborted",
        # (an abort for a timed-out collective stays the timeout's: the watchdog's words read)
        re.compile(r"(?P<msg>NCCL communicator was aborted(?: on rank \d+)?\.?"
                   r"(?!.*(?:[Tt]imed out|timing out|[Tt]imeout)).*)"),
    ),
    (
        "process_taken_down",
        "nccl_error",
        "taking the entire process down",
        re.compile(r"(?P<msg>To avoid data inconsistency, we are taking the entire process down)"),
    ),
    (
        "heartbeat_timeout",
        "nccl_error",
        "Heartbeat monitor timed out",
        re.compile(r"(?P<msg>Heartbeat monitor timed out!.*?)(?:\s*workMetaList|$)"),
    ),
    (
        "watchdog_stuck",
        "nccl_error",
        "watchdog got stuck",
        re.compile(r"(?P<msg>ProcessGroupNCCL's watchdog got stuck for \d+ seconds[^.]*)"),
    ),
    # the monitor thread ending the process it found stuck (torch >= 2.4, a LOG(FATAL) line:
    # NVIDIA/Fuser#3055, warpem/miss-alignment#105): the same hang, from its last line
    (
        "watchdog_stuck",
        "nccl_error",
        "due to ProcessGroupNCCL watchdog hang",
        re.compile(r"(?P<msg>Terminating the process after attempting to dump debug info, due to "
                   r"ProcessGroupNCCL watchdog hang)"),
    ),
    (
        "watchdog_terminated",
        "nccl_error",
        "watchdog thread terminated with exception",
        re.compile(r"(?P<msg>(?:NCCL|Process group) watchdog thread terminated with exception)"),
    ),
    (
        "gloo_mismatch",
        "nccl_error",
        "collective mismatch",
        re.compile(r"(?P<msg>Is there a distributed collective mismatch in your code\?)"),
    ),
    (
        "gloo_connection_closed",
        "nccl_error",
        "Connection closed by peer",
        re.compile(r"(?P<msg>Connection closed by peer \[[^\]]*\])"),
    ),
    (
        "gloo_connection_reset",
        "nccl_error",
        "Connection reset by peer",
        re.compile(r"(?P<msg>Connection reset by peer)"),
    ),
    # --- GPU memory health -------------------------------------------------------------------
    (
        "row_remap_failure",
        "ecc",
        "Remapping Failure Occurred",
        re.compile(r"(?P<msg>Remapping Failure Occurred\s*:\s*Yes)"),
    ),
    (
        "page_retirement_pending",
        "ecc",
        "Pending Page Blacklist",
        re.compile(r"(?P<msg>Pending Page Blacklist\s*:\s*Yes)"),
    ),
    (
        "dcgm_uncorrectable_memory",
        "ecc",
        "has uncorrectable memory errors",
        re.compile(r"(?P<msg>GPU \d+ has uncorrectable memory errors)"),
    ),
    # --- host memory -------------------------------------------------------------------------
    (
        "host_oom_killer",
        "oom",
        "ut of memory: Kill",
        re.compile(r"(?P<msg>(?:Memory cgroup )?[Oo]ut of memory: Kill(?:ed)? process "
                   r"(?P<pid>\d+) \([^)]*\))"),
    ),
    (  # the kernel's second line of the same kill, alone in a pasted excerpt: "Killed process
        # 126170 (python3) total-vm:325690732kB, anon-rss:…" (huggingface/transformers#7020)
        "host_oom_killer",
        "oom",
        "Killed process",
        re.compile(r"(?P<msg>Killed process (?P<pid>\d+) \([^)]*\)) total-vm:"),
    ),
    (
        "slurm_oom_kill",
        "oom",
        "kill event",
        re.compile(r"(?P<msg>Detected \d+ oom[-_]kill event\S* in (?:StepId=|step )\S+?)\.?"
                   r"(?:\s|$)"),
    ),
    (  # slurmstepd's memory-limit kill (cgroup accounting): "slurmstepd: error: Job 7518
        # exceeded memory limit (626359956 > 512000000), being killed" (coqui-ai/STT#2238,
        # jmonlong/PopSV#7), "slurmstepd-falkor7: error: Step 1141810.0 exceeded memory limit
        # (…), being killed" (openbabel/openbabel#2658): the host, when its prefix names one
        "slurm_mem_limit",
        "oom",
        "exceeded memory limit",
        re.compile(r"(?:slurmstepd-(?P<host>[A-Za-z0-9][\w.\-]*): error: )?(?P<msg>(?:Job |Step |"
                   r"StepId=)(?P<job>\d+)\S* exceeded memory limit \(\d+ > \d+\), being killed)"),
    ),
    (
        "srun_task_oom",
        "oom",
        "Out Of Memory",
        re.compile(r"srun: error: (?P<host>[\w.\-]+): (?P<msg>tasks? (?P<task>[\d,\-]+): "
                   r"Out Of Memory)"),
    ),
    (  # Kubernetes: a container's last state "Reason: OOMKilled" (kubectl describe / events)
        "k8s_oom_killed",
        "oom",
        "OOMKilled",
        re.compile(r"(?P<msg>(?:[Rr]eason:?\s*)?\bOOMKilled\b)"),
    ),
    (  # Kubernetes' eviction for memory pressure: "The node was low on resource: memory."
        "k8s_evicted_memory",
        "oom",
        "low on resource: memory",
        re.compile(r"(?P<msg>The node was low on resource: memory\.?(?: Container \S+ was "
                   r"using \S+, (?:which exceeds its request of|request is) \S+\.)?)"),
    ),
    # the same eviction for another resource (disk: ephemeral-storage, nodefs; pids): the
    # kubelet stops the pod's containers (kubernetes/kubernetes#91600, cloud-ark/kubeplus#1382)
    (
        "k8s_evicted",
        "signal",
        "low on resource: ",
        re.compile(r"(?P<msg>The node was low on resource: (?!memory)[\w.-]+\.?(?: Container \S+ "
                   r"was using \S+, (?:which exceeds its request of|request is) \S+\.)?)"),
    ),
    (  # Ray's memory monitor killing workers for the host's RAM, the raylet's summary (Ray >=
        # 2.2, node_manager.cc): "(raylet) … node_manager.cc:3069: 13 Workers (tasks / actors)
        # killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node
        # (ID: 2875…, IP: 10.0.10.135) over the last time period." (ray-project/ray#34695,
        # #45894); before it: "System memory low at node with IP 172.31.66.10. Used memory
        # (54.90GB) / total capacity (57.60GB) (0.95307) exceeds threshold 0.95, killing latest
        # task …" (ray-project/ray#28774)
        "ray_oom",
        "oom",
        "killed due to memory pressure",
        re.compile(r"(?P<msg>[1-9]\d* Workers \(tasks / actors\) killed due to memory pressure "
                   r"\(OOM\))(?:, \d+ Workers crashed due to other reasons at node \(ID: \w+, "
                   r"IP: (?P<host>[\w.:\-]+)\))?"),
    ),
    (
        "ray_oom",
        "oom",
        "System memory low at node",
        re.compile(r"(?P<msg>System memory low at node with IP (?P<host>[\w.:\-]+)\. Used memory "
                   r"\([\d.]+\s?[KMGT]?B\) / total capacity \([\d.]+\s?[KMGT]?B\))"),
    ),
    (
        "ray_oom",
        "oom",
        "OutOfMemoryError",
        re.compile(r"(?P<msg>ray\.exceptions\.OutOfMemoryError: .*)"),
    ),
    # --- process deaths, signals, launcher and scheduler teardown ----------------------------
    (  # Intel's Unified Runtime (SYCL, oneCCL, torch on XPU), an adapter's die(): "ur_die:
        # urEventWait must not be called for an internal event" (saforem2/torchtitan's Aurora MoE
        # run, and a run script's note on oneCCL's v1 Level Zero adapter), then std::terminate():
        # the process aborts (SIGABRT), "terminate called without an active exception" and
        # "Fatal Python error: Aborted" after it are the consequence
        "SIGABRT",
        "signal",
        "ur_die: ",
        re.compile(r"(?:^|\s)(?P<msg>ur_die: \S.{0,300}?)\s*$"),
    ),
    (
        "fatal_signal",
        "signal",
        "Fatal Python error: ",
        re.compile(r"(?P<msg>Fatal Python error: (?P<what>Segmentation fault|Aborted|Bus error|"
                   r"Floating point exception|Illegal instruction))"),
    ),
    (  # any other Py_FatalError, which aborts the interpreter (SIGABRT): "Fatal Python error:
        # none_dealloc: deallocating None" (ms-swift#5231, vllm#20431), "… PyThreadState_Get:
        # no current thread" (MTG/gaia#82, leetmaa/KMCLib#17 'Abort trap: 6'), "… ceval:
        # tstate mix-up" (opencog/atomspace#671); also a crash when its faulthandler dump shows
        # only '<no Python frame>'. The buffered-stream error at interpreter shutdown comes
        # after the program's own end and is not a crash of the run.
        "SIGABRT",
        "signal",
        "Fatal Python error: ",
        re.compile(r"(?P<msg>Fatal Python error: (?!.*\bat interpreter shutdown\b)\S.{0,200}?)\s*$"),
    ),
    (  # Paddle's signal handler (platform/init.cc SignalHandle): "FatalError: `Termination
        # signal` is detected by the operating system." (PaddleOCR#13976), "… `Process abort
        # signal` …" (Paddle#53049), "… `Segmentation fault` …", "… `Erroneous arithmetic
        # operation` …" (SIGFPE); Paddle 2.6+: "FatalError: The operating system has detected the
        # 'Process abort signal'." (PaddleHelix#315)
        "fatal_signal",
        "signal",
        "FatalError: ",
        re.compile(r"(?P<msg>FatalError: (?:`(?P<pw>[A-Za-z ]{1,40})` is detected by the operating "
                   r"system|The operating system has detected the '(?P<pw2>[A-Za-z ]{1,40})')\.?)"),
    ),
    (
        "fatal_signal",
        "signal",
        " received at time=",
        re.compile(r"\*\*\* (?P<code>SIG[A-Z]+) received at time=\d+(?P<msg>)"),
    ),
    (  # glog's and older absl's failure signal handler (JAX/TPU, XLA, TensorFlow, Paddle's
        # core): "*** SIGSEGV (@(nil)), see gl__________41#s15 received by PID 11743 (TID 12350)
        # on cpu 17; stack trace: ***" (google/jax#12456); Paddle prints the same banner under
        # its FatalError as "[SignalInfo: *** SIGTERM …]", read there already
        "fatal_signal",
        "signal",
        " received by PID ",
        re.compile(r"(?<!SignalInfo: )\*\*\* (?P<code>SIG[A-Z]+) \(@(?:\(nil\)|[^()]{0,40})\)(?:, see \S+)? "
                   r"received by PID (?P<pid>\d+)(?P<msg>)"),
    ),
    (  # Lightning's SIGTERM handler (trainer/connectors/signal_connector.py, _sigterm_notifier_fn:
        # rank_prefixed_message(f"Received SIGTERM: {signum}", trainer.local_rank)): "[rank: 2]
        # Received SIGTERM: 15" (eagnet QCNet's train.out, fused to the last tqdm update). The
        # number is the process's LOCAL rank; rank 0 passes the signal on to its children, which
        # then say the same
        "SIGTERM",
        "signal",
        "Received SIGTERM: ",
        re.compile(r"(?:\[rank: (?P<lr>\d+)\] )?(?P<msg>Received (?P<code>SIGTERM): \d+)\s*$"),
    ),
    (  # UCX's signal handler (NCCL/MPI jobs): "[ib-vm-61:343042:0:345015] Caught signal 11
        # (Segmentation fault: invalid permissions for mapped object at address 0x14…)"
        "fatal_signal",
        "signal",
        "Caught signal ",
        re.compile(r"\[(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+)[\s:\d]*\] (?P<msg>Caught signal "
                   r"\d+ \((?P<what>[A-Z][a-z]+(?: [a-z]+)*)[^)]*\))"),
    ),
    (  # UCX's fatal error (ucs_fatal), which calls abort(): "[jazz14:75380:0:75380]
        # rndv.c:1608 Fatal: error handling is unsupported with rendezvous protocol"
        # (openucx/ucx#6805), "[cgpu09:43722:2:43760]        rndv.c:943  Fatal: failed to unpack
        # rendezvous remote key received from <no debug data>: Input/output error"
        # (sparticlesteve/pytorch-cuda-mpi-error slurm-418426.out)
        "SIGABRT",
        "signal",
        " Fatal: ",
        re.compile(r"\[(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+)(?::\d+){1,2}\]\s+\w+\.c:\d+\s+"
                   r"(?P<msg>Fatal: \S.{0,300}?)\s*$"),
    ),
    (  # Open MPI's handler: "[ichost094:17969] Signal: Segmentation fault (11)"
        "fatal_signal",
        "signal",
        "] Signal: ",
        re.compile(r"\[(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+)\] (?P<msg>Signal: "
                   r"(?P<what>[A-Z][a-z]+(?: [a-z]+)*) \(\d+\))"),
    ),
    *LAUNCHER_DEATHS,
    (  # torch.multiprocessing.spawn: "process 0 terminated with signal SIGBUS" (the process
        # index is the rank when the script passes it as such, as mp.spawn examples do)
        "spawn_signal",
        "signal",
        "terminated with signal",
        re.compile(r"(?P<msg>process (?P<rank>\d+) terminated with signal (?P<code>SIG[A-Z]+))"),
    ),
    (  # torch.distributed.launch (torch <= 1.9): the worker's command and its signal
        "launcher_child_died",
        "signal",
        "died with <Signals.",
        re.compile(r"(?:'--local_rank=(?P<local>\d+)'.*?)?(?P<msg>died with <Signals\."
                   r"(?P<code>SIG[A-Z]+): \d+>)"),
    ),
    (  # the elastic agent told to stop: "Received Signals.SIGTERM death signal, …" (torch < 2.4),
        # "Received 15 death signal, shutting down workers" (2.4+, pytorch#150916; "Received 1"
        # under nohup's SIGHUP, OpenMOSS/MOSS#237)
        "launcher_received_signal",
        "signal",
        "death signal, shutting down workers",
        re.compile(r"(?P<msg>Received (?:Signals\.(?P<sig>SIG[A-Z]+)|\d+) death signal, shutting "
                   r"down workers)"),
    ),
    (  # DeepSpeed's launcher told to stop (launch.py's sigkill_handler, after it killed its
        # workers): "[launch.py:324:sigkill_handler] Main process received SIGTERM, exiting"
        # (madehua98/FoodHealthMMLLM scripts/v1/phi2/food_weight_train.out; Megatron-DeepSpeed
        # examples' random-ltd logs), "… received SIGINT, exiting" after a Ctrl-C
        # (linskybing LLM ZeRO-3 log, corpus loss_spike-linskybing-llm-zero-3-amd)
        "launcher_received_signal",
        "signal",
        "Main process received SIG",
        re.compile(r"(?P<msg>Main process received (?P<sig>SIG[A-Z]+), exiting)"),
    ),
    (  # the agent's SIGTERM to a worker: "Sending process 1365 closing signal SIGTERM" (workers
        # run as subprocesses), "Closing process 293866 via signal SIGTERM" (started by
        # multiprocessing: torch 2.x, NVIDIA/nvidia-resiliency-ext#18)
        "launcher_sigterm",
        "signal",
        "closing signal",
        re.compile(r"(?P<msg>Sending process (?P<pid>\d+) closing signal (?P<sig>SIG[A-Z]+))"),
    ),
    (
        "launcher_sigterm",
        "signal",
        " via signal SIG",
        re.compile(r"(?P<msg>Closing process (?P<pid>\d+) via signal (?P<sig>SIG[A-Z]+))"),
    ),
    (  # torchrun's escalation, 30 s after its SIGTERM (elastic/multiprocessing/api.py): "Unable
        # to shutdown process 188 via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL";
        # torch 1.10: "Unable to shutdown processes via 15, forcefully exitting via 9"
        "launcher_sigkill",
        "signal",
        "forcefully exit",
        re.compile(r"(?P<msg>Unable to shutdown process(?:es)?(?: (?P<pid>\d+))? via "
                   r"(?:Signals\.)?\w+, forcefully exit+ing via (?:Signals\.)?\w+)"),
    ),
    (
        "launcher_kill",
        "signal",
        "Killing subprocess",
        re.compile(r"(?P<msg>Killing subprocess (?P<pid>\d+))"),
    ),
    (  # paddle.distributed.launch's worker watching its parent (python/paddle/distributed/
        # launch/main.py … "main proc {pid} exit, kill process group {pgid}"; corpus
        # gpu_crash-light-str-paddleocr-4gpu-stops-iter-880-kill-process-group): the launcher
        # went away and its workers stop with it
        "parent_exit",
        "signal",
        " exit, kill process group ",
        re.compile(r"(?P<msg>main proc (?P<pid>\d+) exit, kill process group \d+)"),
    ),
    (  # srun: "srun: error: Node failure on jean-zay-iam49": the node SLURM lost (the host
        # of "*** STEP … ON HOST CANCELLED … DUE TO NODE FAILURE" only reports it)
        "slurm_node_failure",
        "signal",
        "Node failure on ",
        re.compile(r"(?P<msg>Node failure on (?P<host>[A-Za-z0-9][\w.\-]*))"),
    ),
    (
        "slurm_cancelled",
        "signal",
        " CANCELLED AT ",
        re.compile(r"(?P<msg>\*\*\* (?:JOB|STEP) \S+ ON (?P<on>\S+) CANCELLED AT \S+"
                   r"(?: DUE TO (?P<why>[A-Z][A-Z ]*?))?)(?:, [^*]*?)? \*\*\*"),
    ),
    # Other schedulers ending a job at its time limit (no crash: the job ran out of the time it
    # asked for) or taking it back: PBS/Torque's "=>> PBS: job killed: walltime 86415 exceeded
    # limit 86400" (marbl/canu#1214, biocore/qiime#1048), Moab's "MOAB_INFO:  job exceeded
    # wallclock limit" (CoBrALab/MAGeTbrain#20), LSF's "TERM_RUNLIMIT: job killed after
    # reaching LSF run time limit." (marbl/canu#444; galaxyproject/galaxy#14917) and
    # "TERM_PREEMPT: job killed after preemption." (LSF's job exit reasons), a Kubernetes
    # Job's condition "DeadlineExceeded … Job was active longer than specified deadline"
    (
        "pbs_walltime",
        "signal",
        "job killed: walltime ",
        re.compile(r"(?P<msg>PBS: job killed: walltime \d+ exceeded limit \d+)"),
    ),
    (
        "moab_wallclock",
        "signal",
        "job exceeded wallclock limit",
        re.compile(r"(?P<msg>job exceeded wallclock limit)"),
    ),
    (
        "lsf_runlimit",
        "signal",
        "TERM_RUNLIMIT",
        re.compile(r"(?P<msg>TERM_RUNLIMIT: job killed after reaching LSF run time limit)"),
    ),
    (
        "lsf_preempt",
        "signal",
        "TERM_PREEMPT",
        re.compile(r"(?P<msg>TERM_PREEMPT: job killed after preemption)"),
    ),
    (
        "k8s_deadline_exceeded",
        "signal",
        "active longer than specified deadline",
        re.compile(r"(?P<msg>(?:DeadlineExceeded\W+)?Job was active longer than specified "
                   r"deadline)"),
    ),
    (  # JAX's coordination service (xla coordination_service.cc) names the task that stopped
        # sending heartbeats; the task id is jax.process_index(): "/job:jax_worker/replica:0/task:0
        # has been set to ERROR in coordination service: UNAVAILABLE: Task /job:jax_worker/
        # replica:0/task:0 heartbeat timeout. This indicates that the remote task has failed, got
        # preempted, or crashed unexpectedly." (jax-ml/jax#23599); its cause is in that task's log
        "jax_task_heartbeat_timeout",
        "signal",
        " heartbeat timeout",
        re.compile(r"(?P<msg>Task /job:\w+/replica:\d+/task:(?P<task>\d+) heartbeat timeout)"),
    ),
    (  # Python's hook for an exception nothing can raise to (an atexit callback's, a
        # destructor's, a thread's at shutdown) prints it under this header and goes on: no
        # failure of the process (DeepSpeed's Triton autotune cache at exit, "Exception ignored
        # in atexit callback: <function matmul_ext_update_autotune_table at 0x7f…>", bigyang's
        # ulysses logs; "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__
        # …>"; Python 3.13's "Exception ignored while calling deallocator …"). Context; the
        # traceback under it is the hook's (``gpu_crash.events``)
        EXCEPTION_IGNORED_CODE,
        "python",
        "Exception ignored ",
        re.compile(r"^\s*(?P<msg>Exception ignored (?:in|on|while)\b.*)$"),
    ),
    (  # a Ray task's exception as the driver re-raises it, its worker's pid and machine in
        # the header over the worker's traceback: "ray.exceptions.RayTaskError(RuntimeError):
        # ray_Train:train() (pid=8861, host=cryoem-gpu50)" (Ray 0.7, ninamiolane/vaetree),
        # "… ray::TaskRunner.run() (pid=2337, ip=10.0.0.5, actor_id=…)" (Ray 2). Context: the
        # error is the traceback's last line, which takes the header's place
        # (``gpu_crash.events``)
        "ray_task_error",
        "python",
        "RayTaskError",
        re.compile(r"(?P<msg>[\w.]*RayTaskError(?:\([\w.]+\))?):.*?\(pid=(?P<pid>\d+), "
                   r"(?:host|ip)=(?P<host>[\w.:\-]+)"),
    ),
    (  # the raylet's record names the dead worker's machine and pid on the same line: "…
        # Worker IP address: 172.19.24.110 Worker port: 10185 Worker PID: 90738 Worker exit
        # type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits …" (OpenRLHF#621,
        # verl#316)
        "ray_worker_died",
        "signal",
        "Worker unexpectedly exits",
        re.compile(r"(?:Worker IP address: (?P<host>[\w.:\-]+) (?:.*?Worker PID: (?P<pid>\d+) )?"
                   r".*?)?(?P<msg>Worker unexpectedly exits with a connection error code \d+)"),
    ),
    (
        "ray_actor_died",
        "signal",
        "The actor died unexpectedly",
        re.compile(r"(?P<msg>(?:[\w.]*(?:ActorDiedError|RayActorError)\S*: )?The actor died "
                   r"unexpectedly before finishing this task\.?)"),
    ),
    (  # torch's DataLoader (torch/utils/data/_utils/signal_handling.py, csrc/DataLoader.cpp):
        # "RuntimeError: DataLoader worker (pid 624) is killed by signal: Segmentation fault."
        # (facebookresearch/pycls#146, sutrack#15), "ERROR: Unexpected bus error encountered in
        # worker. This might be caused by insufficient shared memory (shm)." (DCPDN#58)
        "fatal_signal",
        "signal",
        "is killed by signal",
        re.compile(r"(?P<msg>DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: "
                   r"(?P<what>[A-Z][a-z]+(?: [a-z]+)*)\.?)"),
    ),
    (
        "fatal_signal",
        "signal",
        "encountered in worker",
        re.compile(r"(?P<msg>Unexpected (?P<what>segmentation fault|bus error|floating-point "
                   r"exception) encountered in worker\.?(?: This might be caused by insufficient "
                   r"shared memory \(shm\)\.?)?)"),
    ),
    (  # argparse's parser.error, after which the program exits 2 (no traceback): "train_distr.py:
        # error: unrecognized arguments: --local-rank=3" (JVrabel/LLM_KD logs/
        # training_detailed.log: torch.distributed.launch passing --local-rank to a script that
        # knows --local_rank), "run_chatglm.py: error: the following arguments are required:
        # --output_dir" (wuyike2000/MLDT#3, torchrun's "failed (exitcode: 2)" after it),
        # megvii-research/NAFNet#112; the other messages as argparse.py words them
        "argparse_error",
        "python",
        ": error: ",
        re.compile(r"^\s*(?P<msg>[\w.\-]+: error: (?:unrecognized arguments: |the following "
                   r"arguments are required: |argument \S+: (?:invalid |expected |not allowed "
                   r"with |ignored explicit )|ambiguous option: |one of the arguments ).*)$"),
    ),
    # --- last: any Python exception's final line ---------------------------------------------
    (  # quoted in torchelastic's error file, as its error_handler logs it ('"message":
        # "MemoryError: std::bad_alloc",', pytorch#64990)
        "python_exception",
        "python",
        "Error: ",
        re.compile(r'"message":\s*"(?P<msg>(?P<code>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))'
                   r': [^"]+)"'),
    ),
    (
        "python_exception",
        "python",
        "Error: ",
        # (a private class too: "torch._C._LinAlgError: linalg.cholesky: …", rbitr/parameter-golf)
        re.compile(r"^\s*(?P<msg>(?P<code>(?:[A-Za-z_]\w*\.)*(?!ChildFailedError)_?[A-Z]\w*"
                   r"(?:Error|Exception|Failure|Exit))(?:\([^)]*\))?: \S.*)$"),
    ),
    # any class of a package's module of exceptions, whatever its name ends with
    # (``EXCEPTIONS_MODULE_RE``), one entry a module name
    *(("python_exception", "python", needle, EXCEPTIONS_MODULE_RE)
      for needle in (".exc.", ".exceptions.", ".errors.")),
    (  # a module's own lowercase exception class: OpenCV's "cv2.error: OpenCV(4.5.1) …/color.cpp:182:
        # error: (-215:Assertion failed) !_src.empty() in function 'cvtColor'" (linhandev/iann
        # log/workerlog.0), "struct.error: unpack requires a buffer of 4 bytes", "zlib.error: …",
        # "socket.error: [Errno 111] Connection refused"; and a module's class named just Error:
        # "binascii.Error: Incorrect padding" (stark-sim/megatron-deepspeed-lock-clock experiments/
        # _screen_boot/dual_tp2pp4dp2_static1185_20260320.log: DeepSpeed decoding its base64
        # config), "csv.Error: field larger than field limit (131072)", "shutil.Error: …"
        "python_exception",
        "python",
        ".error: ",
        re.compile(r"^\s*(?P<msg>(?P<code>(?:[A-Za-z_]\w*\.)+error): \S.*)$"),
    ),
    (
        "python_exception",
        "python",
        ".Error: ",
        re.compile(r"^\s*(?P<msg>(?P<code>(?:[A-Za-z_]\w*\.)+Error): \S.*)$"),
    ),
    (  # an exception raised with no message: a traceback's last line is the class alone
        # ("[rank1]: NotImplementedError" after "raise NotImplementedError", zyx303/O-LoRA
        # logs_and_outputs/order_1/logs/train_and_infer.log). Not "MemoryError: " with nothing
        # after the colon: Paddle states that one's message in the lines below it
        # (corpus gpu_crash-ernie-docvqa-workerlog-oom, "Out of memory error on GPU 0 …")
        "python_exception",
        "python",
        "Error",
        re.compile(r"^\s*(?P<msg>(?P<code>(?:[A-Za-z_]\w*\.)*(?!ChildFailedError)[A-Z]\w*Error))\s*$"),
    ),
    (
        "python_exception",
        "python",
        "Exception: ",
        # a bare ``Exception: …`` too (``raise Exception(…)``, yangjianxin1/Firefly#32)
        re.compile(r"^\s*(?P<msg>(?P<code>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?Exception): \S.*)$"),
    ),
)

NEEDLES = tuple(dict.fromkeys(p[2] for p in ERROR_PATTERNS))
# What the loader tests every line for: one of these is inside every entry's needle above (a test
# checks it), so a line reaches ``parse_error`` only when some pattern can match.
# Not "emory": torchtitan prints "memory:" on every step line, and the fast engine scans raw
# bytes, where a needle must not hit launcher prefixes either ("fault" is in "[default0]:").
LINE_NEEDLES = ("rror", "of memory", "memory error", "Out Of Memory", "NCCL WARN", "NCCL op", "InvalidUsage", "watchdog",
                "OOMKilled", "low on resource", "Node failure", "forcefully exit",
                "Heartbeat", "process down", "mismatch", "by peer", "Remapping Failure",
                "Page Blacklist", "kill event", "memory limit", "in worker", "received at time", "signal",
                "Killing subprocess", "process received SIG", "CANCELLED", "unexpectedly", "Exception: ", "died with <Signals",
                "Signal: ", "Cuda failure", "Killed process", "RESOURCE_EXHAUSTED", "Resource exhausted: ",
                "OOM when allocating", "BLAS ERROR]", "CUDNN_STATUS_", "CUBLAS_STATUS_",
                "CUDA_ERROR_", "Assertion ", "due to CUDA OOM", "killed due to memory pressure",
                "System memory low at node", "OUT_OF_DEVICE_MEMORY", "heartbeat timeout",
                "UCX  ERROR", "UCX ERROR", "An error occurred in MPI_", "MPI_Abort(",
                "reported by process [", " Fatal: ", "Exception ignored ",
                "MPI_ABORT was invoked", "job killed: walltime ", "exceeded wallclock limit",
                "TERM_RUNLIMIT", "TERM_PREEMPT", "longer than specified deadline",
                "communicator was aborted", "BAD TERMINATION", "ur_die: ", " received by PID ",
                " exit, kill process group ", "Received SIGTERM: ", ".exc.", ".exceptions.")
MAX_MESSAGE_CHARS = 400
# The heartbeat monitor's message, which a terminal may wrap mid-word ("… Rank 6]
# ProcessGroupNCCL'" / "s watchdog got stuck for 480 seconds …", om-ai-lab/VLM-R1#257)
STUCK_PHRASE = "ProcessGroupNCCL's watchdog got stuck for"
STUCK_NEEDLE = "] ProcessGroupNCCL"


# A Python exception whose message goes on under it, indented: "RuntimeError: Error(s) in loading
# state_dict for BertForSequenceClassification:" then "\tsize mismatch for classifier.weight:
# copying a param with shape …" (torch's load_state_dict; bert-stockprediction's train.err). The
# first indented line is the message proper and is joined to it.
PY_MESSAGE_OPEN_RE = re.compile(
    r"^\s*(?:[A-Za-z_]\w*\.)*(?!ChildFailedError)[A-Z]\w*(?:Error|Exception): \S.*:\s*$")


# Ray's ActorDiedError with the dead actor's details under it, one tab-indented "key: value" a
# line ("\tclass_name: create_colocated_worker_cls.<locals>.WorkerDict", "\tpid: 20174", "\tname:
# Zap04XWorkerDict_0:1", "\tip: 10.164.37.106": RL-Factory#8's verl run): joined to it, they name
# the worker that died. verl names its workers "<prefix>WorkerDict_<placement group>:<rank in
# it>": in the first placement group that is the worker's rank.
RAY_ACTOR_DIED_TEXT = "The actor died unexpectedly before finishing this task"
# (its detail lines indented by a tab or by blanks, which reach the parser without them)
RAY_ACTOR_DETAIL_RE = re.compile(r"^\s*(?:class_name|actor_id|pid|name|namespace|ip): ")
RAY_ACTOR_NAME_RE = re.compile(r"\bname: \S*?WorkerDict_(?P<pg>\d++):(?P<local>\d++)\b")
RAY_ACTOR_PID_RE = re.compile(r"\bpid: (?P<pid>\d++)\b")
RAY_ACTOR_IP_RE = re.compile(r"\bip: (?P<ip>\d{1,3}(?:\.\d{1,3}){3})\b")


def error_incomplete(text: str) -> bool:
    """A line cut inside the words that name the error it reports (the heartbeat monitor's
    'ProcessGroupNCCL's watchdog got stuck for'), a Python exception whose message ends in
    ':' and goes on, indented, on the next line, or Ray's ActorDiedError before its actor's
    details: the next lines continue it."""
    if text.rstrip().endswith(":") and PY_MESSAGE_OPEN_RE.match(text):
        return True
    if RAY_ACTOR_DIED_TEXT in text and not RAY_ACTOR_IP_RE.search(text):
        return True
    i = text.rfind(STUCK_NEEDLE)
    if i < 0:
        return False
    tail = text[i + 2:].rstrip()
    return len(tail) < len(STUCK_PHRASE) and STUCK_PHRASE.startswith(tail)
def error_continues(so_far: str, body: str) -> bool:
    """Whether ``body`` continues an incomplete error line: an indented line that is not a
    traceback's, under a Python exception whose message opens with ':'; any line under a cut
    heartbeat-monitor message."""
    if PY_MESSAGE_OPEN_RE.match(so_far):
        return body[:1].isspace() and not body.lstrip().startswith(('File "', "Traceback"))
    if RAY_ACTOR_DIED_TEXT in so_far:
        return RAY_ACTOR_DETAIL_RE.match(body) is not None
    return True


NCCL_SITE_RE = re.compile(r"NCCL error in: \S+?\.(?:cpp|hpp|cc):\d+,\s*")
# A what() line belongs to the c10 block around it (``CudaErrorBlock``), not to a line of its own.
WHAT_RE = re.compile(r"^\s*what\(\):\s*(?P<msg>.*)$")


def classify(text: str) -> tuple[str, str, str, re.Match[str]] | None:
    """(code, kind, message, match) for the first known error phrase in ``text``."""
    for code, kind, needle, regex in ERROR_PATTERNS:
        if needle not in text:
            continue
        m = regex.search(text)
        if not m:
            continue
        groups = m.groupdict()
        msg = (groups.get("msg") or m.group(0)).strip()
        if groups.get("code"):
            code = groups["code"]
            if not msg:
                msg = f"{code} received (fatal signal handler)"
        msg = NCCL_SITE_RE.sub("NCCL error: ", msg)
        if len(msg) > MAX_MESSAGE_CHARS:
            msg = msg[:MAX_MESSAGE_CHARS] + " …"
        return code, kind, msg, m
    return None


# a value the poster blanked out ("xxxxxxxx", "****"): no host, no pid
REDACTED_RE = re.compile(r"^(?:[xX]{3,}|[*#]+)$")


# NCCL WARN lines of a transport probe that fell back to the next transport, not failures: an
# InfiniBand device (or its verbs library) that cannot be opened while NCCL lists the network
# devices; it then uses the other HCAs or sockets and the job goes on (zai-org/ImageReward#65:
# "Unable to open device mlx5_59", then "Using network IB"; horovod/horovod#685: "Failed to open
# libibverbs.so[.1]", then "Using network Socket"). A hang that follows is read by its own lines.
NCCL_PROBE_FALLBACK_RE = re.compile(
    r"NCCL WARN (?:Call to ibv_open_device failed|NET/IB ?: Unable to open device|"
    r"Failed to open libibverbs\.so)")


def parse_error(text: str) -> Row | None:
    """The first known error phrase in ``text``, as an ``errors`` row."""
    if "what():" in text and WHAT_RE.match(text):
        return None
    if "NCCL WARN" in text and NCCL_PROBE_FALLBACK_RE.search(text):
        return None
    hit = classify(text)
    if hit is None:
        return None
    code, kind, msg, m = hit
    groups = m.groupdict()
    row: Row = {"kind": kind, "code": code, "message": msg}
    rank = _tag_rank(text, m.start())
    if rank is not None:
        row["rank"] = rank
    if groups.get("task") and groups["task"].isdigit():
        row["rank"] = int(groups["task"])
    if groups.get("rank"):
        row["rank"] = int(groups["rank"])
    if groups.get("host") and not REDACTED_RE.match(groups["host"]):
        row["host"] = groups["host"]
    if groups.get("pid") and groups["pid"].isdigit():
        row["pid"] = int(groups["pid"])
    if code == "slurm_cancelled":
        why = (groups.get("why") or "").strip()
        if why:
            row["code"] = "slurm_" + why.lower().replace(" ", "_")
        if why != "NODE FAILURE":  # then the node named only reports it ("Node failure on …")
            row["host"] = groups["on"]
    if code == "ray_actor_died":
        if (a := RAY_ACTOR_NAME_RE.search(text, m.end())) is not None and a["pg"] == "0":
            row["rank"] = int(a["local"])
        if (a := RAY_ACTOR_PID_RE.search(text, m.end())) is not None:
            row["pid"] = int(a["pid"])
        if (a := RAY_ACTOR_IP_RE.search(text, m.end())) is not None:
            row["host"] = a["ip"]
    if groups.get("local"):
        row["message"] = f"worker --local_rank={groups['local']} {msg}"
        row["local_rank"] = int(groups["local"])  # (the launcher's subprocess: its local rank)
    if groups.get("lr"):
        row["local_rank"] = int(groups["lr"])
    paddle_what = groups.get("pw") or groups.get("pw2")
    if code == "fatal_signal" and paddle_what:
        row["code"] = (PADDLE_SIGNAL_WORDS.get(paddle_what) or SIGNAL_WORDS.get(paddle_what)
                       or "fatal_signal")
        if row["code"].startswith("SIG"):  # Paddle's words, then the signal's name
            row["message"] = f"{row['message']} ({row['code']})"
    num = groups.get("signum") or groups.get("signum2")
    if kind == "signal" and (num or groups.get("exit")):  # a launcher's signal number
        row["code"] = (signal_name(-int(num)) if num else signal_name(int(groups["exit"]))
                       ) or "fatal_signal"
    elif code == "fatal_signal" and groups.get("what"):
        what = groups["what"].replace("-", " ")
        row["code"] = SIGNAL_WORDS.get(what[:1].upper() + what[1:], "fatal_signal")
    if "host" not in row and " kernel:" in text[:m.start()]:
        # the kernel's own line under its syslog/journald header ("Sep  9 17:10:44 centos
        # kernel: Out of memory: Kill process …"): the header's host is the machine it ran on
        kh = SYSLOG_HOST_RE.search(text, 0, m.start())
        if kh:
            row["host"] = kh["host"]
    host = NCCL_HOST_RE.match(text)
    if kind == "nccl_error" and host:
        row["host"] = host["host"]
        row["pid"] = int(host["pid"])
    return row


# NCCL's own prefix: ``host:pid:tid [cudaDev] ``.
# The host may begin with a digit when it holds a letter (a container's id, 42692884fcba);
# a bare time (19:30:48 [0]) holds none. Since NCCL 2.23 a WARN line starts with its time
# (NCCL_DEBUG_TIMESTAMP_LEVELS defaults to WARN, NCCL_DEBUG_TIMESTAMP_FORMAT to "[%F %T] ",
# fractions with %Nf): "[2025-04-04 16:57:39] ip-10-0-9-191:95209:95228 [0] init.cc:416 NCCL
# WARN …" (meta-pytorch/torchtune#2556), while its INFO lines carry none. A machine named by its
# address with dashes ("10-0-4-11:62452:62548 [0] misc/ibvwrap.cc:284 NCCL WARN Call to
# ibv_modify_qp failed", turingaicloud/quickstart#6) holds no letter and is still a host.
NCCL_HOST_RE = re.compile(
    r"^\s*(?:\[20\d\d-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?\] )?"
    r"(?P<host>(?=[\w.\-]*[A-Za-z])[A-Za-z0-9][\w.\-]*|\d{1,3}(?:-\d{1,3}){3}):(?P<pid>\d+):\d+ \[\d+\] ")
# a run of digits: the ids of a process-group name, the ranks of a launcher's rank list
DIGITS_RE = re.compile(r"\d+")


def _tag_rank(text: str, end: int) -> int | None:
    """The global rank named by the ``[… Rank N]`` tag closest before ``end``. A tag of a
    non-default process group names a group-local rank, which is not a global one: None."""
    tags = list(RANK_TAG_RE.finditer(text, 0, end))
    tag = tags[-1] if tags else None
    if tag is None:
        return None
    pg = tag["pg"]
    if pg and "default_pg" not in pg:
        ids = DIGITS_RE.findall(pg)
        if ids and ids[0] != "0":
            return None
    return int(tag["rank"])

# --- OOM figures ---------------------------------------------------------------------------------

SIZE = r"(?P<{}>\d+(?:\.\d+)?) (?P<{}_u>[KMGT]i?B|bytes)"
OOM_OLD_RE = re.compile(
    r"Tried to allocate " + SIZE.format("tried", "tried") + r" \(GPU (?P<gpu>\d+); "
    + SIZE.format("total", "total") + r" total capacity; " + SIZE.format("alloc", "alloc")
    + r" already allocated; " + SIZE.format("free", "free") + r" free; "
    + SIZE.format("reserved", "reserved") + r" reserved in total by PyTorch"
)
OOM_NEW_RE = re.compile(
    r"Tried to allocate " + SIZE.format("tried", "tried") + r"\. GPU (?P<gpu>\d+) has a total "
    r"capacity of " + SIZE.format("total", "total") + r" of which " + SIZE.format("free", "free")
    + r" is free\.(?:.*?Of the allocated memory " + SIZE.format("alloc", "alloc")
    + r" is allocated by PyTorch, and " + SIZE.format("unalloc", "unalloc")
    + r" is reserved by PyTorch but unallocated)?"
)
UNIT_GIB = {"B": 1 / 2**30, "bytes": 1 / 2**30, "KiB": 1 / 2**20, "KB": 1 / 2**20,
            "MiB": 1 / 2**10, "MB": 1 / 2**10, "GiB": 1.0, "GB": 1.0, "TiB": 2**10, "TB": 2**10}


def oom_figures(text: str) -> dict[str, Any]:
    """The caching allocator's numbers from a CUDA OOM message, in GiB: tried, total, free,
    allocated (by PyTorch), reserved_unallocated (cached but unused: fragmentation), gpu."""
    m = OOM_OLD_RE.search(text) or OOM_NEW_RE.search(text)
    if not m:
        return {}
    g = m.groupdict()

    def gib(name: str) -> float | None:
        v = to_float(g.get(name))
        return None if v is None else round(v * UNIT_GIB.get(g.get(f"{name}_u") or "GiB", 1.0), 3)

    out: dict[str, Any] = {"gpu": int(g["gpu"]), "tried": gib("tried"), "total": gib("total"),
                           "free": gib("free"), "allocated": gib("alloc")}
    if g.get("reserved") is not None:
        res, alloc = gib("reserved"), out["allocated"]
        out["reserved_unallocated"] = None if res is None or alloc is None else round(res - alloc, 3)
    else:
        out["reserved_unallocated"] = gib("unalloc")
    return out


# --- c10 exception blocks ------------------------------------------------------------------------

TERMINATE_RE = re.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
RAISED_RE = re.compile(r"^\s*Exception raised from (?P<fn>.+?) at (?P<site>\S+?)(?: \(most|$)")
FRAME_RE = re.compile(r"^\s*frame #\d+: (?P<fn>.+?)(?: \+ 0x[0-9a-f]+)? "
                      r"\((?:0x[0-9a-f]+ in )?(?P<lib>[^()]*)\)\s*$")
ADVICE = ("CUDA kernel errors might be asynchronously reported", "For debugging consider passing",
          "Compile with `TORCH_USE_CUDA_DSA`", "Search for `cudaErrorLaunchFailure'",
          "Device-side assertions")
MAX_FRAMES = 64
# what is left of a type name when several processes' terminate lines interleave:
# "c10::DistBackendError'", "ce of 'c10::DistBackendErrorc10::DistBackendError'", "'"
# (huggingface/open-r1#620)
TYPE_SHARD_RE = re.compile(r"^(?:[\w :']*::\w+'|[\w:]*')$")


class CudaErrorBlock:
    """A c10 exception block: ``terminate called after throwing an instance of 'c10::…'``, its
    ``what():`` message, ``Exception raised from … at …`` and the ``frame #N`` lines. One
    ``errors`` row per block, classified by its message, with the frames (innermost first) and
    the raising site; the row points at the what() line."""

    tables = ("errors",)  # what it fills (``load(tables=…)`` leaves it out otherwise)
    # Every line that can start a record holds one of these; idle, other lines are ignored.
    needles: tuple[str, ...] = ("terminate called after", "what():")
    section: str | None = None  # "c10" while inside a block

    def __init__(self) -> None:
        self.section: str | None = None
        self.rec: dict[str, Any] | None = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line of the stream."""
        out: list[tuple[str, Row]] = []
        if self.rec is not None:
            if self._extend(text, ctx):
                return out
            out += self._flush()
        if "terminate called after" in text:
            m = TERMINATE_RE.search(text)
            if m:
                self.rec = {"type": m["type"], "ctx": ctx, "msg": None, "frames": []}
                self.section = "c10"
                return out
        if "what():" in text:
            m = WHAT_RE.match(text)
            if m:
                self.rec = {"type": None, "ctx": ctx, "msg": m["msg"].strip(), "frames": []}
                self.section = "c10"
        return out

    def _extend(self, text: str, ctx: object) -> bool:
        rec = self.rec
        assert rec is not None
        s = text.strip()
        if not s or s.startswith(ADVICE):
            return True
        if "what():" in text and rec["msg"] is None:
            m = WHAT_RE.match(text)
            if m:
                rec["msg"], rec["ctx"] = m["msg"].strip(), ctx
                return True
        if rec["msg"] is None and ("terminate called after" in text or TYPE_SHARD_RE.match(s)):
            # another process aborting at the same moment: its terminate line (or a shard of
            # the interleaved type names) lands before the what() they share
            if rec["type"] is None or "'" in rec["type"]:
                m = TERMINATE_RE.search(text)
                rec["type"] = m["type"] if m else rec["type"]
            return True
        if s.startswith("frame #"):
            m = FRAME_RE.match(text)
            if m and len(rec["frames"]) < MAX_FRAMES:
                lib = m["lib"].rsplit("/", 1)[-1]
                rec["frames"].append(f"{m['fn']} ({lib})" if lib else m["fn"])
            return True
        if s.startswith("Exception raised from"):
            m = RAISED_RE.match(text)
            if m:
                rec["raised"] = f"{m['fn']} at {m['site']}"
            return True
        return False

    def close(self) -> list[tuple[str, Row]]:
        """End of stream."""
        return self._flush()

    def _flush(self) -> list[tuple[str, Row]]:
        rec, self.rec = self.rec, None
        self.section = None
        if rec is None:
            return []
        msg = rec["msg"] or ""
        hit = classify(msg) if msg else None
        ctype = rec["type"] or ""
        if hit is not None:
            code, kind, message, m = hit
        elif "CUDAError" in ctype:
            code, kind, message = "cuda_error", "cuda_error", msg or f"{ctype} thrown"
        elif "Watchdog caught collective operation timeout" in msg:
            code, kind, message = "collective_timeout", "nccl_error", msg[:MAX_MESSAGE_CHARS]
        else:
            code, kind = "terminate", "signal"
            message = (f"terminate called after throwing an instance of '{ctype}'"
                       + (f": {msg[:MAX_MESSAGE_CHARS]}" if msg else ""))
        frames = list(rec["frames"])
        if rec.get("raised"):
            frames.insert(0, f"raised from {rec['raised']}")
        row: Row = {"kind": kind, "code": code, "message": message, "frames": frames or None,
                    "_ctx": rec["ctx"]}
        rank = _tag_rank(msg, len(msg))
        if rank is not None:
            row["rank"] = rank
        return [("errors", row)]


LAST_ERROR = "Last error:"


class LastErrorBlock:
    """The text torch prints under "Last error:" in an NCCL error: NCCL's own words for what
    failed, which the generic ``ncclXxx: This usually reflects …`` line above it does not say
    (traindoc's drill_nccl_duplicate_gpu, torch 2.11 / NCCL 2.28: "ncclInvalidUsage: This
    usually reflects invalid usage of NCCL library." / "Last error:" / "Duplicate GPU detected :
    rank 1 and rank 0 both on CUDA device 60"; meta-pytorch/torchtune#2556 "socketProgress:
    Connection closed by remote peer …"). One ``nccl_last_error_text`` row at the text's line,
    read per writer (another rank's traceback may come between the two lines). "Cuda failure
    …" is left to its own pattern (``nccl_last_error``). The row is context for the error it
    explains (``diagnose.gpu_crash.events``), never a failure of its own."""

    tables = ("errors",)
    needles: tuple[str, ...] = (LAST_ERROR,)
    section: str | None = None  # "last_error" between the two lines

    def __init__(self) -> None:
        self.section: str | None = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line of the writer."""
        s = text.strip()
        if self.section is None:
            if s == LAST_ERROR:
                self.section = "last_error"
            return []
        if not s or s == LAST_ERROR:  # (a blank line between, or the words again: still open)
            return []
        self.section = None
        if "Cuda failure " in s:
            return []
        return [("errors", {"kind": "nccl_error", "code": "nccl_last_error_text",
                            "message": s[:MAX_MESSAGE_CHARS], "_ctx": ctx})]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: a "Last error:" with nothing under it says nothing."""
        self.section = None
        return []


# A C/CUDA trainer's check macro: "[CUDA ERROR] at file train_gpt2.cu:754:" with the error
# string on the next line (llm.c's cudaCheck; its cudnnCheck "[CUDNN ERROR] at file
# cudnn_att.cpp:141:", llm.c#492; forks print "… at file kernel.cu(line 42):" and
# "cudaErrorIllegalAddress: an illegal memory access …" as the message).
CHECK_HEADER_RE = re.compile(
    r"\[(?P<lib>CUDA|CUDNN|cuDNN|CUBLAS|cuBLAS|NCCL) ERROR\] at file "
    r"(?P<site>[^\s:()]+(?::\d+|\(line \d+\))):?\s*(?P<msg>\S.*)?$")

# What the check's message says, when it is more than a CUDA error: cudaGetErrorString's "out of
# memory" (llm.c's cudaMalloc of its activations, HectorFCardenas/llm.c gpt2_train.11672072.log)
# or cudaGetErrorName's cudaErrorMemoryAllocation; an uncorrectable ECC error. (kind, code)
CHECK_MESSAGE_KINDS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^(?:cudaErrorMemoryAllocation: )?out of memory\b|\bcudaErrorMemoryAllocation\b"),
     "oom", "cuda_oom"),
    (re.compile(r"uncorrectable ECC error encountered|\bcudaErrorECCUncorrectable\b"),
     "ecc", "cuda_ecc_uncorrectable"),
)


class CheckMacroError:
    """A ``[CUDA ERROR] at file F:L:`` header and its message line: one ``errors`` row, kind
    cuda_error (nccl_error for NCCL's; oom or ecc where ``CHECK_MESSAGE_KINDS`` reads the CUDA
    error string so), the message the error string, the site in ``frames``."""

    tables = ("errors",)
    needles: tuple[str, ...] = (" ERROR] at file ",)
    section: str | None = None  # "check" while waiting for the message line

    def __init__(self) -> None:
        self.section: str | None = None
        self.rec: dict[str, Any] | None = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line of the stream."""
        if self.rec is not None:
            if not text.strip():
                return []
            self.rec["msg"] = text.strip()
            return self._flush()
        m = CHECK_HEADER_RE.search(text) if " ERROR] at file " in text else None
        if m is None:
            return []
        self.rec = {"lib": m["lib"], "site": m["site"], "ctx": ctx, "msg": m["msg"]}
        if m["msg"]:
            return self._flush()
        self.section = "check"
        return []

    def close(self) -> list[tuple[str, Row]]:
        """End of stream."""
        return self._flush()

    def _flush(self) -> list[tuple[str, Row]]:
        rec, self.rec = self.rec, None
        self.section = None
        if rec is None:
            return []
        lib = rec["lib"].upper()
        kind = "nccl_error" if lib == "NCCL" else "cuda_error"
        code = f"{lib.lower()}_check"
        said = next(((k, c) for rx, k, c in CHECK_MESSAGE_KINDS
                     if lib == "CUDA" and rec["msg"] and rx.search(rec["msg"])), None)
        if said is not None:
            kind, code = said
        msg = (rec["msg"] or f"[{rec['lib']} ERROR] at file {rec['site']}")[:MAX_MESSAGE_CHARS]
        row: Row = {"kind": kind, "code": code, "message": msg,
                    "frames": [f"checked at {rec['site']}"], "_ctx": rec["ctx"]}
        return [("errors", row)]


HYDRA_HEADER = "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"
# the frame's lines that say who and how (the others: "CLEANING UP REMAINING PROCESSES", "YOU CAN
# IGNORE THE BELOW CLEANUP MESSAGES", the rules of "=" around it)
HYDRA_FIELD_RE = re.compile(r"^=*\s*(?P<f>(?:RANK \d+ )?PID \d+ RUNNING AT \S+|EXIT CODE: -?\d+|"
                            r"KILLED BY SIGNAL: \d+.*?|EXIT STATUS: -?\d+)\s*$")
HYDRA_EXIT_STRING = "YOUR APPLICATION TERMINATED WITH THE EXIT STRING:"
HYDRA_WHO_RE = re.compile(r"(?:RANK (?P<rank>\d+) )?PID (?P<pid>\d+) RUNNING AT (?P<host>\S+)")
HYDRA_CODE_RE = re.compile(r"EXIT (?:CODE|STATUS): (?P<code>-?\d+)")
HYDRA_MAX_LINES = 12  # the frame and the exit string after it


class HydraTermination:
    """MPICH hydra's and Intel MPI's frame around a rank's death ("BAD TERMINATION OF ONE OF
    YOUR APPLICATION PROCESSES", then "PID 9665 RUNNING AT host" or "RANK 6 PID … RUNNING AT
    host", "EXIT CODE: 139" or "KILLED BY SIGNAL: 9 (Killed)", and after the frame hydra's "YOUR
    APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)"): joined into one line of
    ``LAUNCHER_DEATHS``' grammar, an ``errors`` row of kind signal; an exit without a signal is
    an ``exits`` row (rank, pid, host, exit code)."""

    tables = ("errors", "exits")
    needles: tuple[str, ...] = (HYDRA_HEADER,)
    section: str | None = None  # "hydra" inside the frame

    def __init__(self) -> None:
        self.section: str | None = None
        self.parts: list[str] = []
        self.ctx: object = None
        self.seen = 0

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line of the stream."""
        if self.section is None:
            if HYDRA_HEADER not in text:
                return []
            self.section, self.parts, self.ctx, self.seen = "hydra", [], ctx, 0
            return []
        if HYDRA_HEADER in text:  # the next rank's frame (Intel MPI prints one a rank)
            out = self._flush()
            return out + self.feed(text, ctx)
        self.seen += 1
        line = text.strip()
        if line.startswith(HYDRA_EXIT_STRING):
            self.parts.append("EXIT STRING: " + line[len(HYDRA_EXIT_STRING):].strip())
            return self._flush()
        m = HYDRA_FIELD_RE.match(line)
        if m:
            self.parts.append(m["f"])
        elif line and not line.startswith("=") or self.seen > HYDRA_MAX_LINES:
            return self._flush()
        return []

    def close(self) -> list[tuple[str, Row]]:
        """End of stream."""
        return self._flush()

    def _flush(self) -> list[tuple[str, Row]]:
        parts, self.parts = self.parts, []
        self.section = None
        who = next((m for p in parts if (m := HYDRA_WHO_RE.fullmatch(p))), None)
        if who is None:
            return []
        text = f"{HYDRA_HEADER}: {', '.join(parts)}"
        row = parse_error(text)
        if row is not None and row.get("kind") == "signal":
            row["_ctx"] = self.ctx
            return [("errors", row)]
        code = next((int(m["code"]) for p in parts if (m := HYDRA_CODE_RE.fullmatch(p))), None)
        ex: Row = {"pid": int(who["pid"]), "host": who["host"], "_ctx": self.ctx}
        if who["rank"] is not None:
            ex["rank"] = int(who["rank"])
        if code is not None:
            ex["exitcode"] = code
        return [("exits", ex)]


# --- process exits (launchers, schedulers) -------------------------------------------------------

# Paddle's handler names a signal by its POSIX description
PADDLE_SIGNAL_WORDS = {"Termination signal": "SIGTERM", "Process abort signal": "SIGABRT",
                       "Erroneous arithmetic operation": "SIGFPE", "Interrupt": "SIGINT"}
SIGNAL_WORDS = {"Killed": "SIGKILL", "Terminated": "SIGTERM", "Segmentation fault": "SIGSEGV",
                "Aborted": "SIGABRT", "Bus error": "SIGBUS", "Floating point exception": "SIGFPE",
                "Illegal instruction": "SIGILL", "Hangup": "SIGHUP", "Interrupt": "SIGINT"}
_SIG_ALT = "|".join(SIGNAL_WORDS)

TORCHRUN_FAILED_RE = re.compile(
    r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<lr>\d+) \(pid: (?P<pid>\d+)\) of binary"
)
# (a terminal may wrap the command list: its last line is "] exits with return code = -9")
DS_EXIT_RE = re.compile(r"(?:(?P<cmd>\[[^\]]*\])|^\s*\]) exits with return code = (?P<code>-?\d+)")
DS_LOCAL_RANK_RE = re.compile(r"--local_rank=(?P<lr>\d+)")
SRUN_EXIT_RE = re.compile(
    r"srun: error: (?P<host>[\w.\-]+): tasks? (?P<tasks>[\d,\-]+): (?:Exited with exit code "
    rf"(?P<code>\d+)|(?P<word>{_SIG_ALT}))"
)
# A process's exit status as a container runtime, CI runner or job wrapper reports it ("Exit
# code: 137", "Job exited with error code 137", "learner_exit_code: 137", Kubernetes' "Exit Code:
# 137", "exit status 137", "exit with status code 137"): read only above 128, a death by signal
# 128+N (a plain "exit code 1" says nothing the worker's own error does not).
# Above 240: a launcher's -N seen as the unsigned byte 256-N ("ssh exited with exit code 247",
# "Step 1 exited with non-zero status 249": torchrun.signal_name).
EXIT_STATUS_RE = re.compile(
    r"(?<![A-Za-z])(?P<said>(?:[Ee]xit(?:ed)?(?: with)?(?: error| status| non-zero status)?"
    r"(?: [Cc]ode)?|exit status|[Ee]xit_code)[:=]?\s*(?P<code>1[3-9]\d|24\d|25[0-2]))\b")
# torch.multiprocessing.spawn (every version): "process 0 terminated with exit code 1"
# (Plachtaa/VITS-fast-fine-tuning#284); its process index is the rank as mp.spawn examples pass
# it (the signal form, "… terminated with signal SIGKILL", is an ``errors`` row: spawn_signal)
SPAWN_EXIT_RE = re.compile(r"process (?P<rank>\d+) terminated with exit code (?P<code>-?\d+)")
# the same launcher re-raising a process's exception, its traceback after this header: torch
# <= 1.8's "Exception: \n\n-- Process 3 terminated with the following error:" (lkeab/BCNet#53),
# 1.9+'s ProcessRaisedException with the same header (lucasjinreal/yolov7_d2#66),
# paddle.distributed.spawn's "Process 0 terminated with the following error:" between dashed
# rules. Its process index is the local rank of the process on its machine (detectron2's
# launch: machine_rank × GPUs per machine + index); the rows of the traceback after it are
# that process's (``diagnose.common.spawned_ranks``)
SPAWN_RAISED = "terminated with the following error:"
SPAWN_RAISED_RE = re.compile(r"^\s*(?:-- )?Process (?P<lr>\d+) terminated with the following "
                             r"error:\s*$")
# The first process of an MPI or Horovod job to exit non-zero, as its launcher names it after
# the job ends: Open MPI's "mpirun detected that one or more processes exited with non-zero
# status, thus causing the job to be terminated. The first process to do so was:" block with
# "  Process name: [[29973,1],0]" (jobid, step, rank: horovod/horovod#1421) and "  Exit code:
# 1" on the next line; Horovod's gloo runner's RuntimeError saying the same with "Process name:
# 1" (determined-ai/determined#3275); Open MPI's "mpirun has exited due to process rank 0 with
# PID 24015 on" (its node on the next line: open-mpi/ompi#6379). The rank is MPI's world rank;
# each names the process whose exit ended the job, the launcher's root cause.
MPI_FIRST_EXIT_RE = re.compile(
    r"(?:^|\|\|)\s*Process name:\s+(?:\[\[\d+,\d+\],(?P<rank>\d+)\]|(?P<gloo>\d+))\s*+"
    r"(?:Exit code:\s*+(?P<code>-?\d+)\s*+)?$")
# the block's next line, joined to its "Process name:" line (``exit_incomplete``)
MPI_EXIT_CODE_RE = re.compile(r"^\s*+Exit code:\s*+-?\d+\s*+$")


def exit_incomplete(text: str) -> bool:
    """Open MPI's "Process name: [[50371,1],0]" line, whose "Exit code: 1" follows."""
    return "Process name:" in text and "Exit code" not in text \
        and MPI_FIRST_EXIT_RE.search(text) is not None


def exit_continues(so_far: str, body: str) -> bool:
    """The "Exit code: N" line under Open MPI's "Process name:" line."""
    return MPI_EXIT_CODE_RE.match(body) is not None
MPI_EXITED_DUE_RE = re.compile(
    r"(?:mpirun|mpiexec|prterun|prte) has exited due to process rank (?P<rank>\d+) with PID "
    r"(?P<pid>\d+)")
# Horovod's gloo runner, one line per process that ended non-zero: "Process 0 exit with status
# code 137." (horovod/horovod#3472, #2097: "Process 3 exit with status code 250.")
GLOO_PROCESS_EXIT_RE = re.compile(
    r"^\s*Process (?P<rank>\d+) exit with status code (?P<code>-?\d+)\.?\s*$")
# HPE Cray PALS (PBS's mpiexec on Aurora, Polaris, Sirius) on a rank that exited by itself, beside
# its "rank N died from signal S" for the ones it then killed (``LAUNCHER_DEATHS``):
# "x4512c5s2b0n0: rank 6 exited with code 1" (saforem2/mmm's Aurora notes),
# "x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov: rank 0 exited with code 134"
PALS_EXIT_RE = re.compile(r"(?:^|\s)(?:(?P<host>[A-Za-z0-9][\w.\-]*): )?rank (?P<rank>\d+) "
                          r"exited with code (?P<code>\d+)\b")
# Paddle's launchers (module docstring): the old one names global ranks, no exit code; the new
# one a container's rank on its node and its exit code
PADDLE_ABORT_RE = re.compile(
    r"ABORT!!! Out of all \d+ trainers, the trainer process with rank=?\[(?P<ranks>[\d,\s]*)\]"
    r" was aborted")
PADDLE_CONTAINER_RE = re.compile(
    r"Container rank (?P<lr>\d+) status failed cmd \[.*?\] code (?P<code>-?\d+)")
SHELL_KILLED_RE = re.compile(
    rf"line \d+:\s+(?P<pid>\d+) (?P<word>{_SIG_ALT})(?: \(core dumped\))?\s+\S"
)

# The shell's own report of its foreground job's death by SIGKILL, alone on its line ("Killed"
# after the kernel's OOM killer or a kill -9): nothing else in the log may say it. Not
# "Aborted (core dumped)" and the like, which follow the error that caused them ("terminate
# called …") and would only repeat it; not "Terminated", "Hangup", "Interrupt": those are how a
# teardown or a Ctrl-C reads.
SHELL_STATUS_WORDS = ("Killed",)
# The same word glued to the end of a tqdm bar the job left without its newline ("…, loss=3.71,
# lr=0.01]Killed": gc625/CenterPoint-KITTI tools/nohup.out, the OOM killer under nohup): the bar's
# closing bracket, its count of a total and its rate before it
SHELL_STATUS_RE = re.compile(
    rf"^\s*(?P<word>{'|'.join(SHELL_STATUS_WORDS)})(?: \(core dumped\))?\s*$"
    rf"|\d+/\d+ \[[^\]]*(?:it/s|s/it)[^\]]*\](?P<glued>{'|'.join(SHELL_STATUS_WORDS)})\s*$")

# Hydra's run_and_report (hydra/_internal/utils.py): an exception out of a @hydra.main job is
# printed, trimmed, followed by this line, and the process exits with sys.exit(1) — the
# script's own death by its exception, whatever frames the trimmed traceback kept
HYDRA_EXIT_RE = re.compile(r"Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack"
                           r" trace")


def parse_exit(text: str) -> Row | list[Row] | None:
    """A launcher's or scheduler's line saying a worker process exited (exit code or signal;
    one row per rank where it names several)."""
    m = TORCHRUN_FAILED_RE.search(text)
    if m:
        code = int(m["code"])
        return {"local_rank": int(m["lr"]), "pid": int(m["pid"]), "exitcode": code,
                "signal": signal_name(code)}
    m = DS_EXIT_RE.search(text)
    if m:
        code = int(m["code"])
        lr = DS_LOCAL_RANK_RE.search(m["cmd"]) if m["cmd"] else None
        return {"local_rank": int(lr["lr"]) if lr else None, "exitcode": code,
                "signal": signal_name(code)}
    m = SRUN_EXIT_RE.search(text)
    if m:
        tasks = m["tasks"]
        task = int(tasks) if tasks.isdigit() else None
        row: Row = {"host": m["host"], "rank": task, "task": task}
        if m["code"] is not None:
            row["exitcode"] = int(m["code"])
            row["signal"] = signal_name(int(m["code"]))
        else:
            row["signal"] = SIGNAL_WORDS[m["word"]]
        return row
    m = SPAWN_EXIT_RE.search(text)
    if m:
        code = int(m["code"])
        return {"rank": int(m["rank"]), "exitcode": code, "signal": signal_name(code)}
    m = SPAWN_RAISED_RE.match(text)
    if m:
        return {"local_rank": int(m["lr"]), "exitcode": 1}  # spawn's _wrap: sys.exit(1)
    m = MPI_FIRST_EXIT_RE.search(text)
    if m:
        first: Row = {"rank": int(m["rank"] or m["gloo"]), "root_cause": True}
        if m["code"] is not None:
            first["exitcode"] = int(m["code"])
            first["signal"] = signal_name(int(m["code"]))
        return first
    m = MPI_EXITED_DUE_RE.search(text)
    if m:
        return {"rank": int(m["rank"]), "pid": int(m["pid"]), "root_cause": True}
    m = GLOO_PROCESS_EXIT_RE.match(text)
    if m:
        code = int(m["code"])
        return {"rank": int(m["rank"]), "exitcode": code, "signal": signal_name(code)}
    m = PALS_EXIT_RE.search(text)
    if m:
        code = int(m["code"])
        return {"rank": int(m["rank"]), "host": m["host"], "exitcode": code,
                "signal": signal_name(code)}
    m = PADDLE_ABORT_RE.search(text)
    if m:
        ranks = [int(r) for r in DIGITS_RE.findall(m["ranks"])]
        return [{"rank": r, "_named_rank": True} for r in ranks] or None
    m = PADDLE_CONTAINER_RE.search(text)
    if m:
        code = int(m["code"])
        return {"local_rank": int(m["lr"]), "exitcode": code, "signal": signal_name(code)}
    m = SHELL_KILLED_RE.search(text)
    if m:
        return {"pid": int(m["pid"]), "signal": SIGNAL_WORDS[m["word"]]}
    m = SHELL_STATUS_RE.search(text)
    if m:
        return {"signal": SIGNAL_WORDS[m["word"] or m["glued"]]}
    if HYDRA_EXIT_RE.search(text):
        return {"exitcode": 1}
    m = EXIT_STATUS_RE.search(text)
    if m and signal_name(int(m["code"])) is not None:
        return {"exitcode": int(m["code"]), "signal": signal_name(int(m["code"]))}
    return None


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "nccl_errors",
        "errors",
        (*LINE_NEEDLES, STUCK_NEEDLE),
        parse_error,
        incomplete=error_incomplete,
        continues=error_continues,
        example="[rank3]:[E708 01:47:23.097674411 ProcessGroupNCCL.cpp:681] [Rank 3] Some NCCL "
        "operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, "
        "subsequent GPU operations might run on corrupted/incomplete data.",
    ),
    LineParser(
        "process_exits",
        "exits",
        ("failed (exitcode", "exits with return code", "srun: error:", *SIGNAL_WORDS,
         "trainer process with rank", "status failed cmd",
         "xit code", "xit Code", "xit status", "xit_code", "error code", "status code",
         "HYDRA_FULL_ERROR=1", SPAWN_RAISED, "Process name:", "has exited due to process rank",
         "exited with code"),
        parse_exit,
        incomplete=exit_incomplete,
        continues=exit_continues,
        example="E1121 23:47:49.404000 4885 torch/distributed/elastic/multiprocessing/api.py:1002]"
        " failed (exitcode: -9) local_rank: 1 (pid: 4914) of binary: /tmp/venv/bin/python3",
    ),
)
