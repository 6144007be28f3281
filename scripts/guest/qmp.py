#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A minimal QMP client for the guest scripts.

  qmp.py [--wait S] SOCK COMMAND [ARGUMENTS-AS-JSON]

Connects to the QMP unix socket SOCK (waiting up to S seconds for it to
appear, default 10), negotiates capabilities, runs COMMAND and prints its
"return" value as JSON.  Exits 1 with one sentence on stderr on any error.
"""
import json
import os
import socket
import sys
import time


def fail(msg):
    print("qmp.py: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    args = sys.argv[1:]
    wait = 10.0
    if len(args) >= 2 and args[0] == "--wait":
        wait = float(args[1])
        args = args[2:]
    if len(args) not in (2, 3):
        fail("usage: qmp.py [--wait S] SOCK COMMAND [ARGUMENTS-AS-JSON]")
    sock_path, cmd = args[0], args[1]
    arguments = json.loads(args[2]) if len(args) == 3 else None

    deadline = time.monotonic() + wait
    s = None
    while True:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(sock_path)
            break
        except OSError as e:
            s.close()
            if time.monotonic() > deadline:
                fail("cannot connect to QMP socket %s: %s" % (sock_path, e))
            time.sleep(0.1)
    f = s.makefile("rw")

    def recv():
        while True:
            line = f.readline()
            if not line:
                fail("QEMU closed the QMP connection")
            msg = json.loads(line)
            if "event" in msg:
                continue
            return msg

    try:
        recv()  # greeting
        f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
        f.flush()
        recv()
        req = {"execute": cmd}
        if arguments is not None:
            req["arguments"] = arguments
        f.write(json.dumps(req) + "\n")
        f.flush()
        msg = recv()
    except (OSError, ValueError) as e:
        fail("QMP exchange on %s failed: %s" % (sock_path, e))
    if "error" in msg:
        fail("%s failed: %s" % (cmd, msg["error"].get("desc", msg["error"])))
    print(json.dumps(msg.get("return")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
