#!/usr/bin/env python3
"""sigterm_load.py - SIGTERM arrives while the server is under load; no
request the server accepted may be lost (stdlib only).

    sigterm_load.py PORT PID LOGFILE [CLIENTS] [SECONDS_BEFORE_SIGTERM]

The server (pid PID, listening on 127.0.0.1:PORT) must run with
--log-format json, its stderr going to LOGFILE, and a --drain-timeout long
enough for every request in flight. CLIENTS threads (16) send a mix of
/encode, small and large /apply and /healthz over keep-alive connections,
each request with its own X-Request-Id, as fast as they are answered. After
SECONDS_BEFORE_SIGTERM (3) this script sends SIGTERM; the clients go on
until the server refuses their new connections; then the script waits for
the server to exit and reads its access log.

What is checked, and why:
  1. Every response that arrived is whole (all Content-Length bytes) and
     right: a 200 with the same answer as before the load, bit for bit
     (also for /apply: its products do not depend on what else runs, issue
     limit same-bits), or a 503 `unavailable` with Retry-After.
  2. Nothing fails before the SIGTERM.
  3. Accepted means logged: the server writes one access-log line per
     request whose headers it read. Every request id in the log must have
     reached its client as a whole response with the logged status: a
     request the server took on is never dropped, cut or left unanswered.
  4. A request that got no response (its connection refused, or closed
     before the server read it) must not be in the log: those are the
     requests the server never accepted, which the client may retry.
  5. The drain was exercised: some 200s arrived after the SIGTERM (requests
     in flight completed) and some connections were refused afterwards (the
     listener closed).

Prints "sigterm: N passed, M failed"; exit status 1 on any failure.
"""
import base64
import http.client
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

PORT = int(sys.argv[1])
PID = int(sys.argv[2])
LOGFILE = sys.argv[3]
CLIENTS = int(sys.argv[4]) if len(sys.argv) > 4 else 16
BEFORE = float(sys.argv[5]) if len(sys.argv) > 5 else 3.0

passed = 0
failed = 0
messages = []


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL sigterm: {what}")


def floats_b64(values):
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def lcg(n, seed):
    out = []
    x = seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2147483648
        out.append(x / 1073741824.0 - 1.0)
    return out


def make_requests():
    reqs = []
    for k in range(4):
        emb = lcg(16 * 64, 11 + k)
        rows = [emb[i * 64:(i + 1) * 64] for i in range(16)]
        body = json.dumps({"embeddings": rows, "offset": 1000 * k})
        reqs.append(("POST", "/encode", body, "exact"))
    for tokens in (64, 64, 512):
        body = json.dumps({"embeddings": floats_b64(lcg(tokens * 512, tokens)),
                           "shape": [tokens, 512], "encoding": "base64",
                           "return": ["q", "k", "v"]})
        reqs.append(("POST", "/apply", body, "close"))
    reqs.append(("GET", "/healthz", None, "exact"))
    return reqs


def send(conn, method, path, body, rid):
    headers = {"X-Request-Id": rid}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    return resp.status, dict((k.lower(), v) for k, v in resp.getheaders()), data


def b64_arrays(data):
    j = json.loads(data)
    out = {}
    for key in ("q", "k", "v"):
        raw = base64.b64decode(j[key])
        out[key] = struct.unpack(f"<{len(raw) // 4}f", raw)
    return out


def same_apply(got, want):
    try:
        a, b = b64_arrays(got), want
    except (ValueError, KeyError, TypeError):
        return False
    for key in b:
        x, y = a.get(key), b[key]
        if x is None or len(x) != len(y):
            return False
        if struct.pack(f"<{len(x)}f", *x) != struct.pack(f"<{len(y)}f", *y):
            return False
    return True


def main():
    reqs = make_requests()
    # the answers before any load
    expected = []
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    for i, (m, p, b, how) in enumerate(reqs):
        st, _, data = send(conn, m, p, b, f"ref-{i}")
        if st != 200:
            print(f"FAIL sigterm: reference request {i} {m} {p} got {st}: {data[:200]!r}")
            return 1
        expected.append(data if how == "exact" else b64_arrays(data))
    conn.close()

    outcomes = {}  # rid -> (kind, status, t_sent, t_done, detail)
    olock = threading.Lock()
    sigterm_at = [None]
    stop = threading.Event()

    def client(cid):
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
        n = 0
        refused_after = 0
        while not stop.is_set():
            i = (cid + n) % len(reqs)
            m, p, b, how = reqs[i]
            rid = f"sig-{cid}-{n}"
            n += 1
            t0 = time.time()
            kind, status, detail = "resp", 0, ""
            try:
                status, hdrs, data = send(c, m, p, b, rid)
                if status == 200:
                    good = data == expected[i] if how == "exact" else same_apply(data, expected[i])
                    detail = "" if good else f"wrong 200 body for request {i} ({p})"
                elif status == 503:
                    try:
                        code = json.loads(data)["error"]["code"]
                    except (ValueError, KeyError, TypeError):
                        code = None
                    if code != "unavailable" or "retry-after" not in hdrs:
                        detail = f"503 without unavailable/Retry-After: {data[:100]!r}"
                else:
                    detail = f"status {status}: {data[:100]!r}"
                if hdrs.get("connection", "").lower() == "close":
                    c.close()
            except ConnectionRefusedError:
                kind = "refused"
                c.close()
            except http.client.IncompleteRead as e:
                kind, detail = "incomplete", f"{len(e.partial)} bytes of a response"
                c.close()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                kind, detail = "cut", type(e).__name__
                c.close()
            except socket.timeout:
                kind, detail = "timeout", "no answer within 120 s"
                c.close()
            except (OSError, http.client.HTTPException) as e:
                kind, detail = "error", repr(e)
                c.close()
            with olock:
                outcomes[rid] = (kind, status, t0, time.time(), detail)
            if kind != "resp" and sigterm_at[0] is not None:
                refused_after += 1
                if kind == "refused" or refused_after > 3:
                    break
                time.sleep(0.05)
        c.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    time.sleep(BEFORE)
    sigterm_at[0] = time.time()
    os.kill(PID, signal.SIGTERM)
    deadline = time.time() + 60
    for t in threads:
        t.join(max(0.1, deadline - time.time()))
    stop.set()
    for t in threads:
        t.join()
    # the server exits by itself; its log is complete then
    while os.path.exists(f"/proc/{PID}") and time.time() < deadline:
        try:
            with open(f"/proc/{PID}/status") as f:
                if "State:\tZ" in f.read():
                    break
        except OSError:
            break
        time.sleep(0.05)

    logged = {}
    with open(LOGFILE, errors="replace") as f:
        for line in f:
            try:
                j = json.loads(line)
            except ValueError:
                continue
            rid = j.get("request_id", "") if isinstance(j, dict) else ""
            if rid.startswith("sig-"):
                logged[rid] = j.get("status")

    t_term = sigterm_at[0]
    by_kind = {}
    for rid, (kind, status, t0, t1, detail) in outcomes.items():
        by_kind[kind] = by_kind.get(kind, 0) + 1
    print(f"sigterm: {len(outcomes)} requests from {CLIENTS} clients; outcomes {by_kind}; "
          f"{len(logged)} in the access log")

    # 1 and 2
    bad = [(rid, o) for rid, o in outcomes.items() if o[0] == "resp" and o[4]]
    check(not bad, f"{len(bad)} responses were wrong, e.g. {bad[:3]}")
    broken = [(rid, o) for rid, o in outcomes.items() if o[0] in ("incomplete", "timeout", "error")]
    check(not broken, f"{len(broken)} responses were incomplete or never came, e.g. {broken[:3]}")
    early = [(rid, o) for rid, o in outcomes.items() if o[0] != "resp" and o[3] < t_term]
    check(not early, f"{len(early)} requests failed before the SIGTERM, e.g. {early[:3]}")
    # 3: every accepted (logged) request reached its client, whole, same status
    lost = []
    for rid, st in logged.items():
        o = outcomes.get(rid)
        if o is None or o[0] != "resp" or o[1] != st:
            lost.append((rid, st, o))
    check(not lost, f"{len(lost)} accepted requests did not reach their client as logged, "
          f"e.g. {lost[:3]}")
    check(len(logged) >= sum(1 for o in outcomes.values() if o[0] == "resp"),
          "some answered requests are missing from the access log")
    # 4: no response means not accepted
    unanswered = [rid for rid, o in outcomes.items() if o[0] in ("cut", "refused") and rid in logged]
    check(not unanswered, f"{len(unanswered)} requests the server logged got no response, "
          f"e.g. {unanswered[:3]}")
    # 5: the drain was exercised
    after = sum(1 for o in outcomes.values() if o[0] == "resp" and o[1] == 200
                and o[2] < t_term < o[3])
    check(after >= 1, "no request in flight at the SIGTERM completed with 200 "
          "(the load did not overlap the signal)")
    refused = sum(1 for o in outcomes.values() if o[0] == "refused")
    check(refused >= 1, "no connection was refused after the SIGTERM")
    n503 = sum(1 for o in outcomes.values() if o[0] == "resp" and o[1] == 503)
    print(f"sigterm: {after} requests in flight at the SIGTERM completed with 200; "
          f"{n503} answered 503 while draining; {refused} connections refused")
    print(f"sigterm: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
