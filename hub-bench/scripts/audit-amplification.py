#!/usr/bin/env python3
"""The audit amplification run: uncached project lists as the seeded member.

Seeds a fresh SQLite database (50 agents), serves it with the given Hub
binary (the response cache on, as by default), and for DURATION seconds
sends `GET /api/v1/projects/$P/agents?bust=$i` (every query new, so every
list is computed) as the member over 4 connections. Then it waits for the
audit queue to drain and prints one JSON line: the answers by status, the
audit rows written, the rows per answered list, the database's growth
(the file after a checkpoint of its write-ahead log) and `/healthz`.

    hub-bench/scripts/audit-amplification.py BINARY WORKDIR [DURATION] [PORT]
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


def rows():
    conn = sqlite3.connect(db)
    n = conn.execute("SELECT COUNT(*) FROM audit_events").fetchone()[0]
    conn.close()
    return n


def get(conn, path, token=None):
    headers = {"Authorization": "Bearer " + token} if token else {}
    conn.request("GET", path, headers=headers)
    reply = conn.getresponse()
    return reply.status, reply.read()


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
    rows_before = rows()
    path = "/api/v1/projects/%s/agents" % seed["projectId"]
    statuses, lock, counter = {}, threading.Lock(), [0]
    stop = time.time() + seconds

    def user():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.time() < stop:
            with lock:
                counter[0] += 1
                i = counter[0]
            status, _ = get(conn, "%s?bust=%d" % (path, i), seed["memberToken"])
            with lock:
                statuses[status] = statuses.get(status, 0) + 1

    users = [threading.Thread(target=user) for _ in range(4)]
    for u in users:
        u.start()
    for u in users:
        u.join()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(1200):
        health = json.loads(get(conn, "/healthz")[1])
        if health["audit"]["queueSize"] == 0:
            break
        time.sleep(0.1)
    written = rows() - rows_before
finally:
    hub.terminate()
    hub.wait()
answered = statuses.get(200, 0)
print(json.dumps({
    "seconds": seconds,
    "statuses": statuses,
    "rows": written,
    "rowsPerList": round(written / answered, 1) if answered else None,
    "growthMiB": round((checkpointed_size() - size_before) / 2**20, 2),
    "healthz": health,
}))
