#!/usr/bin/env python3
"""Records what the fjord-push daemon sends, for check_gpu.sh: an HTTP server on 127.0.0.1 that
answers every POST with 200 and appends the zstd-decompressed body as one line to OUTFILE.
  capture.py PORTFILE OUTFILE LIBZSTD SECONDS
The port it listens on is written to PORTFILE; it stops by itself after SECONDS."""
import ctypes
import http.server
import sys
import threading

portfile, outfile, libzstd, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
z = ctypes.CDLL(libzstd)
z.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
z.ZSTD_decompress.restype = ctypes.c_size_t
z.ZSTD_isError.restype = ctypes.c_uint


def unzstd(data):
    n = z.ZSTD_getFrameContentSize(data, len(data))
    if n >= (1 << 40):
        return b'{"capture_error":"no content size in the zstd frame"}'
    out = ctypes.create_string_buffer(int(n) + 1)
    r = z.ZSTD_decompress(out, int(n) + 1, data, len(data))
    return out.raw[:r] if not z.ZSTD_isError(r) else b'{"capture_error":"bad zstd frame"}'


class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "zstd":
            body = unzstd(body)
        with open(outfile, "ab") as f:
            f.write(body.replace(b"\n", b" ") + b"\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "11")
        self.end_headers()
        self.wfile.write(b'{"ok":true}')

    def log_message(self, *a):
        pass


httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(portfile, "w") as f:
    f.write("%d\n" % httpd.server_address[1])
threading.Timer(seconds, httpd.shutdown).start()
httpd.serve_forever()
httpd.server_close()
