"""NVIDIA driver Xid events (dmesg, journalctl, syslog) into the ``errors`` table (what each code
means is ``traindoc.xid_catalog``).

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
"""

from __future__ import annotations

import re
from datetime import datetime

from ..xid_catalog import xid_info
from .base import LineParser, Row

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
