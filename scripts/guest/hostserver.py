#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Host side of the guest's network transfers, reached through QEMU user
networking (the guest connects to 10.0.2.2:PORT, slirp to 127.0.0.1:PORT).

  hostserver.py --dir DIR --port-file FILE [--timeout S]

GET /NAME      serves DIR/NAME (plain files only, no subdirectories).
POST /upload   stores the body as DIR/upload-N.bin, records its sha256 in
               DIR/upload-N.sha256 and answers with that sha256.
Binds 127.0.0.1 on a free port and writes the port number to FILE once
listening.  Exits after --timeout seconds (default 1800) as hang protection.
"""
import argparse
import hashlib
import http.server
import os
import sys
import threading


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    root = os.path.abspath(args.dir)
    lock = threading.Lock()
    log = open(os.path.join(root, "server.log"), "a", buffering=1)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, fmt, *a):
            log.write("%s %s\n" % (self.address_string(), fmt % a))

        def _reply(self, code, body, ctype="application/octet-stream"):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            name = self.path.lstrip("/")
            path = os.path.join(root, name)
            if "/" in name or name.startswith(".") or not os.path.isfile(path):
                self._reply(404, b"not found\n", "text/plain")
                return
            with open(path, "rb") as f:
                self._reply(200, f.read())

        def do_POST(self):
            if self.path != "/upload":
                self._reply(404, b"not found\n", "text/plain")
                return
            n = int(self.headers.get("Content-Length", "0"))
            h = hashlib.sha256()
            with lock:
                i = len([f for f in os.listdir(root) if f.endswith(".sha256")])
                base = os.path.join(root, "upload-%d" % i)
                with open(base + ".bin", "wb") as out:
                    left = n
                    while left > 0:
                        chunk = self.rfile.read(min(left, 1 << 16))
                        if not chunk:
                            break
                        out.write(chunk)
                        h.update(chunk)
                        left -= len(chunk)
                digest = h.hexdigest()
                with open(base + ".sha256", "w") as f:
                    f.write("%s %d\n" % (digest, n - left))
            self._reply(200, digest.encode(), "text/plain")

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.replace(tmp, args.port_file)
    timer = threading.Timer(args.timeout, srv.shutdown)
    timer.daemon = True
    timer.start()
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
