"""A connector proxy for the differential test: a real HTTP server on 127.0.0.1 that speaks
the connector-proxy contract (docs: shared spec, connector-proxy-protocol.md) and answers every
command synchronously with a result that depends only on the call's parameters, so that the
service and the reference, calling it with the same parameters, store the same result.

Usage: python fake_connector.py PORT   (serves until killed)
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Fields the engine adds (ours: wf__, SpiffArena's: spiff__): not part of the echo.
RESERVED_PREFIXES = ("wf__", "spiff__")


def envelope(command, params):
    """The version 2 envelope of a synchronous success: the command and its parameters."""
    body = {"command": command, "params": params}
    return {
        "command_response": {"body": body, "mimetype": "application/json", "http_status": 200},
        "command_response_version": 2,
        "error": None,
        "wf__logs": [],
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet: the harness prints its own report
        pass

    def answer(self, status, value):
        raw = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):
        if self.path == "/v1/commands":
            self.answer(200, [])
        elif self.path == "/v1/auths":
            self.answer(200, [])
        else:
            self.answer(404, {"error": {"error_code": "not_found", "message": self.path}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            request = {}
        if not self.path.startswith("/v1/do/"):
            self.answer(404, {"command_response": {}, "error": {"error_code": "command_not_found", "message": self.path}})
            return
        command = self.path[len("/v1/do/"):]
        params = {
            key: value
            for key, value in sorted(request.items())
            if not key.startswith(RESERVED_PREFIXES)
        }
        self.answer(200, envelope(command, params))


def main():
    port = int(sys.argv[1])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"fake connector on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
