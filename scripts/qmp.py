#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""viommu-lab's one QMP client: a module for the Python scripts and tests, and a
command for the shell scripts.

  qmp.py [--wait S] SOCK COMMAND [ARGUMENTS-AS-JSON]

connects to the QMP unix socket SOCK (waiting up to S seconds for it to appear,
0 to 3600, default 10), negotiates capabilities, runs COMMAND with
ARGUMENTS (a JSON object) and prints its "return" value as JSON; it exits 1
with one sentence on stderr on any error.

As a module: QMP(path, timeout=30, wait=0).cmd(name, **arguments) returns the
"return" value and raises QMPError (one sentence) on an error reply, a closed
connection, a socket that did not appear within `wait` seconds (0 to 3600) or
a peer that does not speak QMP (a greeting that is no JSON object with "QMP",
a reply that is no JSON object or has neither "return" nor an "error" object).
Events are skipped.
"""
import json
import math
import socket
import sys
import time

# The longest --wait (and QMP(wait=)): a socket that has not appeared within
# an hour is not coming.
MAX_WAIT = 3600


def valid_wait(w):
    return isinstance(w, (int, float)) and math.isfinite(w) and 0 <= w <= MAX_WAIT


class QMPError(Exception):
    pass


def _shown(v):
    """A peer's JSON value, in one line and at most 60 characters."""
    s = json.dumps(v)
    return s if len(s) <= 60 else s[:57] + "..."


class QMP:
    def __init__(self, path, timeout=30.0, wait=0.0):
        self.path = path
        if not valid_wait(wait):
            raise QMPError("the wait for QMP socket %s must be 0 to %d seconds, not %r" % (path, MAX_WAIT, wait))
        deadline = time.monotonic() + wait
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            try:
                self.sock.connect(path)
                break
            except OSError as e:
                self.sock.close()
                if time.monotonic() >= deadline:
                    raise QMPError("cannot connect to QMP socket %s: %s" % (path, e))
                time.sleep(0.05)
        self.buf = b""
        try:
            try:
                greeting = self._recv()
            except (OSError, ValueError, RecursionError) as e:
                raise QMPError("no QMP greeting on %s: %s" % (path, e))
            if not isinstance(greeting, dict) or "QMP" not in greeting:
                raise QMPError("no QMP greeting on %s (it sent %s)" % (path, _shown(greeting)))
            self.cmd("qmp_capabilities")
        except BaseException:
            self.sock.close()
            raise

    def _recv(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise QMPError("QEMU closed the QMP connection on %s" % self.path)
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def cmd(self, name, **arguments):
        req = {"execute": name}
        if arguments:
            req["arguments"] = arguments
        try:
            self.sock.sendall(json.dumps(req).encode() + b"\n")
            while True:
                msg = self._recv()
                if not isinstance(msg, dict):
                    raise QMPError("QMP %s on %s: malformed reply (not a JSON object: %s)"
                                   % (name, self.path, _shown(msg)))
                if "event" in msg:
                    continue
                if "error" in msg:
                    err = msg["error"]
                    if not isinstance(err, dict):
                        raise QMPError("QMP %s on %s: malformed reply (its error is not an object: %s)"
                                       % (name, self.path, _shown(err)))
                    desc = err.get("desc", err)
                    raise QMPError("%s: %s" % (name, desc if isinstance(desc, str) and "\n" not in desc
                                               else _shown(desc)))
                if "return" not in msg:
                    raise QMPError("QMP %s on %s: malformed reply (neither return nor error: %s)"
                                   % (name, self.path, _shown(msg)))
                return msg["return"]
        except (OSError, ValueError, RecursionError) as e:
            raise QMPError("QMP %s on %s failed: %s" % (name, self.path, e))

    def close(self):
        self.sock.close()


def main(argv):
    wait = 10.0
    if len(argv) >= 2 and argv[0] == "--wait":
        try:
            wait = float(argv[1])
        except ValueError:
            wait = None
        if not valid_wait(wait):
            print("qmp.py: --wait needs seconds from 0 to %d, not '%s'" % (MAX_WAIT, argv[1]), file=sys.stderr)
            return 1
        argv = argv[2:]
    if len(argv) not in (2, 3):
        print("usage: qmp.py [--wait S] SOCK COMMAND [ARGUMENTS-AS-JSON]", file=sys.stderr)
        return 1
    arguments = {}
    if len(argv) == 3:
        try:
            arguments = json.loads(argv[2])
        except ValueError as e:
            print("qmp.py: ARGUMENTS is not JSON (%s): %s" % (e, argv[2]), file=sys.stderr)
            return 1
        if not isinstance(arguments, dict):
            print("qmp.py: ARGUMENTS must be a JSON object ({\"name\": value, ...}), not %s" % argv[2],
                  file=sys.stderr)
            return 1
    try:
        print(json.dumps(QMP(argv[0], wait=wait).cmd(argv[1], **arguments)))
    except (QMPError, ValueError) as e:
        print("qmp.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
