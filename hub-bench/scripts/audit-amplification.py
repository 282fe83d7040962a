#!/usr/bin/env python3
"""The audit amplification run: one loop of requests as the seeded member.

Seeds a fresh SQLite database (50 agents), serves it with the given Hub
binary (the response cache on, as by default), and for DURATION seconds
sends ROUTE's request as the member over 4 connections:

- `lists` (the default): `GET /api/v1/projects/$P/agents?bust=$i`, every
  query new, so every list is computed;
- `events`: `GET /events` with 16 subjects of another project's agents,
  each refused (403);
- `lookup`: `GET /api/v1/agents/$A`, an agent of another project;
- `delegations`: another project's delegations;
- `own-delegations`: the member's own project's delegations;
- `status`: `PUT /api/v1/agents/$A/status` on another project's agent;
- `idle-streams`: no request at all after opening 16 streams of
  `users.me.>` x16, held idle (their re-checks decide every 5 s).

Then it waits for the audit queue to drain (and the summaries of the last
interval) and prints one JSON line: the answers by status, the audit rows
written (summary rows among them), the rows per answer, the database's
growth (the file after a checkpoint of its write-ahead log) and
`/healthz`.

    hub-bench/scripts/audit-amplification.py BINARY WORKDIR [DURATION] [PORT] [ROUTE]
"""
import http.client
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time

binary, workdir = sys.argv[1], sys.argv[2]
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
port = int(sys.argv[4]) if len(sys.argv) > 4 else 18431
route = sys.argv[5] if len(sys.argv) > 5 else "lists"
ROUTES = ("lists", "events", "lookup", "delegations", "own-delegations", "status",
          "idle-streams")
if route not in ROUTES:
    # Checked before anything is seeded or served: the workers are threads,
    # where an exit would end only their own.
    sys.exit("unknown route %s (one of: %s)" % (route, ", ".join(ROUTES)))
os.makedirs(workdir, exist_ok=True)
db = os.path.join(workdir, "hub.db")
for leftover in (db, db + "-wal", db + "-shm"):
    if os.path.exists(leftover):
        os.remove(leftover)
secret = os.path.join(workdir, "secret")
with open(secret, "w") as f:
    f.write("bench-secret-1\n")
seed_json = os.path.join(workdir, "seed.json")
subprocess.run([binary, "seed", "--db", db, "--agents", "50", "--out", seed_json,
                "--session-secret-file", secret], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
with open(seed_json) as f:
    seed = json.load(f)


def checkpointed_size():
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return os.path.getsize(db)


def rows(where="1 = 1"):
    conn = sqlite3.connect(db)
    n = conn.execute("SELECT COUNT(*) FROM audit_events WHERE " + where).fetchone()[0]
    conn.close()
    return n


def other_agent():
    conn = sqlite3.connect(db)
    agent = conn.execute("SELECT id FROM agents WHERE project_id = ? ORDER BY id",
                         (seed["otherProjectId"],)).fetchone()[0]
    conn.close()
    return agent


def get(conn, path, token=None, method="GET", body=None):
    headers = {"Authorization": "Bearer " + token} if token else {}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=body, headers=headers)
    reply = conn.getresponse()
    return reply.status, reply.read()


def request_of(i):
    """The loop's i-th request: method, path and body."""
    project, other = seed["projectId"], seed["otherProjectId"]
    if route == "lists":
        return "GET", "/api/v1/projects/%s/agents?bust=%d" % (project, i), None
    if route == "events":
        return "GET", "/events?" + "&".join(["sub=agents.%s.%%3E" % agent] * 16), None
    if route == "lookup":
        return "GET", "/api/v1/agents/" + agent, None
    if route == "delegations":
        return "GET", "/api/v1/projects/%s/delegations" % other, None
    if route == "own-delegations":
        return "GET", "/api/v1/projects/%s/delegations" % project, None
    return "PUT", "/api/v1/agents/%s/status" % agent, '{"phase":"stopped"}'


agent = other_agent()


size_before = checkpointed_size()
hub = subprocess.Popen([binary, "serve", "--db", db, "--session-secret-file", secret,
                        "--port", str(port)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(600):
        try:
            get(http.client.HTTPConnection("127.0.0.1", port, timeout=10), "/healthz")
            break
        except OSError:
            time.sleep(0.05)
    rows_before, summaries_before = rows(), rows("last_ms IS NOT NULL")
    statuses, lock, counter = {}, threading.Lock(), [0]
    stop = time.time() + seconds

    def user():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.time() < stop:
            with lock:
                counter[0] += 1
                i = counter[0]
            method, path, body = request_of(i)
            status, _ = get(conn, path, seed["memberToken"], method, body)
            with lock:
                statuses[status] = statuses.get(status, 0) + 1

    if route == "idle-streams":
        streams = []
        for _ in range(16):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/events?" + "&".join(["sub=users.me.%3E"] * 16),
                         headers={"Authorization": "Bearer " + seed["memberToken"]})
            reply = conn.getresponse()
            statuses[reply.status] = statuses.get(reply.status, 0) + 1
            streams.append((conn, reply))
        time.sleep(seconds)
        for conn, _ in streams:
            conn.close()
    else:
        users = [threading.Thread(target=user) for _ in range(4)]
        for u in users:
            u.start()
        for u in users:
            u.join()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(1200):
        health = json.loads(get(conn, "/healthz")[1])
        audit = health["audit"]
        if audit["queueSize"] == 0 and audit.get("summariesPending", 0) == 0:
            break
        time.sleep(0.1)
    written = rows() - rows_before
    summary_rows = rows("last_ms IS NOT NULL") - summaries_before
finally:
    hub.terminate()
    hub.wait()
answered = sum(n for status, n in statuses.items() if status != 429)
print(json.dumps({
    "route": route,
    "seconds": seconds,
    "statuses": statuses,
    "rows": written,
    "summaryRows": summary_rows,
    "rowsPerAnswer": round(written / answered, 2) if answered else None,
    "growthMiB": round((checkpointed_size() - size_before) / 2**20, 2),
    "healthz": health,
}))
