#!/usr/bin/env python3
"""Browser test of the web console (/console/) against a running workflow-backend.

    python tests/browser/console_test.py URL SECRET [--screenshots DIR] [--server-binary PATH]

URL is the running server (e.g. http://127.0.0.1:7000), SECRET its WORKFLOW_BACKEND_JWT_SECRET:
the test mints its tokens with `<server-binary> token` (default ./target/debug/workflow-backend).
It seeds its own models and messages through the API (unique names per run), then drives
Debian's Chromium (/usr/bin/chromium, headless) with Playwright for Python (`pip install
playwright`; no `playwright install`): sign-in, the message list and a message, instances
(diagram marker on the waiting task, completing it, suspend/resume, terminate), models (diagram,
download, upload), 401 and 403 answers, sign-out; then Swagger UI (/v1.0/ui/) under the same
Content-Security-Policy. Any browser console error or page error fails it. Exits 0 when every
check passed.
"""

import argparse
import json
import os
import re
import secrets
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - environment check
    sys.exit("FAIL: Playwright for Python is missing: pip install playwright (no `playwright install`)")

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}
NARROW = {"width": 414, "height": 896}
# live pages poll every 3 s (the overview every 5 s): what changes through the API shows by then
LIVE_WAIT = 20_000
TASK_NAME_V1 = "Pack the order"
TASK_NAME_V2 = "Pack and label the order"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="base URL of the running server")
    parser.add_argument("secret", help="the server's WORKFLOW_BACKEND_JWT_SECRET")
    parser.add_argument("--screenshots", metavar="DIR", help="save full-page PNGs here")
    parser.add_argument(
        "--server-binary",
        default="./target/debug/workflow-backend",
        metavar="PATH",
        help="binary used to mint tokens (default ./target/debug/workflow-backend)",
    )
    parser.add_argument("--headed", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


def mint_token(binary, secret, scope, sub="console-test"):
    env = dict(os.environ, WORKFLOW_BACKEND_JWT_SECRET=secret)
    done = subprocess.run(
        [binary, "token", "--sub", sub, "--scope", scope, "--ttl", "3600"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise RuntimeError(f"`{binary} token` failed: {done.stderr.strip()}")
    return done.stdout.strip().splitlines()[-1].strip()



def upload_fixed_failing(api, model, run):
    """Uploads `failing.bpmn` of `model` with its script fixed (no division by zero)."""
    fixed = model_file("failing.bpmn", run).replace('batch["size"] / batch["parts"]', 'batch["size"]')
    api.call(
        "PUT",
        f"/v1.0/process-models/{model.replace('/', ':')}/files/failing.bpmn",
        fixed,
        content_type="application/xml",
        expect=(200, 201),
    )


class Api:
    """The public API through urllib (seeding and checks)."""

    def __init__(self, base, token):
        self.base = base.rstrip("/")
        self.token = token

    def call(self, method, path, body=None, content_type="application/json", expect=(200,)):
        data = None
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read().decode()
        if status not in expect:
            raise AssertionError(f"{method} {path}: expected {expect}, got {status}: {text[:500]}")
        return status, (json.loads(text) if text else None)

    def send_message(self, name, payload, expect=(200,), **params):
        path = f"/v1.0/messages/{urllib.parse.quote(name, safe='')}"
        if params:
            path += "?" + urllib.parse.urlencode(params)
        return self.call("POST", path, payload, expect=expect)


def model_file(name, run, task_name=TASK_NAME_V1):
    text = (HERE / "models" / name).read_text()
    return text.replace("{RUN}", run).replace("{TASK_NAME}", task_name)


# a script with a syntax error: SpiffWorkflow loads it and fails when it runs
WARNED_MODEL = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="warned_defs">
  <bpmn:process id="console_warned_{RUN}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="broken" />
    <bpmn:scriptTask id="broken"><bpmn:script>x = = 1</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="broken" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>
</bpmn:definitions>
"""


# written by hand: no bpmndi:BPMNDiagram, so the console lays it out itself
UNLAID_MODEL = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="unlaid_defs">
  <bpmn:process id="console_unlaid_{RUN}" isExecutable="true">
    <bpmn:startEvent id="unlaid_start" />
    <bpmn:sequenceFlow id="u1" sourceRef="unlaid_start" targetRef="check_stock" />
    <bpmn:manualTask id="check_stock" name="Check the stock" />
    <bpmn:sequenceFlow id="u2" sourceRef="check_stock" targetRef="unlaid_end" />
    <bpmn:endEvent id="unlaid_end" />
  </bpmn:process>
</bpmn:definitions>
"""


def seed(api, run):
    """Two models and the messages that give a completed, a rejected and a buffered send."""
    s = {
        "run": run,
        "orders_model": f"console-test-{run}/orders",
        "invoices_model": f"console-test-{run}/invoices",
        "order_message": f"console order placed {run}",
        "opened_message": f"console invoice opened {run}",
        "paid_message": f"console invoice paid {run}",
        "failing_model": f"console-test-{run}/failing",
        "batch_message": f"console batch received {run}",
        "rejected_message": f"console nobody listens {run}",
    }
    models = (
        (s["orders_model"], "orders.bpmn"),
        (s["invoices_model"], "invoices.bpmn"),
        (s["failing_model"], "failing.bpmn"),
    )
    for model, file in models:
        api.call(
            "PUT",
            f"/v1.0/process-models/{model.replace('/', ':')}/files/{file}",
            model_file(file, run),
            content_type="application/xml",
            expect=(200, 201),
        )
    # a file named as SpiffArena names them, whose script does not compile: accepted, warned
    s["warned_model"] = f"console-test-{run}/warned"
    s["warned_file"] = "Draft (v2).bpmn"
    _, answer = api.call(
        "PUT",
        f"/v1.0/process-models/{s['warned_model'].replace('/', ':')}/files/{urllib.parse.quote(s['warned_file'])}",
        WARNED_MODEL.replace("{RUN}", run),
        content_type="application/xml",
        expect=(201,),
    )
    assert answer["warnings"][0]["element_id"] == "broken", answer
    # a model without layout and an instance of it, waiting at its manual task
    s["unlaid_model"] = f"console-test-{run}/unlaid"
    api.call(
        "PUT",
        f"/v1.0/process-models/{s['unlaid_model'].replace('/', ':')}/files/unlaid.bpmn",
        UNLAID_MODEL.replace("{RUN}", run),
        content_type="application/xml",
        expect=(201,),
    )
    _, answer = api.call("POST", f"/v1.0/process-instances/{s['unlaid_model'].replace('/', ':')}", {}, expect=(200, 201))
    s["unlaid"] = answer["process_instance"]["id"]
    # three orders: each starts an instance waiting at the manual task (a completed send)
    s["orders"] = []
    for n in range(1, 4):
        _, answer = api.send_message(s["order_message"], {"order_id": n})
        s["orders"].append(answer["process_instance"]["id"])
    # two invoices wait for their payment (receives); one is paid (completed send and receive)
    s["invoices"] = []
    for invoice in ("INV-1", "INV-2"):
        _, answer = api.send_message(s["opened_message"], {"invoice_id": invoice})
        s["invoices"].append(answer["process_instance"]["id"])
    api.send_message(s["paid_message"], {"invoice_id": "INV-1", "amount": 12})
    # a payment nobody waits for yet, kept for two minutes (buffered)
    status, answer = api.send_message(
        s["paid_message"],
        {"invoice_id": "INV-404", "amount": 99},
        expect=(202,),
        time_to_live_in_seconds=120,
        message_instance_uuid=str(uuid.uuid4()),
    )
    s["buffered_id"] = answer["message_instance"]["id"]
    # a batch whose script divides by zero: an instance in error
    _, answer = api.send_message(s["batch_message"], {"size": 10, "parts": 0})
    assert answer["process_instance"]["status"] == "error", answer
    s["failing"] = answer["process_instance"]["id"]
    # three more batches of another copy of the failing model, for the bulk actions
    s["bulk_run"] = f"{run}b"
    s["bulk_model"] = f"console-test-{run}/batches"
    s["bulk_message"] = f"console batch received {s['bulk_run']}"
    api.call(
        "PUT",
        f"/v1.0/process-models/{s['bulk_model'].replace('/', ':')}/files/failing.bpmn",
        model_file("failing.bpmn", s["bulk_run"]),
        content_type="application/xml",
        expect=(200, 201),
    )
    s["bulk"] = []
    for size in (10, 20, 30):
        _, answer = api.send_message(s["bulk_message"], {"size": size, "parts": 0})
        assert answer["process_instance"]["status"] == "error", answer
        s["bulk"].append(answer["process_instance"]["id"])
    # a message with no receiver at all: refused (400 message_not_accepted), kept for audit
    _, problem = api.send_message(s["rejected_message"], {"reason": "nobody listens"}, expect=(400,))
    assert problem["error_code"] == "message_not_accepted", problem
    return s


class Run:
    """Checks in order; the first failure stops the run."""

    def __init__(self, args):
        self.args = args
        self.base = args.url.rstrip("/")
        self.shots = Path(args.screenshots) if args.screenshots else None
        self.passed = []
        self.console_errors = []
        self.allowed_statuses = set()

    def check(self, text):
        self.passed.append(text)
        print(f"  ok  {text}", flush=True)

    def url(self, path):
        return self.base + path

    def screenshot(self, page, name):
        # the layout fits a 1280 px wide laptop screen: no sideways scrolling
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= VIEWPORT["width"], f"{name}: the page is {width}px wide (sideways scrolling)"
        if self.shots:
            self.shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(self.shots / name), full_page=True)

    def watch(self, page):
        def on_console(message):
            if message.type != "error":
                return
            text = message.text
            status = re.search(r"status of (\d{3})", text)
            if status and int(status.group(1)) in self.allowed_statuses:
                return
            self.console_errors.append(f"console error at {page.url}: {text}")

        page.on("console", on_console)
        page.on("pageerror", lambda error: self.console_errors.append(f"page error at {page.url}: {error}"))

    def assert_no_browser_errors(self, where):
        if self.console_errors:
            raise AssertionError(f"browser errors ({where}):\n  " + "\n  ".join(self.console_errors))

    def tab_to(self, page, selector, key="Tab", presses=200):
        """Presses `key` (Tab, or Shift+Tab to go back) until the element matching `selector`
        has the focus; fails if it never does (it is not reachable from the keyboard). Lists
        may hold many links, hence the generous bound."""
        target = page.locator(selector).first
        expect(target).to_be_visible()
        for _ in range(presses):
            page.keyboard.press(key)
            if target.evaluate("element => element === document.activeElement"):
                return
        raise AssertionError(f"{selector} is not reachable with {key} ({presses} presses)")

    def sign_in(self, page, token):
        expect(page.locator("input[name=token]")).to_be_visible()
        page.locator("input[name=token]").fill(token)
        page.get_by_role("button", name="Sign in").click()

    def main(self):
        args = self.args
        admin = mint_token(args.server_binary, args.secret, "admin")
        reader = mint_token(args.server_binary, args.secret, "instances:read:*", sub="console-reader")
        api = Api(self.base, admin)
        self.reader = reader
        run = secrets.token_hex(4)
        print(f"seeding run {run} on {self.base}", flush=True)
        s = seed(api, run)
        self.check(f"seeded 6 models (console-test-{run}/...), 10 instances and 13 messages")

        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox"], headless=not args.headed
            )
            context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
            context.set_default_timeout(15_000)
            page = context.new_page()
            self.watch(page)
            try:
                self.browse(page, api, s, admin, reader)
            finally:
                context.close()
                browser.close()

    def browse(self, page, api, s, admin, reader):
        # sign-in: any page without a token leads there
        page.goto(self.url("/console/"))
        expect(page).to_have_url(re.compile(r"/console/sign-in"))
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        self.screenshot(page, "sign-in.png")
        # with the keyboard only: Tab to the token field, type, Enter
        self.tab_to(page, "input[name=token]")
        page.keyboard.type(admin)
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
        expect(page).to_have_url(re.compile(r"/console/overview$"))
        expect(page.locator(".wb-who")).to_contain_text("console-test")
        # the navigation is reachable from the keyboard too (it is above the page: back up to it)
        self.tab_to(page, 'nav a[href="/console/instances"]', key="Shift+Tab")
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Instances", exact=True)).to_be_visible()
        page.locator(".wb-nav").get_by_role("link", name="Overview", exact=True).click()
        expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
        self.check("sign-in and navigation with the keyboard alone; sign-in leads to the overview")

        self.overview(page, s)
        self.element_badges(page, s)
        self.narrow_screen(page, s)

        page.locator(".wb-nav").get_by_role("link", name="Messages", exact=True).click()
        expect(page.get_by_role("heading", name="Messages", exact=True)).to_be_visible()

        # the message list: a completed, a rejected and a buffered send, with their labels
        row = lambda name: page.locator(f'tr[data-message-name="{name}"]')
        expect(row(s["rejected_message"]).locator(".wb-state")).to_have_text("rejected")
        expect(row(s["paid_message"]).locator('.wb-state[data-state="buffered"]')).to_have_text("buffered")
        expect(row(s["order_message"]).first.locator(".wb-state")).to_have_text("completed")
        expect(row(s["paid_message"]).locator('.wb-state[data-state="waiting"]')).to_have_text("waiting")
        expect(row(s["paid_message"]).filter(has_text="INV-404").locator("td").nth(7)).to_contain_text(re.compile(r"in \d"))
        self.screenshot(page, "messages.png")
        self.check("messages list shows completed, rejected, buffered and waiting labels, keys and expiry")

        page.get_by_label("State", exact=True).select_option("buffered")
        page.get_by_role("button", name="Apply").click()
        expect(page).to_have_url(re.compile(r"state=buffered"))
        expect(row(s["paid_message"]).locator(".wb-state")).to_have_text("buffered")
        expect(row(s["rejected_message"])).to_have_count(0)
        expect(page.locator("tbody .wb-state:not([data-state=buffered])")).to_have_count(0)
        page.get_by_role("link", name="Clear filters").click()
        page.get_by_label("Name", exact=True).fill(s["rejected_message"])
        page.get_by_role("button", name="Apply").click()
        expect(page.locator("tbody tr")).to_have_count(1)
        self.check("filters by state and by name")

        page.locator(f'tr[data-message-name="{s["rejected_message"]}"] a').first.click()
        expect(page.get_by_role("heading", name=s["rejected_message"])).to_be_visible()
        expect(page.locator("#failure-cause")).to_be_visible()
        expect(page.locator("#failure-cause")).to_contain_text("no_receiver")
        expect(page.locator(".wb-json")).to_contain_text('"nobody listens"')
        self.screenshot(page, "message-detail.png")
        self.check("message detail shows the failure cause and the payload")

        self.message_search(page, api, s)
        self.send_messages(page, api, s)

        # instances: the list filtered on the test's model
        page.locator(".wb-nav").get_by_role("link", name="Instances", exact=True).click()
        expect(page.get_by_role("heading", name="Instances", exact=True)).to_be_visible()
        page.get_by_label("Model", exact=True).fill(s["orders_model"])
        page.get_by_role("button", name="Apply").click()
        expect(page.locator("tbody tr")).to_have_count(3)
        for instance in s["orders"]:
            expect(page.locator(f'tr[data-instance-id="{instance}"] .wb-status')).to_have_text("user input required")
        self.screenshot(page, "instances.png")
        self.check("instances list filtered by model, with status labels")

        self.instance_search(page, s)
        self.live_list(page, api, s)
        self.live_instance(page, api, s)
        self.bulk_actions(page, api, s)

        first, second, third = s["orders"]
        page.goto(self.url(f"/console/instances?process_model_identifier={urllib.parse.quote(s['orders_model'], safe='')}"))
        page.get_by_role("link", name=f"Instance {first}", exact=True).click()
        expect(page.get_by_role("heading", name=f"Instance #{first}")).to_be_visible()
        current = page.locator('g.djs-element[data-element-id="pack_order"].wb-current')
        expect(current).to_be_visible()
        expect(page.locator('g.djs-element[data-element-id="order_placed"].wb-completed')).to_be_visible()
        expect(page.locator("#instance-diagram")).to_contain_text(TASK_NAME_V1)
        expect(page.locator('tr[data-element-id="pack_order"] .wb-task')).to_have_text(re.compile(r"^(ready|waiting|started)$"))
        expect(page.locator("#s-messages ~ *").first).to_contain_text(s["order_message"])
        self.screenshot(page, "instance-detail.png")
        self.check("instance page draws the diagram with the waiting manual task marked wb-current")

        card = page.locator('.wb-card[data-element-id="pack_order"]')
        card.locator("textarea").fill('{"packed_by": "console test", "boxes": 2}')
        card.get_by_role("button", name="Complete task").click()
        expect(page.locator("#instance-status .wb-status")).to_have_text("complete")
        expect(page.locator('g.djs-element[data-element-id="pack_order"].wb-completed')).to_be_visible()
        expect(page.locator('g.djs-element[data-element-id="order_shipped"].wb-completed')).to_be_visible()
        expect(page.locator(".wb-json").first).to_contain_text('"packed_by": "console test"')
        _, shown = api.call("GET", f"/v1.0/process-instances/{s['orders_model'].replace('/', ':')}/{first}")
        assert shown["status"] == "complete", shown["status"]
        self.check("completing the manual task with JSON completes the instance")

        # a deep link: suspend, resume, then terminate after an in-page confirmation
        page.goto(self.url(f"/console/instances/{second}"))
        expect(page.locator('g.djs-element[data-element-id="pack_order"].wb-current')).to_be_visible()
        page.get_by_role("button", name="Suspend").click()
        expect(page.locator("#instance-status .wb-status")).to_have_text("suspended")
        expect(page.get_by_role("button", name="Complete task")).to_be_disabled()
        page.get_by_role("button", name="Resume").click()
        expect(page.locator("#instance-status .wb-status")).to_have_attribute(
            "data-status", re.compile(r"^(user_input_required|waiting)$")
        )
        self.check("suspend and resume from the instance page")
        page.get_by_role("button", name="Terminate…").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_be_visible()
        dialog.get_by_role("button", name="Keep it").click()
        expect(dialog).to_have_count(0)
        expect(page.locator("#instance-status .wb-status")).not_to_have_text("terminated")
        page.get_by_role("button", name="Terminate…").click()
        page.get_by_role("dialog").get_by_role("button", name="Terminate instance").click()
        expect(page.locator("#instance-status .wb-status")).to_have_text("terminated")
        expect(page.locator('g.djs-element[data-element-id="pack_order"].wb-current')).to_have_count(0)
        self.check("terminate asks for confirmation, then the status becomes terminated")

        # an instance waiting for a correlated message
        page.goto(self.url(f"/console/instances/{s['invoices'][1]}"))
        expect(page.locator('g.djs-element[data-element-id="invoice_paid"].wb-current')).to_be_visible()
        expect(page.locator('.wb-messages tr[data-state="waiting"]')).to_have_count(1)
        self.check("an instance waiting for a message marks its catch event and lists the wait")

        # an instance in error: the failed element is marked, the error explained, retry offered
        page.goto(self.url(f"/console/instances/{s['failing']}"))
        expect(page.locator("#instance-status .wb-status")).to_have_text("error")
        expect(page.locator('g.djs-element[data-element-id="split_batch"].wb-error')).to_be_visible()
        expect(page.locator("#instance-error")).to_contain_text("ZeroDivisionError")
        # the script still divides by zero: the retry runs it again and fails again (200, in
        # error with the new cause); the page says so in words
        page.get_by_role("button", name="Retry").click()
        expect(page.locator(".wb-toolbar .wb-notice, .wb-view > .wb-notice")).to_be_visible()
        expect(page.locator("#instance-status .wb-status")).to_have_text("error")
        self.check("an instance in error marks the failed element wb-error, explains it, and retries")

        # fix the model, then retry: once the fixed script is uploaded, the page offers a retry on
        # the newest version, which moves the instance there and runs the fix
        expect(page.get_by_role("button", name="Retry on the newest version")).to_have_count(0)
        upload_fixed_failing(api, s["failing_model"], s["run"])
        page.reload()
        page.get_by_role("button", name="Retry on the newest version", exact=True).click()
        expect(page.locator("#instance-status .wb-status")).to_have_text("complete")
        self.check("after the fix is uploaded, retry on the newest version completes the instance")

        # models: list, model page with diagram, download, upload
        page.locator(".wb-nav").get_by_role("link", name="Models", exact=True).click()
        expect(page.get_by_role("heading", name="Models", exact=True)).to_be_visible()
        # the list is paged by identifier: go through the pages to the test's model if needed
        model_link = page.get_by_role("link", name=s["orders_model"], exact=True)
        for number in range(2, 200):
            expect(page.locator("table.wb-models")).to_be_visible()
            if model_link.count() or not page.get_by_role("link", name="Next →").count():
                break
            page.get_by_role("link", name="Next →").click()
            expect(page.locator(".wb-pager")).to_contain_text(f"Page {number} of")
        expect(model_link).to_be_visible()
        self.screenshot(page, "models.png")
        model_link.click()
        expect(page.locator(".wb-id")).to_have_text(s["orders_model"])
        expect(page.locator('#model-diagram g.djs-element[data-element-id="pack_order"]')).to_be_visible()
        expect(page.locator('tr[data-file="orders.bpmn"]')).to_be_visible()
        with page.expect_download() as info:
            page.get_by_role("button", name="Download orders.bpmn").click()
        download = info.value
        assert download.suggested_filename == "orders.bpmn", download.suggested_filename
        content = Path(download.path()).read_text()
        assert f'id="console_orders_{s["run"]}"' in content, content[:300]
        self.screenshot(page, "model-detail.png")
        self.check("model page draws the diagram and downloads a file")

        page.goto(self.url(f"/console/models/{s['warned_model'].replace('/', ':')}/"))
        expect(page.locator("#model-warnings")).to_contain_text("broken")
        expect(page.locator("#model-warnings")).to_contain_text("SyntaxError")
        expect(page.locator(f'tr[data-file="{s["warned_file"]}"]')).to_be_visible()
        with page.expect_download() as info:
            page.get_by_role("button", name=f"Download {s['warned_file']}").click()
        assert info.value.suggested_filename == s["warned_file"], info.value.suggested_filename
        self.check("a model's warnings show on its page; a file named with spaces downloads by its name")
        # a file without bpmndi:BPMNDiagram: drawn with an automatic layout, markers as usual
        page.goto(self.url(f"/console/models/{s['unlaid_model'].replace('/', ':')}/"))
        expect(page.locator('#model-diagram g.djs-element[data-element-id="check_stock"]')).to_be_visible()
        expect(page.locator(".wb-diagram-auto-layout")).to_be_visible()
        expect(page.locator(".wb-diagram-auto-layout")).to_contain_text("Laid out automatically")
        self.start_instance(page, api, s)
        page.goto(self.url(f"/console/instances/{s['unlaid']}"))
        expect(page.locator('#instance-diagram g.djs-element[data-element-id="check_stock"].wb-current')).to_be_visible()
        expect(page.locator('#instance-diagram g.djs-element[data-element-id="unlaid_start"].wb-completed')).to_be_visible()
        # the flows are drawn too, though the file lists no bpmn:incoming/outgoing
        expect(page.locator('#instance-diagram g.djs-connection[data-element-id="u2"]')).to_have_count(1)
        expect(page.locator("#instance-diagram")).to_contain_text("Check the stock")
        expect(page.locator(".wb-diagram-auto-layout")).to_be_visible()
        self.screenshot(page, "instance-auto-layout.png")
        self.check("a file without layout is drawn with an automatic layout, the waiting task marked wb-current")
        page.goto(self.url(f"/console/models/{s['orders_model'].replace('/', ':')}/"))
        expect(page.locator(".wb-id")).to_have_text(s["orders_model"])

        page.locator("#upload-file").set_input_files(
            files=[{
                "name": "orders.bpmn",
                "mimeType": "application/xml",
                "buffer": model_file("orders.bpmn", s["run"], TASK_NAME_V2).encode(),
            }]
        )
        page.locator("form.wb-upload").get_by_role("button", name="Upload").click()
        expect(page.locator(".wb-notice-ok")).to_contain_text("orders.bpmn saved")
        expect(page.locator("#model-diagram")).to_contain_text(TASK_NAME_V2)
        expect(page.locator("#diagram-version option")).to_have_count(2)
        # the third order waits on the first version: counted, but not drawn on the new one
        expect(page.locator("#element-counts-note")).to_contain_text("1 waiting and 0 in error on older versions", timeout=LIVE_WAIT)
        expect(page.locator('.wb-badges[data-element-id="pack_order"]')).to_have_count(0)
        page.locator("#diagram-version").select_option(index=1)
        expect(page.locator("#model-diagram")).to_contain_text(TASK_NAME_V1)
        # the third order still runs on the first version: its page draws that version
        page.goto(self.url(f"/console/instances/{third}"))
        expect(page.locator('g.djs-element[data-element-id="pack_order"].wb-current')).to_be_visible()
        expect(page.locator("#instance-diagram")).to_contain_text(TASK_NAME_V1)
        self.check("upload makes a new version; instances and the version picker draw their own version")

        self.assert_no_browser_errors("while signed in as admin")

        # 403: a token without the scope; the page says which scope is missing
        self.allowed_statuses = {403}
        page.get_by_role("button", name="Sign out").click()
        expect(page.locator("#signin-reason")).to_contain_text("signed out")
        assert page.evaluate("sessionStorage.length") == 0
        self.sign_in(page, reader)
        expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
        expect(page.locator(f'#overview-models tr[data-model="{s["orders_model"]}"]')).to_be_visible()
        page.locator(".wb-nav").get_by_role("link", name="Models", exact=True).click()
        expect(page.locator(".wb-notice-error")).to_contain_text(re.compile(r"lacks scope models:read"))
        expect(page.locator(".wb-notice-error")).to_have_count(1)
        self.check("sign-out, then a 403 says which scope the token lacks")

        self.scoped_landing(page, s)

        # 401: a token the service refuses sends the user back to sign-in with the reason
        self.allowed_statuses = {401}
        page.evaluate("sessionStorage.setItem('wb-console.token', 'not-a-token')")
        page.goto(self.url(f"/console/instances/{third}"))
        expect(page).to_have_url(re.compile(r"/console/sign-in\?next="))
        expect(page.locator("#signin-reason")).to_contain_text("refused the token")
        self.sign_in(page, admin)
        expect(page.get_by_role("heading", name=f"Instance #{third}")).to_be_visible()
        self.check("a 401 goes back to sign-in with the reason, and then back to the page")
        self.allowed_statuses = set()
        self.assert_no_browser_errors("at the end")

        # Swagger UI works under the console's Content-Security-Policy (a violation is a
        # console error): the document loads and its operations render
        page.goto(self.url("/v1.0/ui/"))
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("workflow-backend")
        expect(page.locator(".opblock").first).to_be_visible()
        page.locator(".opblock-summary").first.click()
        expect(page.locator(".opblock-body").first).to_be_visible()
        self.assert_no_browser_errors("Swagger UI")
        self.check("Swagger UI renders the document under its Content-Security-Policy")

    # ---- issue 37: overview, element counts, search, bulk actions, actions, live pages ----

    def same_document(self, page):
        """Marks the document: `still_same_document` answers whether no reload happened since."""
        page.evaluate("window.__consoleTestMark = true")

    def still_same_document(self, page):
        return page.evaluate("window.__consoleTestMark === true")

    def overview(self, page, s):
        models = page.locator("#overview-models")
        orders = models.locator(f'tr[data-model="{s["orders_model"]}"]')
        expect(orders.locator('td[data-status="user_input_required"] a')).to_have_text("3", timeout=LIVE_WAIT)
        expect(orders.locator('td[data-status="error"]')).to_have_text("0")
        failing = models.locator(f'tr[data-model="{s["failing_model"]}"]')
        expect(failing.locator('td[data-status="error"] a')).to_have_text("1")
        bulk = models.locator(f'tr[data-model="{s["bulk_model"]}"]')
        expect(bulk.locator('td[data-status="error"] a')).to_have_text("3")
        # errors by element and message, with their count
        error_row = page.locator(f'#overview-errors tr[data-model="{s["bulk_model"]}"][data-element-id="split_batch"]')
        expect(error_row).to_contain_text("ZeroDivisionError")
        expect(error_row.locator("td").nth(3)).to_have_text("3")
        # the messages of the last hour: the seeded buffered payment and the rejected message
        expect(page.locator('[data-tile="buffered-now"] .wb-tile-number')).not_to_have_text("0")
        expect(page.locator('[data-tile="rejected"] .wb-tile-number')).not_to_have_text("0")
        expect(page.locator('[data-tile="completed"] .wb-tile-number')).not_to_have_text("0")
        # the chart: a bar a minute over the last hour, the seeded sends in it
        chart = page.locator("#overview-chart")
        expect(chart.locator("svg.wb-chart-svg")).to_be_visible()
        expect(chart.locator("g.wb-chart-bar")).to_have_count(60)
        expect(chart.locator("rect.wb-chart-completed").first).to_be_visible()
        expect(chart.locator("rect.wb-chart-rejected").first).to_be_visible()
        expect(chart.locator("rect.wb-chart-buffered").first).to_be_visible()
        self.screenshot(page, "overview.png")
        self.check("overview: counts by model and status, errors by element, messages of the last hour, chart")

        page.get_by_role("button", name="Last day").click()
        expect(page).to_have_url(re.compile(r"/console/overview\?window=day$"))
        expect(page.get_by_role("button", name="Last day")).to_have_attribute("aria-pressed", "true")
        expect(chart.locator("svg.wb-chart-svg")).to_have_attribute("aria-label", re.compile("last day"))
        expect(chart.locator("rect.wb-chart-completed").first).to_be_visible()
        page.reload()
        expect(page.get_by_role("button", name="Last day")).to_have_attribute("aria-pressed", "true")
        page.get_by_role("button", name="Last hour").click()
        expect(page).to_have_url(re.compile(r"/console/overview$"))
        expect(chart.locator("g.wb-chart-bar")).to_have_count(60)
        self.check("the chart switches between the last hour and the last day (kept in the URL)")

        # each count links to the filtered instance list
        orders.locator('td[data-status="user_input_required"] a').click()
        model_query = urllib.parse.quote(s["orders_model"], safe="")
        expect(page).to_have_url(re.compile(rf"/console/instances\?process_model_identifier={re.escape(model_query)}&status=user_input_required$"))
        expect(page.locator("#instance-results tbody tr")).to_have_count(3)
        expect(page.get_by_label("Status", exact=True)).to_have_value("user_input_required")
        expect(page.get_by_label("Model", exact=True)).to_have_value(s["orders_model"])
        page.go_back()
        error_row.locator("td").nth(3).get_by_role("link").click()
        expect(page.locator("#instance-results tbody tr")).to_have_count(3)
        for instance in s["bulk"]:
            expect(page.locator(f'tr[data-instance-id="{instance}"] .wb-status')).to_have_text("error")
        self.check("an overview count leads to the instance list filtered by model and status")

    def element_badges(self, page, s):
        page.goto(self.url(f"/console/models/{s['orders_model'].replace('/', ':')}/"))
        badge = page.locator('#model-diagram .wb-badges[data-element-id="pack_order"] .wb-badge-waiting')
        expect(badge).to_have_text("3")
        expect(badge).to_have_attribute("title", re.compile(r"3 instances wait at Pack the order"))
        expect(page.locator("#model-diagram .wb-badge-error")).to_have_count(0)
        expect(page.locator("#element-counts-note")).to_contain_text("3 waiting and 0 in error on this version")
        page.goto(self.url(f"/console/models/{s['bulk_model'].replace('/', ':')}/"))
        errors = page.locator('#model-diagram .wb-badges[data-element-id="split_batch"] .wb-badge-error')
        expect(errors).to_have_text("3")
        self.screenshot(page, "model-element-counts.png")
        # the error badge links to the model's instances in error
        errors.click()
        expect(page).to_have_url(re.compile(r"/console/instances\?process_model_identifier=.*&status=error$"))
        expect(page.locator("#instance-results tbody tr")).to_have_count(3)
        self.check("the model page's diagram has a badge per element: instances waiting there, in error there")

    def narrow_screen(self, page, s):
        page.set_viewport_size(NARROW)
        pages = (
            ("/console/overview", "#overview-models table"),
            ("/console/instances", "#instance-results table"),
            (f"/console/instances/{s['orders'][2]}", "#instance-diagram svg"),
            ("/console/messages", "#message-results table"),
            (f"/console/models/{s['orders_model'].replace('/', ':')}/", "#model-diagram svg"),
        )
        try:
            for path, ready in pages:
                page.goto(self.url(path))
                expect(page.locator(ready).first).to_be_visible()
                width = page.evaluate("document.scrollingElement.scrollWidth")
                assert width <= NARROW["width"], f"{path} is {width}px wide at {NARROW['width']}px (sideways scrolling)"
                for name in ("Overview", "Messages", "Instances", "Models"):
                    expect(page.locator(".wb-nav").get_by_role("link", name=name, exact=True)).to_be_visible()
                header = page.locator(".wb-header").bounding_box()
                assert header["width"] <= NARROW["width"], header
                sign_out = page.get_by_role("button", name="Sign out").bounding_box()
                assert sign_out["x"] + sign_out["width"] <= NARROW["width"], sign_out
            if self.shots:
                page.goto(self.url("/console/overview"))
                expect(page.locator("#overview-models table")).to_be_visible()
                self.shots.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(self.shots / "overview-narrow.png"))
        finally:
            page.set_viewport_size(VIEWPORT)
        page.goto(self.url("/console/overview"))
        self.check(f"at {NARROW['width']} px wide the header wraps and no page scrolls sideways")

    def message_search(self, page, api, s):
        _, listed = api.call("GET", "/v1.0/messages?" + urllib.parse.urlencode({"name": s["paid_message"], "state": "buffered"}))
        found = listed["results"][0]
        key = next(iter(found.get("correlation_keys") or json.loads(found["correlation_key"])))
        s["invoice_key"] = key
        page.goto(self.url("/console/messages"))
        page.get_by_label("Correlation (key=value)").fill(f"{key} = INV-404")
        page.get_by_role("button", name="Apply").click()
        expect(page).to_have_url(re.compile(rf"correlation={re.escape(key)}%3DINV-404"))
        rows = page.locator("#message-results tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.locator(".wb-state")).to_have_text("buffered")
        page.reload()  # the search is in the URL: a link to it shows the same
        expect(page.get_by_label("Correlation (key=value)")).to_have_value(f"{key}=INV-404")
        expect(rows).to_have_count(1)
        page.get_by_role("link", name="Clear filters").click()
        # the payments of this run (two sends, one receive): the one whose payload holds INV-1
        page.get_by_label("Name", exact=True).fill(s["paid_message"])
        page.get_by_label("Payload contains (JSON)").fill('{"invoice_id": "INV-1"}')
        page.get_by_role("button", name="Apply").click()
        expect(page).to_have_url(re.compile(r"payload=%7B%22invoice_id%22%3A%22INV-1%22%7D"))
        expect(rows).to_have_count(1)
        expect(rows.locator(".wb-state")).to_have_text("completed")
        expect(rows).to_contain_text("INV-1")
        page.get_by_label("Payload contains (JSON)").fill("{nope")
        page.get_by_role("button", name="Apply").click()
        expect(page.locator("#filter-error")).to_contain_text("JSON object")
        expect(rows).to_have_count(1)
        self.check("messages search by correlation value and payload, kept in the URL")

    def send_messages(self, page, api, s):
        page.goto(self.url("/console/messages"))
        page.locator("#send-message summary").click()
        form = page.locator("#send-message-form")
        form.get_by_label("Message name").fill(s["opened_message"])
        form.get_by_label("Payload (a JSON object)").fill("[1, 2]")
        form.get_by_role("button", name="Send message").click()
        expect(form.locator(".wb-field-error")).to_contain_text("must be a JSON object")
        # a message that starts an instance
        form.get_by_label("Payload (a JSON object)").fill('{"invoice_id": "INV-3", "amount": 30}')
        form.get_by_role("button", name="Send message").click()
        result = page.locator("#send-result")
        expect(result).to_contain_text("delivered")
        expect(result.locator(".wb-status")).to_have_text("waiting")
        s["sent"] = int(page.locator("#send-result-instance").inner_text().lstrip("#"))
        # the list below follows at once
        expect(page.locator(f'#message-results tr[data-message-name="{s["opened_message"]}"]')).to_have_count(3)
        self.screenshot(page, "send-message.png")
        # with a time to live: buffered under a generated uuid
        form.get_by_label("Message name").fill(s["paid_message"])
        form.get_by_label("Payload (a JSON object)").fill('{"invoice_id": "INV-777", "amount": 1}')
        form.get_by_label("Time to live (seconds, optional)").fill("90")
        form.get_by_role("button", name="Send message").click()
        expect(result).to_contain_text("buffered")
        buffered = int(page.locator("#send-result-message").inner_text().split("#")[1])
        _, message = api.call("GET", f"/v1.0/message-instances/{buffered}")
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", message["message_instance_uuid"] or ""), message
        assert message["expires_at"] and message["state"] == "buffered", message
        page.locator("#send-result-message").click()
        expect(page.get_by_role("heading", name=s["paid_message"])).to_be_visible()
        expect(page.locator(".wb-json")).to_contain_text("INV-777")
        # a message nothing takes: refused, the reason shown once
        page.go_back()
        page.locator("#send-message summary").click()
        self.allowed_statuses = {400}
        page.locator("#send-message-form").get_by_label("Message name").fill(s["rejected_message"])
        page.locator("#send-message-form").get_by_role("button", name="Send message").click()
        expect(page.locator("#send-message-form .wb-notice-error")).to_contain_text("no process instance waits")
        expect(page.locator(".wb-notice-error")).to_have_count(1)
        self.allowed_statuses = set()
        # the instance the first message started
        page.goto(self.url(f"/console/instances/{s['sent']}"))
        expect(page.locator("#instance-status .wb-status")).to_have_text("waiting")
        expect(page.locator(".wb-json").first).to_contain_text('"INV-3"')
        self.check("send a message from the console: it starts an instance (linked); with a TTL it is buffered under a generated uuid")

    def instance_search(self, page, s):
        page.goto(self.url("/console/instances"))
        page.get_by_label("Correlation (key=value)").fill(f"{s['invoice_key']}=INV-2")
        page.get_by_role("button", name="Apply").click()
        expect(page).to_have_url(re.compile(r"correlation="))
        rows = page.locator("#instance-results tbody tr")
        expect(rows).to_have_count(1)
        expect(page.locator(f'tr[data-instance-id="{s["invoices"][1]}"]')).to_be_visible()
        page.get_by_role("link", name="Clear filters").click()
        page.get_by_label("Model", exact=True).fill(s["orders_model"])
        page.get_by_label("Data contains (JSON)").fill('{"order": {"order_id": 2}}')
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(1)
        expect(page.locator(f'tr[data-instance-id="{s["orders"][1]}"]')).to_be_visible()
        page.reload()
        expect(page.get_by_label("Data contains (JSON)")).to_have_value('{"order":{"order_id":2}}')
        expect(rows).to_have_count(1)
        # by status and model, then by a date range: none were created tomorrow
        page.get_by_role("link", name="Clear filters").click()
        page.get_by_label("Status", exact=True).select_option("error")
        page.get_by_label("Model", exact=True).fill(s["failing_model"])
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(1)
        expect(page.locator(f'tr[data-instance-id="{s["failing"]}"]')).to_be_visible()
        page.get_by_label("Created from").fill(time.strftime("%Y-%m-%dT%H:%M", time.localtime(time.time() + 86400)))
        page.get_by_role("button", name="Apply").click()
        expect(page).to_have_url(re.compile(r"created_after="))
        expect(page.locator("#instance-results")).to_contain_text("No instances match")
        page.get_by_label("Created from").fill(time.strftime("%Y-%m-%dT%H:%M", time.localtime(time.time() - 3600)))
        page.get_by_label("Created until").fill(time.strftime("%Y-%m-%dT%H:%M", time.localtime(time.time() + 3600)))
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(1)
        page.get_by_label("Correlation (key=value)").fill("no equals sign")
        page.get_by_role("button", name="Apply").click()
        expect(page.locator("#filter-error")).to_contain_text("key=value")
        self.check("instances search by correlation value, data, status, model and created date range, kept in the URL")

    def live_list(self, page, api, s):
        model_query = urllib.parse.quote(s["invoices_model"], safe="")
        page.goto(self.url(f"/console/instances?process_model_identifier={model_query}"))
        sent = page.locator(f'tr[data-instance-id="{s["sent"]}"] .wb-status')
        expect(sent).to_have_text("waiting")
        expect(page.locator("#live-toggle")).to_have_text("Pause live updates")
        self.same_document(page)
        # a selection and the keyboard focus outlive a refresh
        other = page.locator(f'#select-{s["invoices"][1]}')
        other.check()
        other.focus()
        api.call("POST", f"/v1.0/process-instances/{s['sent']}/suspend", expect=(200,))
        expect(sent).to_have_text("suspended", timeout=LIVE_WAIT)
        assert self.still_same_document(page), "the page was reloaded"
        expect(other).to_be_checked()
        expect(other).to_be_focused()
        expect(page.locator("#bulk-count")).to_contain_text("1 selected")
        # paused: nothing changes until it is resumed
        page.get_by_role("button", name="Pause live updates").click()
        expect(page.locator("#live-toggle")).to_have_attribute("aria-pressed", "true")
        expect(page.locator("#live-status")).to_contain_text("paused")
        api.call("POST", f"/v1.0/process-instances/{s['sent']}/resume", expect=(200,))
        page.wait_for_timeout(5000)
        expect(sent).to_have_text("suspended")
        page.get_by_role("button", name="Resume live updates").click()
        expect(page.locator("#live-toggle")).to_have_attribute("aria-pressed", "false")
        expect(sent).to_have_text("waiting", timeout=LIVE_WAIT)
        assert self.still_same_document(page), "the page was reloaded"
        self.check("the instance list refreshes itself (selection and focus kept) and can be paused")

    def live_instance(self, page, api, s):
        page.goto(self.url(f"/console/instances/{s['sent']}"))
        expect(page.locator('#instance-diagram g.djs-element[data-element-id="invoice_paid"].wb-current')).to_be_visible()
        # the diagram is not drawn again on a refresh: only its markers change
        page.evaluate("document.querySelector('#instance-diagram svg').dataset.probe = 'kept'")
        self.same_document(page)
        api.send_message(s["paid_message"], {"invoice_id": "INV-3", "amount": 30})
        expect(page.locator("#instance-status .wb-status")).to_have_text("complete", timeout=LIVE_WAIT)
        expect(page.locator('#instance-diagram g.djs-element[data-element-id="invoice_paid"].wb-completed')).to_be_visible()
        expect(page.locator('#instance-diagram svg[data-probe="kept"]')).to_have_count(1)
        expect(page.locator('#instance-messages tr[data-state="waiting"]')).to_have_count(0, timeout=LIVE_WAIT)
        expect(page.locator('#instance-messages tr[data-message-name="%s"]' % s["paid_message"]).first).to_be_visible(timeout=LIVE_WAIT)
        assert self.still_same_document(page), "the page was reloaded"
        # what is typed into a task's form outlives a refresh
        third = s["orders"][2]
        page.goto(self.url(f"/console/instances/{third}"))
        area = page.locator('.wb-card[data-element-id="pack_order"] textarea')
        area.fill('{"typed": "before the refresh"}')
        api.call("POST", f"/v1.0/process-instances/{third}/suspend", expect=(200,))
        expect(page.locator("#instance-status .wb-status")).to_have_text("suspended", timeout=LIVE_WAIT)
        expect(area).to_have_value('{"typed": "before the refresh"}')
        expect(area).to_be_focused()
        api.call("POST", f"/v1.0/process-instances/{third}/resume", expect=(200,))
        expect(page.locator("#instance-status .wb-status")).not_to_have_text("suspended", timeout=LIVE_WAIT)
        expect(area).to_have_value('{"typed": "before the refresh"}')
        self.check("the instance page refreshes itself: status, markers and messages, without redrawing or losing typed data")

    def bulk_actions(self, page, api, s):
        model_query = urllib.parse.quote(s["bulk_model"], safe="")
        page.goto(self.url(f"/console/instances?process_model_identifier={model_query}&status=error"))
        rows = page.locator("#instance-results tbody tr")
        expect(rows).to_have_count(3)
        results = page.locator("#bulk-results")
        # select two by hand, then all on the page; retry: the script still divides by zero
        page.locator(f"#select-{s['bulk'][0]}").check()
        page.locator(f"#select-{s['bulk'][1]}").check()
        expect(page.locator("#bulk-count")).to_contain_text("2 selected")
        page.get_by_label("Select all on this page").check()
        expect(page.locator("#bulk-count")).to_contain_text("3 selected")
        page.locator('#bulk-bar [data-bulk="retry"]').click()
        expect(results.locator('tr[data-outcome="done"]')).to_have_count(3)
        for instance in s["bulk"]:
            expect(results.locator(f'tr[data-instance-id="{instance}"] .wb-status')).to_have_text("error")
        expect(page.locator("#bulk-count")).to_contain_text("Select instances")
        self.check("bulk retry of the failed instances on the page answers per instance (they fail again)")
        # fix the script, then retry all matching this search on the newest version
        upload_fixed_failing(api, s["bulk_model"], s["bulk_run"])
        page.reload()
        expect(page.locator("#bulk-version option")).to_have_count(2)
        page.get_by_label("Retry and migrate on").select_option(index=1)
        page.get_by_role("button", name="Select all 3 matching this search").click()
        expect(page.locator("#bulk-count")).to_contain_text("All 3 instances matching this search")
        page.locator('#bulk-bar [data-bulk="retry"]').click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("all 3 instances matching this search")
        dialog.get_by_role("button", name="Cancel").click()
        expect(dialog).to_have_count(0)
        expect(results).to_have_count(0)
        page.locator('#bulk-bar [data-bulk="retry"]').click()
        page.get_by_role("dialog").get_by_role("button", name="Retry 3").click()
        expect(results.locator('tr[data-outcome="done"]')).to_have_count(3)
        for instance in s["bulk"]:
            expect(results.locator(f'tr[data-instance-id="{instance}"] .wb-status')).to_have_text("complete")
        # the list follows: none of them is in error any more
        expect(page.locator("#instance-results")).to_contain_text("No instances match", timeout=LIVE_WAIT)
        self.screenshot(page, "bulk-retry.png")
        for instance in s["bulk"]:
            _, shown = api.call("GET", f"/v1.0/process-instances/{instance}")
            assert shown["status"] == "complete", shown["status"]
        self.check("bulk retry of all matching the search, on the fixed version, after a confirmation with the count")
        # refused, with the reason: a complete instance is not retried
        page.goto(self.url(f"/console/instances?process_model_identifier={model_query}"))
        expect(rows).to_have_count(3)
        page.get_by_label("Select all on this page").check()
        page.locator('#bulk-bar [data-bulk="retry"]').click()
        expect(results.locator('tr[data-outcome="refused"]')).to_have_count(3)
        expect(results.locator('tr[data-outcome="refused"] code').first).to_have_text(re.compile(r"^[a-z_]+$"))
        self.check("a bulk action refused for some instances says why, per instance")

    def start_instance(self, page, api, s):
        badge = page.locator('#model-diagram .wb-badges[data-element-id="check_stock"] .wb-badge-waiting')
        expect(badge).to_have_text("1")
        form = page.locator("#start-form")
        form.get_by_label(re.compile(r"^Data")).fill('{"source": "console", "items": 2}')
        form.get_by_role("button", name="Start instance").click()
        expect(page.locator("#start-result")).to_contain_text("started")
        started = int(page.locator("#start-result-instance").inner_text().lstrip("#"))
        expect(badge).to_have_text("2", timeout=LIVE_WAIT)
        page.locator("#start-result-instance").click()
        expect(page.get_by_role("heading", name=f"Instance #{started}")).to_be_visible()
        expect(page.locator(".wb-json").first).to_contain_text('"source": "console"')
        expect(page.locator('#instance-diagram g.djs-element[data-element-id="check_stock"].wb-current')).to_be_visible()
        page.go_back()
        self.check("start an instance with JSON data from the model page; the badge counts it")

    def scoped_landing(self, page, s):
        """A token lands on a page it can read, and no error is shown twice."""
        args = self.args
        models_only = mint_token(args.server_binary, args.secret, "models:read", sub="console-models")
        one_model = mint_token(args.server_binary, args.secret, f"instances:read:{s['orders_model']} models:read", sub="console-orders")
        self.allowed_statuses = {403}
        page.get_by_role("button", name="Sign out").click()
        self.sign_in(page, models_only)
        expect(page).to_have_url(re.compile(r"/console/models$"))
        expect(page.get_by_role("heading", name="Models", exact=True)).to_be_visible()
        expect(page.locator(".wb-notice-warn")).to_contain_text("reads no model's instances")
        expect(page.locator("table.wb-models")).to_be_visible()
        expect(page.locator(".wb-notice-error")).to_have_count(0)
        page.get_by_role("button", name="Sign out").click()
        self.sign_in(page, one_model)
        expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
        expect(page.locator("#overview-models tr[data-model]")).to_have_count(1)
        expect(page.locator(f'#overview-models tr[data-model="{s["orders_model"]}"]')).to_be_visible()
        # no messages for this token: the messages and the chart are left out, without an error
        expect(page.locator("#overview-messages")).to_have_count(0)
        expect(page.locator("#overview-chart")).to_have_count(0)
        expect(page.locator(".wb-notice-error")).to_have_count(0)
        # its model page: element counts (it reads that model's instances)
        page.goto(self.url(f"/console/models/{s['orders_model'].replace('/', ':')}/"))
        expect(page.locator("#element-counts-note")).to_contain_text("on older versions")
        page.goto(self.url(f"/console/models/{s['failing_model'].replace('/', ':')}/"))
        expect(page.locator('#model-diagram g.djs-element[data-element-id="split_batch"]')).to_be_visible()
        page.wait_for_timeout(1000)
        expect(page.locator("#model-diagram .wb-badges")).to_have_count(0)
        expect(page.locator(".wb-notice-error")).to_have_count(0)
        self.allowed_statuses = set()
        self.check("a token that reads no instances lands on the models; one scoped to a model sees only its counts, no error twice")

def main():
    args = parse_args()
    if not Path(CHROMIUM).exists():
        print(f"FAIL: {CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    started = time.monotonic()
    run = Run(args)
    try:
        run.main()
        run.assert_no_browser_errors("at the end")
    except Exception as error:  # noqa: BLE001 - report any failure and exit non-zero
        traceback.print_exc()
        print(f"\nFAIL after {len(run.passed)} passed checks: {error}", file=sys.stderr)
        return 1
    print(f"\nPASS: {len(run.passed)} checks in {time.monotonic() - started:.1f}s", end="")
    print(f"; screenshots in {run.shots}" if run.shots else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
