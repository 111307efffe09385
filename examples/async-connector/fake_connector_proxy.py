"""A fake connector proxy for examples/async-connector: Python 3.11 standard library only.

POST /v1/do/credit/CheckScore answers 202 at once, then a thread PUTs the result to the
request's wf__callback_url with the task's own token, wf__callback_token. A task whose data
holds "sync": true gets the result in a 200 answer instead; one whose data holds
"callback": false gets the 202 and no callback (a worker, you, calls back). GET /v1/commands
lists the command.
Listens on $PORT (default 7200); calls back after $CALLBACK_DELAY_SECONDS (default 2).
"""
import json, os, threading, time, urllib.error, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = float(os.environ.get("CALLBACK_DELAY_SECONDS", "2"))
COMMANDS = [{"id": "credit/CheckScore", "parameters": [{"id": "customer_id", "type": "str", "required": True}]}]

def envelope(body, http_status, logs):
    return {"command_response": {"body": body, "mimetype": "application/json", "http_status": http_status},
            "command_response_version": 2, "error": None, "wf__logs": logs}

def score(customer_id):
    points = 600 + sum(map(ord, str(customer_id))) % 250  # made up, but always the same
    return {"customer_id": customer_id, "score": points, "approved": points >= 650}

def call_back(request):
    time.sleep(DELAY)
    body = json.dumps(envelope(score(request["customer_id"]), 200, ["scored asynchronously"])).encode()
    put = urllib.request.Request(request["wf__callback_url"], data=body, method="PUT", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + request["wf__callback_token"]})
    try:
        with urllib.request.urlopen(put, timeout=10) as answer:
            print("callback answered", answer.status, answer.read().decode(), flush=True)
    except urllib.error.HTTPError as refused:
        print("callback refused", refused.code, refused.read().decode(), flush=True)
    except OSError as error:
        print("callback failed", error, flush=True)

class Proxy(BaseHTTPRequestHandler):
    def answer(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # GET /v1/commands; anything else (/v1/auths) has nothing
        self.answer(200, COMMANDS if self.path == "/v1/commands" else [])

    def do_POST(self):
        if self.path != "/v1/do/credit/CheckScore":
            return self.answer(404, {"command_response": {}, "error": {"error_code": "command_not_found", "message": self.path}})
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        print("request", json.dumps({k: v for k, v in request.items() if k != "wf__callback_token"}), flush=True)
        if request.get("wf__task_data", {}).get("sync"):
            return self.answer(200, envelope(score(request["customer_id"]), 200, ["scored synchronously"]))
        if request.get("wf__task_data", {}).get("callback") is False:
            return self.answer(202, envelope({"job_id": request["wf__task_id"]}, 202, ["accepted, left to a worker"]))
        threading.Thread(target=call_back, args=(request,), daemon=True).start()
        self.answer(202, envelope({"job_id": request["wf__task_id"]}, 202, [f"accepted, calling back in {DELAY:g} s"]))

if __name__ == "__main__":
    ThreadingHTTPServer(("0.0.0.0", int(os.environ.get("PORT", "7200"))), Proxy).serve_forever()
