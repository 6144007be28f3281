#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/qmp.py against a peer that does not speak QMP: each malformed
greeting or reply, served on a temporary unix socket from a thread, is one
QMPError with a one-line message naming the socket (never a TypeError or
AttributeError); well-formed exchanges still work.  viommu-stats catches
QMPError, so it prints that line and exits 1; that is checked too."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(TOP, "scripts"))

import qmp  # noqa: E402

GREETING = b'{"QMP": {"version": {}, "capabilities": []}}\n'
OK = b'{"return": {}}\n'


class Peer:
    """A unix socket that sends @lines, one per request it reads (the first
    before any: the greeting), then reads one more request and closes the
    connection."""

    def __init__(self, path, lines):
        self.lines = lines
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(1)
        self.srv.settimeout(5)
        self.requests = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            conn, _ = self.srv.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(5)
            buf = b""
            try:
                for i, line in enumerate(self.lines + [None]):
                    if i:  # wait for the next request
                        while b"\n" not in buf:
                            data = conn.recv(65536)
                            if not data:
                                return
                            buf += data
                        req, buf = buf.split(b"\n", 1)
                        self.requests.append(json.loads(req))
                    if line is not None:
                        conn.sendall(line)
            except OSError:
                pass

    def close(self):
        self.thread.join(5)
        self.srv.close()


class Malformed(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.sock = os.path.join(self.dir.name, "q.sock")

    def tearDown(self):
        self.dir.cleanup()

    def serve(self, *lines):
        peer = Peer(self.sock, list(lines))
        self.addCleanup(peer.close)
        return peer

    def fails(self, lines, want, command=("qom-get", {"path": "/machine", "property": "type"})):
        """QMP on a peer sending @lines raises QMPError (no other type) whose
        one-line message contains @want and names the socket."""
        self.serve(*lines)
        with self.assertRaises(qmp.QMPError) as c:
            q = qmp.QMP(self.sock, timeout=5)
            try:
                q.cmd(command[0], **command[1])
            finally:
                q.close()
        msg = str(c.exception)
        self.assertIn(want, msg)
        self.assertIn(self.sock, msg)
        self.assertNotIn("\n", msg)
        return msg

    # the greeting
    def test_greeting_a_number(self):
        self.fails([b"5\n"], "no QMP greeting on")

    def test_greeting_a_string_that_contains_QMP(self):
        self.fails([b'"QMP"\n'], "no QMP greeting on")

    def test_greeting_a_list(self):
        self.fails([b'["QMP"]\n'], "no QMP greeting on")

    def test_greeting_an_object_without_QMP(self):
        self.fails([b'{"hello": 1}\n'], "no QMP greeting on")

    def test_greeting_not_json(self):
        self.fails([b"220 smtp ready\n"], "no QMP greeting on")

    def test_greeting_nested_too_deep(self):
        self.fails([b"[" * 100000 + b"\n"], "no QMP greeting on")

    # the reply to qmp_capabilities, and to a command
    def test_capabilities_reply_a_number(self):
        self.fails([GREETING, b"5\n"], "QMP qmp_capabilities on %s: malformed reply" % self.sock)

    def test_reply_a_list(self):
        self.fails([GREETING, OK, b"[1]\n"], "QMP qom-get on %s: malformed reply" % self.sock)

    def test_reply_a_string(self):
        # "event" in "an event" is true for a string: it must not be skipped as one
        self.fails([GREETING, OK, b'"an event"\n'], "QMP qom-get on %s: malformed reply" % self.sock)

    def test_reply_null(self):
        self.fails([GREETING, OK, b"null\n"], "QMP qom-get on %s: malformed reply" % self.sock)

    def test_error_a_string(self):
        self.fails([GREETING, OK, b'{"error": "boom"}\n'],
                   "QMP qom-get on %s: malformed reply" % self.sock)

    def test_error_a_list(self):
        self.fails([GREETING, OK, b'{"error": ["boom"]}\n'],
                   "QMP qom-get on %s: malformed reply" % self.sock)

    def test_reply_without_return(self):
        self.fails([GREETING, OK, b'{"id": 1}\n'], "QMP qom-get on %s: malformed reply" % self.sock)

    def test_reply_not_json(self):
        self.fails([GREETING, OK, b"{oops\n"], "QMP qom-get on %s failed" % self.sock)

    def test_connection_closed_before_the_reply(self):
        self.fails([GREETING, OK], "closed the QMP connection on %s" % self.sock)


class WellFormed(unittest.TestCase):
    def test_return_after_an_event_and_an_error_reply(self):
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, "q.sock")
            peer = Peer(sock, [GREETING, OK,
                               b'{"event": "X", "data": {}}\n{"return": "viommu-vtd"}\n',
                               b'{"error": {"class": "GenericError", "desc": "Device not found"}}\n',
                               b'{"return": false}\n'])
            q = qmp.QMP(sock, timeout=5)
            self.assertEqual(q.cmd("qom-get", path="/machine/peripheral/v", property="type"),
                             "viommu-vtd")
            with self.assertRaises(qmp.QMPError) as c:
                q.cmd("qom-get", path="/nope", property="type")
            self.assertEqual(str(c.exception), "qom-get: Device not found")
            self.assertIs(q.cmd("stop"), False)  # a false return is a return
            q.close()
            peer.close()
            self.assertEqual([r["execute"] for r in peer.requests],
                             ["qmp_capabilities", "qom-get", "qom-get", "stop"])


class Callers(unittest.TestCase):
    """The commands built on the module print its one line, no traceback."""

    def run_against(self, lines, *cmd):
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, "q.sock")
            peer = Peer(sock, lines)
            try:
                r = subprocess.run([sys.executable] + [c.replace("SOCK", sock) for c in cmd],
                                   capture_output=True, text=True, timeout=20)
            finally:
                peer.close()
            return r, sock

    def check(self, r, prefix):
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertTrue(r.stderr.startswith(prefix), r.stderr)

    def test_viommu_stats(self):
        stats = os.path.join(TOP, "scripts", "viommu-stats")
        for lines in ([b"5\n"], [GREETING, b'{"error": "boom"}\n'], [GREETING, OK, b"[1]\n"]):
            r, sock = self.run_against(lines, stats, "--qmp", "SOCK", "--timeout", "5",
                                       "--device", "/machine/peripheral/v")
            self.check(r, "viommu-stats: ")
            self.assertIn(sock, r.stderr)

    def test_qmp_command(self):
        r, sock = self.run_against([GREETING, OK, b'{"error": 7}\n'],
                                   os.path.join(TOP, "scripts", "qmp.py"), "SOCK", "query-status")
        self.check(r, "qmp.py: QMP query-status on %s: malformed reply" % sock)


if __name__ == "__main__":
    # exits non-zero when a case fails
    unittest.main(verbosity=2)
