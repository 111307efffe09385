#!/usr/bin/env python3
"""Load through a failover, then the verdict: what the clients saw and what the database holds.

Clients (16 threads) each place orders: a message start `ha placed` {order_id}, then the
correlation `ha paid` {order_id}; every message has its own message_instance_uuid, and a
request that does not succeed is retried with the same uuid until it does. Events
(switchover, crash) are run by the caller at the times it chooses, while this runs.

    load.py URL DATABASE_URL SECONDS REPORT.json        (token in HA_TOKEN)

URL may list several replicas of the service (`http://a:1,http://b:2`): each client sends its
messages to them in turn, and a retry goes to the next one (a replica killed under the load
leaves its clients' retries to the others).

Prints the figures and writes them to REPORT.json; exits 1 when an acknowledged message is
lost, a message is delivered twice, an instance is stuck, a request got a 5xx other than 503,
or a request took longer than the client's timeout.

While the load runs, every host of DATABASE_URL is sampled twice a second (role, read-only,
cluster, timeline, synchronous_standby_names, its standbys' sync state) and each change is
recorded with its time, so that a loss can be attributed: which host acknowledged, whether its
commits were synchronous then, and whether two hosts took writes at once. The verdict reads the
one host that takes writes at the end (and fails when there is not exactly one).
"""
import http.client
import json
import subprocess
import sys
import threading
import time
import os
import urllib.parse
import uuid

CLIENTS = 16
# the instances of the model this uploads (`ha:orders`)
OURS = "process_model_identifier = 'ha/orders'"
TIMEOUT = 30.0  # the client's request timeout (s): a request taking longer is a hang
RETRY_PAUSE = 0.2

MODEL = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:spiffworkflow="http://spiffworkflow.org/bpmn/schema/1.0/core" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:collaboration id="c"><bpmn:participant id="p" processRef="ha_orders" />
    <bpmn:correlationKey name="order"><bpmn:correlationPropertyRef>order_id</bpmn:correlationPropertyRef></bpmn:correlationKey>
  </bpmn:collaboration>
  <bpmn:correlationProperty id="order_id" name="order id">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_placed"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_paid"><bpmn:messagePath>order_id</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_placed" name="ha placed" />
  <bpmn:message id="m_paid" name="ha paid" />
  <bpmn:process id="ha_orders" isExecutable="true">
    <bpmn:startEvent id="placed"><bpmn:messageEventDefinition id="e1" messageRef="m_placed"><bpmn:extensionElements><spiffworkflow:messageVariable>order</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="placed" targetRef="paid" />
    <bpmn:intermediateCatchEvent id="paid"><bpmn:messageEventDefinition id="e2" messageRef="m_paid"><bpmn:extensionElements><spiffworkflow:messageVariable>payment</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="paid" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>
</bpmn:definitions>
"""


class Client:
    def __init__(self, url, token):
        parsed = urllib.parse.urlparse(url)
        self.host, self.port = parsed.hostname, parsed.port
        self.token = token

    def request(self, method, path, body=None, content_type="application/json"):
        """(status, seconds); status 0 when no HTTP answer came."""
        started = time.monotonic()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        try:
            headers = {"Authorization": f"Bearer {self.token}", "Content-Type": content_type}
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            return response.status, time.monotonic() - started
        except (OSError, http.client.HTTPException):
            return 0, time.monotonic() - started
        finally:
            conn.close()


class Record:
    def __init__(self):
        self.lock = threading.Lock()
        self.attempts = []  # (ended_at, status, seconds)
        self.acked = {}  # uuid -> when it was acknowledged
        self.unacked = []  # (uuid, name) given up on
        self.orders = 0

    def attempt(self, status, seconds):
        with self.lock:
            self.attempts.append((time.monotonic(), status, seconds))


def send_until_acked(clients, record, name, payload, message_uuid, give_up_at, first):
    path = "/v1.0/messages/" + urllib.parse.quote(name) + "?message_instance_uuid=" + message_uuid
    body = json.dumps(payload)
    turn = first
    while True:
        client = clients[turn % len(clients)]
        turn += 1
        status, seconds = client.request("POST", path, body)
        record.attempt(status, seconds)
        if status in (200, 202):
            with record.lock:
                record.acked[message_uuid] = time.monotonic()
            return True
        # only an unanswered request or a 5xx is worth retrying: anything else is a verdict
        if (status != 0 and status < 500) or time.monotonic() > give_up_at:
            with record.lock:
                record.unacked.append((message_uuid, name))
            return False
        time.sleep(RETRY_PAUSE)


def place_orders(clients, record, worker, stop_at, give_up_at):
    n = 0
    while time.monotonic() < stop_at:
        order_id = f"{worker}-{n}"
        n += 1
        # with several replicas, an order's two messages go to different ones
        if not send_until_acked(clients, record, "ha placed", {"order_id": order_id}, str(uuid.uuid4()), give_up_at, worker + n):
            return
        if not send_until_acked(clients, record, "ha paid", {"order_id": order_id}, str(uuid.uuid4()), give_up_at, worker + n + 1):
            return
        with record.lock:
            record.orders += 1


def watch_readiness(client, stop, transitions):
    last = None
    while not stop.is_set():
        status, _ = client.request("GET", "/v1.0/health/ready")
        if status != last:
            transitions.append((time.monotonic(), status))
            last = status
        time.sleep(0.1)


HOST_STATE = """SELECT pg_is_in_recovery(), current_setting('transaction_read_only'),
  CASE WHEN pg_is_in_recovery() THEN '' ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END,
  current_setting('synchronous_standby_names'), current_setting('synchronous_commit'),
  coalesce((SELECT string_agg(application_name || ' ' || state || ' ' || sync_state, ', ' ORDER BY application_name)
            FROM pg_stat_replication), ''),
  (SELECT system_identifier FROM pg_control_system())"""


def host_urls(database_url):
    """One URL per host of a libpq multi-host URL, in its order."""
    parsed = urllib.parse.urlsplit(database_url)
    userinfo, _, hosts = parsed.netloc.rpartition("@")
    query = "&".join(p for p in parsed.query.split("&") if p and not p.startswith("target_session_attrs="))
    return [
        (host, urllib.parse.urlunsplit((parsed.scheme, f"{userinfo}@{host}" if userinfo else host, parsed.path, query + "&connect_timeout=1", "")))
        for host in hosts.split(",")
    ]


def sample_host(url):
    """(in_recovery, read_only, timeline, sync_names, sync_commit, standbys, system identifier),
    or None when down."""
    try:
        out = subprocess.run(["psql", url, "-AtF", "|", "-c", HOST_STATE], capture_output=True, text=True, timeout=3)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return tuple(out.stdout.strip().split("|"))


def takes_writes(state):
    """libpq's read-write test, on a sample: not in recovery and not read-only."""
    return state is not None and state[0] == "f" and state[1] == "off"


def watch_cluster(database_url, began, stop, changes, split_brain):
    """Records each host's state when it changes, and the times two hosts took writes at once."""
    hosts = host_urls(database_url)
    last = {}
    while not stop.is_set():
        writable = []
        for host, url in hosts:
            state = sample_host(url)
            if takes_writes(state):
                writable.append(host)
            if state != last.get(host, ()):
                last[host] = state
                changes.append({"at_s": round(time.monotonic() - began, 1), "host": host, "state": describe(state)})
        if len(writable) > 1:
            split_brain.append({"at_s": round(time.monotonic() - began, 1), "hosts": writable})
        time.sleep(0.5)


def describe(state):
    if state is None:
        return "down"
    in_recovery, read_only, timeline, sync_names, sync_commit, standbys, system = state
    if in_recovery == "t":
        return f"standby of cluster {system}"
    role = "primary (read-only)" if read_only == "on" else "primary"
    sync = f"synchronous_standby_names '{sync_names}'" if sync_names else "asynchronous (no synchronous_standby_names)"
    return f"{role} of cluster {system}, timeline {timeline}, {sync}, synchronous_commit {sync_commit}, standbys: {standbys or 'none'}"


def psql(database_url, sql):
    out = subprocess.run(["psql", database_url, "-Atc", sql], check=True, capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line]


def main():
    url, database_url, seconds, report_path = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    clients = [Client(u, os.environ["HA_TOKEN"]) for u in url.split(",")]
    client = clients[0]
    status, _ = client.request("PUT", "/v1.0/process-models/ha:orders/files/orders.bpmn", MODEL, "application/xml")
    assert status in (200, 201), f"model upload answered {status}"

    record = Record()
    began = time.monotonic()
    stop_at = began + seconds
    give_up_at = stop_at + 120  # retries after the load stops, for what was not acknowledged yet
    ready_stop, transitions = threading.Event(), []
    readiness = threading.Thread(target=watch_readiness, args=(client, ready_stop, transitions))
    readiness.start()
    cluster_changes, split_brain = [], []
    cluster = threading.Thread(target=watch_cluster, args=(database_url, began, ready_stop, cluster_changes, split_brain))
    cluster.start()
    workers = [threading.Thread(target=place_orders, args=(clients, record, w, stop_at, give_up_at)) for w in range(CLIENTS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    time.sleep(1)
    ready_stop.set()
    readiness.join()
    cluster.join()

    ok = sorted(t for t, status, _ in record.attempts if status in (200, 202))
    gaps = sorted(((b - a, a - began) for a, b in zip(ok, ok[1:])), reverse=True)
    statuses = {}
    for _, status, _ in record.attempts:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    slowest = max(seconds for _, _, seconds in record.attempts)

    # the verdict reads the one host that takes writes now, named: with a multi-host URL, psql
    # would take the first writable host in order, which could be an old primary still up
    writable_now = [url for _, url in host_urls(database_url) if takes_writes(sample_host(url))]
    if len(writable_now) != 1:
        print(f"FAILED: {len(writable_now)} hosts take writes at the end, the verdict cannot choose")
        sys.exit(1)
    database_url = writable_now[0]
    acked = set(record.acked)
    stored = set(psql(database_url, "SELECT message_instance_uuid FROM message_instances WHERE message_instance_uuid IS NOT NULL"))
    lost = sorted(acked - stored)
    # (only this model's instances: the database may hold others')
    twice_started = psql(database_url, f"SELECT count(*) FROM (SELECT data->'order'->>'order_id' FROM process_instances WHERE {OURS} GROUP BY 1 HAVING count(*) > 1) d")[0]
    twice_paid = psql(database_url, "SELECT count(*) FROM (SELECT payload->>'order_id' FROM message_instances WHERE name = 'ha paid' AND message_type = 'send' GROUP BY 1 HAVING count(*) > 1) d")[0]
    stuck = psql(database_url, f"SELECT count(*) FROM process_instances WHERE {OURS} AND status <> 'complete'")[0]
    instances = psql(database_url, f"SELECT count(*) FROM process_instances WHERE {OURS}")[0]

    report = {
        "orders_completed": record.orders,
        "requests": len(record.attempts),
        "answers_by_status": statuses,
        "longest_gaps_without_a_successful_write_s": [
            {"seconds": round(g, 2), "at_s": round(at, 1)} for g, at in gaps[:3]
        ],
        "slowest_request_s": round(slowest, 2),
        "readiness_transitions": [{"at_s": round(t - began, 1), "status": s} for t, s in transitions],
        "acknowledged_messages": len(acked),
        "given_up": len(record.unacked),
        "lost": len(lost),
        "lost_acknowledged_between_s": [round(min(record.acked[u] for u in lost) - began, 1), round(max(record.acked[u] for u in lost) - began, 1)] if lost else None,
        "instances": int(instances),
        "instances_started_twice": int(twice_started),
        "payments_delivered_twice": int(twice_paid),
        "instances_stuck": int(stuck),
        "started_at_unix_s": round(time.time() - (time.monotonic() - began), 1),
        "cluster_changes": cluster_changes,
        "two_hosts_took_writes": split_brain[:20],
    }
    with open(report_path, "w") as f:
        json.dump(report, f, indent=2)
    print(json.dumps(report, indent=2))

    server_errors = sum(n for s, n in statuses.items() if s.startswith("5") and s != "503")
    failures = []
    if lost:
        failures.append(f"{len(lost)} acknowledged messages lost (e.g. {lost[:3]})")
    if record.unacked:
        failures.append(f"{len(record.unacked)} messages never acknowledged")
    if int(twice_started) or int(twice_paid):
        failures.append("a message was delivered twice")
    if int(stuck):
        failures.append(f"{stuck} instances stuck")
    if server_errors:
        failures.append(f"{server_errors} answers were a 5xx other than 503")
    if slowest >= TIMEOUT:
        failures.append(f"a request hung for {slowest:.1f} s")
    if transitions and transitions[-1][1] != 200:
        failures.append("readiness did not recover")
    if failures:
        print("FAILED: " + "; ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
