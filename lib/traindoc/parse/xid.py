"""NVIDIA driver Xid events (dmesg, journalctl, syslog) into the ``errors`` table, and the Xid
catalog: what each code means and what to do about it.

Wordings (the driver's ``NVRM:`` kernel messages; examples as collected by leptonai/gpud's Xid
matcher tests and NVIDIA/open-gpu-kernel-modules issues):

- ``NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.``
  (R535+ names the process), ``NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.``
  (older), ``NVRM: Xid (0000:03:00): 14, Channel 00000001`` (no ``PCI:``),
  ``NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset
  gpu to activate.``, ``NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0
  (None) to 0x4 (Drain and Reset)``.
- A fall off the bus without an Xid line: ``NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.``,
  or the probe's ``NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system
  has fallen off the bus and is not responding to commands.`` (often wrapped over three
  ``NVRM:`` lines; the last one is enough).
- A GPU the driver lost, as ``nvidia-smi`` says it: ``Unable to determine the device handle for
  GPU0000:03:00.0: Unknown Error`` (kind ``xid``, code ``gpu_lost``: no Xid number is claimed).
- Prefixes: dmesg ``[ 1843.308145] ``, ``dmesg -T`` ``[Tue May 14 03:12:09 2024] ``, syslog and
  journalctl ``May 14 03:12:09 node-2 kernel: ``, journalctl ``-o short-iso``
  ``2024-05-14T03:12:09+0000 node-2 kernel: ``, pdsh ``node-2: `` (the loader strips that one).

``CATALOG`` follows NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors, "Analyzing Xid
Errors with the Xid Catalog": mnemonic, description, immediate resolution bucket) for the codes
a training job meets; ``scope`` and ``next_step`` are this project's reading of those buckets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from .base import LineParser, Row


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


# --- parsing -----------------------------------------------------------------------------------

XID_RE = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\)"
    r":\s*(?P<code>\d+),\s*(?P<rest>.*)$"
)
PID_NAME_RE = re.compile(r"^pid=(?:'?(?P<pid>\d+|<unknown>)'?),\s*(?:name=(?P<name>[^,]*),\s*)?")
FALLEN_RE = re.compile(
    r"NVRM: GPU (?:at )?(?:PCI:)?(?P<bus>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"
    r"(?:\.\d)?:? (?:GPU )?has fallen off the bus"
)
NOT_RESPONDING_RE = re.compile(
    r"NVRM: (?:The NVIDIA GPU (?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\S*.*?)?"
    r"fallen off the bus and is not responding to commands")
# Timestamp / host prefixes a kernel line may carry.
DMESG_T_RE = re.compile(
    r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) "
    r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d) (?P<y>\d{4})\]"
)
SYSLOG_HOST_RE = re.compile(r"(?:^|\s)(?P<host>[\w.\-]+) kernel:")
MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}


def _dmesg_time(text: str) -> datetime | None:
    """The time of a ``dmesg -T`` line (``[Tue May 14 03:12:09 2024]``)."""
    m = DMESG_T_RE.search(text)
    if not m:
        return None
    try:
        return datetime(int(m["y"]), MONTHS[m["mon"]], int(m["d"]), int(m["h"]), int(m["mi"]),
                        int(m["s"]))
    except (KeyError, ValueError):
        return None


def _host(text: str, end: int) -> str | None:
    m = SYSLOG_HOST_RE.search(text, 0, end)
    return m["host"] if m else None


def parse_xid(text: str) -> Row | None:
    """An ``NVRM: Xid (...)`` line, or a bare 'GPU has fallen off the bus' line (as Xid 79)."""
    m = XID_RE.search(text)
    if m:
        code = int(m["code"])
        rest = m["rest"].strip()
        pid = None
        pm = PID_NAME_RE.match(rest)
        if pm:
            if pm["pid"] and pm["pid"].isdigit():
                pid = int(pm["pid"])
            rest = rest[pm.end():]
        bus = m["bus"].lower()
        start = m.start()
    else:
        m = FALLEN_RE.search(text) or NOT_RESPONDING_RE.search(text)
        if not m:
            return None
        code, pid, rest = 79, None, "GPU has fallen off the bus (no Xid line)"
        bus = (m["bus"] or "?").lower()
        if bus.count(":") == 1:
            bus = "0000:" + bus
        start = m.start()
    info = xid_info(code)
    detail = rest.rstrip(". ") or info.meaning
    return {
        "kind": "xid",
        "code": str(code),
        "message": f"Xid {code} (PCI:{bus}): {detail}",
        "pid": pid,
        "host": _host(text, start),
        "time": _dmesg_time(text[:start]),
    }


GPU_LOST_RE = re.compile(
    r"Unable to determine the device handle for (?:GPU\s*)?(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:"
    r"[0-9a-fA-F]{2}(?:\.\d)?):?\s*(?P<why>.*)$")


def parse_gpu_lost(text: str) -> Row | None:
    """nvidia-smi's 'Unable to determine the device handle for GPU…': the GPU is gone."""
    m = GPU_LOST_RE.search(text)
    if not m:
        return None
    why = m["why"].strip().rstrip(".") or "no reason given"
    return {"kind": "xid", "code": "gpu_lost",
            "message": f"Unable to determine the device handle for GPU{m['bus']}: {why} "
                       "(nvidia-smi: the GPU is lost)",
            "host": _host(text, m.start())}


# The bus id as this module writes it into an Xid row's message: ``Xid 79 (PCI:0000:3b:00): …``
# or ``… device handle for GPU00000000:3B:00.0: …`` (nvidia-smi's eight-digit domain).
MESSAGE_BUS_RE = re.compile(
    r"(?:\(PCI:|device handle for GPU)(?:[0-9a-fA-F]{0,4}(?P<dom>[0-9a-fA-F]{4}):)?"
    r"(?P<bus>[0-9a-fA-F]{2}:[0-9a-fA-F]{2})")


def pci_bus_id(message: str) -> str | None:
    """The GPU's PCI bus id (``0000:3b:00``: domain, bus, device; lower case, no function) of
    an Xid or lost-GPU row's ``message``; None when it names none (``?``)."""
    m = MESSAGE_BUS_RE.search(message or "")
    if not m:
        return None
    return f"{(m['dom'] or '0000').lower()}:{m['bus'].lower()}"


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "nvidia_xid",
        "errors",
        ("NVRM",),
        parse_xid,
        example="[Tue May 14 03:12:09 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
        "name=<unknown>, GPU has fallen off the bus.",
    ),
    LineParser(
        "nvidia_smi_gpu_lost",
        "errors",
        ("Unable to determine the device handle",),
        parse_gpu_lost,
        example="Unable to determine the device handle for GPU0000:03:00.0: Unknown Error",
    ),
)
