#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The host's half of the guest suite's boots that need QMP on the guest's cue
(tests/guest/run.sh: hotplug, hotplug-sm, suspend).

  cues.py QMP-SOCKET CONSOLE-LOG ROUNDS TIMEOUT-S

Follows the guest's console log:
- "VIOMMU-HOTPLUG: want N": adds virtio-blk-pci hpblkN (iommu_platform=on,
  block node hpN) to root port rp1;
- "VIOMMU-HOTPLUG: done N": removes it (device_del: the guest's hotplug
  driver ejects it) and waits until QEMU has deleted it;
- "VIOMMU-SUSPEND: sleeping": waits until QEMU reports the guest suspended,
  then wakes it (system_wakeup).
The guest says a hotplug cue again every 10 s until it sees the disk come or
go, since printk may split a line on the console it shares: a cue counts
wherever it starts in a line, and only its first sighting acts.
It stops at the guest's "VIOMMU-TEST: end" line, after TIMEOUT-S seconds, or
on QEMU's exit.  One line per action on stdout: "ok ACTION - detail" or
"fail ACTION - detail".  Each command opens its own QMP connection: the
suite asks QMP too once the guest ends.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from qmp import QMP, QMPError  # noqa: E402


def qmp(sock, name, **args):
    q = QMP(sock, timeout=10, wait=5)
    try:
        return q.cmd(name, **args)
    finally:
        q.sock.close()


def present(sock, dev_id):
    """Whether QEMU still has the device (query-pci below every bridge)."""
    def walk(devices):
        for d in devices:
            if d.get("qdev_id") == dev_id:
                return True
            bridge = d.get("pci_bridge", {})
            if walk(bridge.get("devices", [])):
                return True
        return False
    return any(walk(bus.get("devices", [])) for bus in qmp(sock, "query-pci"))


def wake(sock, deadline):
    """system_wakeup once QEMU says the guest is suspended (S3)."""
    t0 = time.monotonic()
    try:
        status = None
        while time.monotonic() < deadline:
            status = qmp(sock, "query-status").get("status")
            if status == "suspended":
                break
            time.sleep(0.2)
        if status != "suspended":
            report(False, "system_wakeup", "QEMU status %r, never 'suspended'" % status)
            return
        qmp(sock, "system_wakeup")
        report(True, "system_wakeup", "suspended %.1f s after the guest's cue, woken"
               % (time.monotonic() - t0))
    except QMPError as e:
        report(False, "system_wakeup", str(e))


def report(ok, action, detail):
    print("%s %s - %s" % ("ok" if ok else "fail", action, detail), flush=True)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.strip().splitlines()[3].strip())
    sock, log, rounds, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    deadline = time.monotonic() + timeout
    seen = 0  # console lines handled so far
    done = set()  # hotplug cues acted on: ("want"|"done", N)
    while time.monotonic() < deadline:
        try:
            with open(log, errors="replace") as f:
                # QEMU may be writing the last line: only whole ones count
                lines = [line.rstrip("\r\n") for line in f if line.endswith("\n")]
        except OSError:
            lines = []
        for line in lines[seen:]:
            seen += 1
            if line.startswith("VIOMMU-TEST: end"):
                return
            if "VIOMMU-SUSPEND: sleeping" in line:
                wake(sock, deadline)
                continue
            cue = re.search(r"VIOMMU-HOTPLUG: (want|done) ([0-9]+)", line)
            if not cue or cue.groups() in done:
                continue
            done.add(cue.groups())
            what, n = cue.groups()
            dev = "hpblk" + n
            if int(n) > rounds:
                report(False, "device_" + what + n, "the guest asked for round %s of %d" % (n, rounds))
                continue
            try:
                if what == "want":
                    qmp(sock, "device_add", driver="virtio-blk-pci", id=dev, bus="rp1",
                        drive="hp" + n, iommu_platform=True, **{"disable-legacy": "on"})
                    report(True, "device_add" + n, "%s on rp1, drive hp%s" % (dev, n))
                elif what == "done":
                    qmp(sock, "device_del", id=dev)
                    t0 = time.monotonic()
                    while present(sock, dev) and time.monotonic() < deadline:
                        time.sleep(0.2)
                    gone = not present(sock, dev)
                    report(gone, "device_del" + n, "%s %s after %.1f s" % (
                        dev, "deleted" if gone else "still present", time.monotonic() - t0))
            except QMPError as e:  # a refusal, or QMP gone or timed out (qmp.py wraps OSError)
                report(False, "device_%s%s" % (what, n), str(e))
        if lines and not os.path.exists(sock):
            return
        time.sleep(0.2)
    report(False, "timeout", "no end line in %s after %.0f s" % (log, timeout))


if __name__ == "__main__":
    main()
