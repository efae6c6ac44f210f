"""The NVIDIA Xid catalogue: what each code means and what an on-call engineer does next.

``CATALOG`` follows NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors, "Analyzing Xid
Errors with the Xid Catalog": mnemonic, description, immediate resolution bucket) for the codes
a training job meets; ``scope`` and ``next_step`` are this project's reading of those buckets.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class XidInfo:
    """One Xid code: what it means and what an on-call engineer does next.

    ``origin``: hardware | driver | application | informational.
    ``resolution``: NVIDIA's immediate-action bucket (RESTART_APP, RESET_GPU, RESTART_BM, …).
    ``scope``: what to take out of service: none | gpu (reset it) | node (drain and reboot).
    ``cascade``: the code follows another Xid (it is a consequence, not a cause).
    """

    code: int
    mnemonic: str
    meaning: str
    origin: str
    resolution: str
    scope: str
    next_step: str
    category: str = "gpu"  # gpu | ecc | nvlink | pcie | memory
    cascade: bool = False


_DIAG2 = "dcgmi diag -r 2"
_DIAG3 = "dcgmi diag -r 3"

CATALOG: dict[int, XidInfo] = {x.code: x for x in (
    XidInfo(8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", "driver",
            "RESTART_APP", "none", f"restart the job; if it recurs on this GPU: {_DIAG2}"),
    XidInfo(13, "ROBUST_CHANNEL_GR_EXCEPTION", "Graphics engine exception (usually an "
            "out-of-bounds access in a kernel)", "application", "RESTART_APP", "none",
            "rerun with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer to find the kernel; only if "
            f"it follows this GPU across jobs: {_DIAG2}"),
    XidInfo(31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault (illegal "
            "address)", "application", "RESTART_APP", "none",
            "an illegal memory access in a kernel: rerun with CUDA_LAUNCH_BLOCKING=1 / "
            f"compute-sanitizer; only if it follows this GPU across jobs: {_DIAG2}"),
    XidInfo(32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream",
            "driver", "RESTART_APP", "none",
            f"restart; if repeated, check PCIe errors (lspci -vvv, dmesg AER) and run {_DIAG2}",
            category="pcie"),
    XidInfo(43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing (the "
            "channel was reset after an earlier fault)", "application", "IGNORE", "none",
            "follows another fault of the same process (look for Xid 13/31/ECC just before)",
            cascade=True),
    XidInfo(45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup after an earlier "
            "error (the process was killed)", "informational", "IGNORE", "none",
            "follow the Xid that came before it; alone it means the process was killed",
            cascade=True),
    XidInfo(46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", "driver",
            "RESET_GPU", "gpu", f"drain, reset the GPU (nvidia-smi -r -i <gpu>), then {_DIAG2}"),
    XidInfo(48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double-bit (uncorrectable) ECC error",
            "hardware", "WORKFLOW_XID_48", "gpu",
            "drain, reset the GPU, check nvidia-smi -q -d ECC,ROW_REMAPPER (pending remap, "
            f"remap failure), then {_DIAG3}; replace (RMA) if it repeats", category="ecc"),
    XidInfo(61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint/warning", "driver",
            "RESET_GPU", "gpu", f"drain, reset the GPU, update driver/firmware, {_DIAG2}"),
    XidInfo(62, "PMU_HALT_ERROR", "Internal micro-controller halt", "hardware", "RESET_GPU",
            "gpu", f"drain, reset the GPU, then {_DIAG3}"),
    XidInfo(63, "INFOROM_DRAM_RETIREMENT_EVENT", "ECC page retirement / row remapping "
            "recorded (takes effect at the next GPU reset)", "informational", "IGNORE", "none",
            "reset the GPU when the job is down so the remap is applied; nvidia-smi -q -d "
            "ROW_REMAPPER shows 'Pending: Yes' until then", category="ecc"),
    XidInfo(64, "INFOROM_DRAM_RETIREMENT_FAILURE", "ECC page retirement / row remapping "
            "failure", "hardware", "RESET_GPU", "gpu",
            "drain, reset, check nvidia-smi -q -d ROW_REMAPPER ('Remapping Failure Occurred: "
            f"Yes' means replace the GPU), {_DIAG3}", category="ecc"),
    XidInfo(74, "NVLINK_ERROR", "NVLink error", "hardware", "WORKFLOW_NVLINK_ERR", "node",
            "drain; nvidia-smi nvlink -e (replay/recovery/CRC counters), nvidia-smi nvlink "
            f"--status, then {_DIAG3}; reseat/replace the board if links stay down",
            category="nvlink"),
    XidInfo(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus",
            "hardware", "RESTART_BM", "node",
            "drain the node and reboot it; nvidia-smi -q (is the GPU still listed?), check "
            "PCIe/power/thermals (dmesg AER, ipmitool sel list), then dcgmi diag -r 3; if it "
            "happens again on the same GPU, run the field diagnostic and RMA", category="pcie"),
    XidInfo(92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", "hardware",
            "IGNORE", "none", "watch nvidia-smi -q -d ECC; plan a reset/replacement if the "
            "rate keeps rising", category="ecc"),
    XidInfo(94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained ECC error (only the process using "
            "that memory was killed)", "hardware", "RESTART_APP", "gpu",
            "restart the job; reset the GPU when convenient so the row remap is applied; "
            "nvidia-smi -q -d ECC,ROW_REMAPPER", category="ecc"),
    XidInfo(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained ECC error (every process on "
            "the GPU is affected)", "hardware", "RESET_GPU", "gpu",
            "drain, reset the GPU (nvidia-smi -r -i <gpu>), nvidia-smi -q -d ECC,ROW_REMAPPER, "
            f"then {_DIAG3}", category="ecc"),
    XidInfo(109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context switch timeout", "driver",
            "RESET_GPU", "gpu", f"drain, reset the GPU, then {_DIAG2}"),
    XidInfo(119, "GSP_RPC_TIMEOUT", "GSP (GPU System Processor) RPC timeout", "driver",
            "RESET_GPU", "gpu", "drain, reset the GPU (or reboot), update driver/firmware; "
            f"{_DIAG2} afterwards"),
    XidInfo(120, "GSP_ERROR", "GSP error", "driver", "RESET_GPU", "gpu",
            f"drain, reset the GPU, update driver/firmware, {_DIAG2}"),
    XidInfo(136, "ALI_TRAINING_FAIL", "NVLink link training failed", "hardware", "RESET_GPU",
            "node", f"drain, reset; nvidia-smi nvlink --status; {_DIAG3}", category="nvlink"),
    XidInfo(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "Unrecovered ECC error", "hardware",
            "RESET_GPU", "gpu", f"drain, reset the GPU, {_DIAG3}; RMA if it repeats",
            category="ecc"),
    XidInfo(143, "GPU_INIT_ERROR", "GPU initialization error", "hardware", "RESET_GPU", "node",
            f"drain, reboot, {_DIAG3}"),
    XidInfo(154, "GPU_RECOVERY_ACTION_CHANGED", "The driver states the recovery the GPU needs "
            "(no action needed, GPU Reset Required, Node Reboot Required, Drain P2P, Drain and Reset)",
            "informational", "XID_154", "none",
            "do what the line asks (reset the GPU or reboot the node)", cascade=True),
)}
# NVLink5 (Blackwell) error family: decode the intrinfo with NVIDIA's sheet; drain like Xid 74.
for _code in range(144, 151):
    CATALOG[_code] = XidInfo(_code, "NVLINK5_ERROR", "NVLink5 error", "hardware",
                             "WORKFLOW_NVLINK5_ERR", "node",
                             f"drain; nvidia-smi nvlink -e and --status; {_DIAG3}",
                             category="nvlink")


def xid_info(code: int | None) -> XidInfo:
    """The catalog entry for ``code`` (an 'unlisted Xid' entry when unknown)."""
    if code is not None and code in CATALOG:
        return CATALOG[code]
    return XidInfo(code or 0, "UNLISTED", "Xid not in this catalog", "driver", "CONTACT_SUPPORT",
                   "gpu", "look the code up in NVIDIA's Xid catalog; nvidia-smi -q; "
                   f"{_DIAG2}")
