#!/usr/bin/env python3
"""faults.py - misbehaving clients for the soak test (stdlib only).

    faults.py PORT SECONDS

For SECONDS, several threads open raw connections to 127.0.0.1:PORT and
misbehave in every way the wrk mix cannot: bodies shorter than their
Content-Length, connections dropped or reset mid-request, garbage, a huge
declared body, chunked bodies over the limit or with bad chunk sizes, header
blocks past the per-connection memory, pipelined requests, slow senders
(slowloris), clients that vanish before reading their answer, bursts of
cut uploads (then the service must answer at once), clients that leave
big answers unread, slow-body holders (64 bodies declared, barely sent),
stalled /diagnose readers, floods of idle connections (then /healthz) and
the same /apply again and again (the same bytes each time). Where the
server's answer is defined it is checked (413, 431, 400, three answers to
three pipelined requests...). The server runs with --max-body-bytes 1 MiB
and --request-timeout 4 (see run.sh).

Prints "faults: N passed, M failed" and one line per kind of fault with its
count; exit status 1 when a check failed.
"""
import os
import random
import socket
import struct
import sys
import threading
import time

PORT = int(sys.argv[1])
SECONDS = float(sys.argv[2])
MAX_BODY = 1 << 20

lock = threading.Lock()
passed = 0
failed = 0
counts = {}
failures = []


def record(kind, ok, what=""):
    global passed, failed
    with lock:
        counts[kind] = counts.get(kind, 0) + 1
        if ok:
            passed += 1
        else:
            failed += 1
            if len(failures) < 20:
                failures.append(f"{kind}: {what}")


def connect(timeout=10.0):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    return s


def read_all(s, limit=1 << 22, timeout=10.0):
    """Everything until the server closes (or limit/timeout)."""
    s.settimeout(timeout)
    out = b""
    try:
        while len(out) < limit:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except (socket.timeout, ConnectionResetError):
        pass
    return out


def read_responses(s, n, timeout=10.0):
    """Read n HTTP responses (Content-Length framed); returns statuses."""
    s.settimeout(timeout)
    buf = b""
    statuses = []
    try:
        while len(statuses) < n:
            while b"\r\n\r\n" not in buf:
                d = s.recv(65536)
                if not d:
                    return statuses
                buf += d
            head, rest = buf.split(b"\r\n\r\n", 1)
            lines = head.split(b"\r\n")
            status = int(lines[0].split()[1])
            length = 0
            for ln in lines[1:]:
                k, _, v = ln.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v.strip())
            while len(rest) < length:
                d = s.recv(65536)
                if not d:
                    return statuses
                rest += d
            statuses.append(status)
            buf = rest[length:]
    except (socket.timeout, ConnectionResetError):
        pass
    return statuses


def status_of(data):
    try:
        return int(data.split(b"\r\n", 1)[0].split()[1])
    except (IndexError, ValueError):
        return 0


def post_head(length, extra=b""):
    return (b"POST /encode HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
            + extra + b"Content-Length: " + str(length).encode() + b"\r\n\r\n")


GOOD = b'{"shape":[2,4]}'


def f_truncated_body():
    s = connect()
    s.sendall(post_head(1000) + GOOD + b" " * 50)
    s.close()
    record("truncated body, then close", True)


def f_abort_headers():
    s = connect()
    s.sendall(b"POST /encode HTTP/1.1\r\nHost: so")
    s.close()
    record("closed mid-headers", True)


def f_reset_mid_body():
    s = connect()
    s.sendall(post_head(5000) + GOOD + b" " * 500)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()  # RST
    record("reset mid-body", True)


def f_garbage():
    s = connect()
    junk = bytes(random.getrandbits(8) for _ in range(random.randint(1, 600)))
    s.sendall(junk + b"\r\n\r\n")
    data = read_all(s, timeout=6)
    s.close()
    st = status_of(data)
    # MHD answers 400 (or closes) to what does not parse as HTTP
    record("garbage bytes", st in (0, 400, 404, 405, 413, 414, 415, 431, 501, 505),
           f"status {st}")


def f_huge_declared():
    s = connect()
    s.sendall(post_head(10 ** 12) + b"{")
    st = read_responses(s, 1)
    s.close()
    record("Content-Length 1e12", st == [413], f"statuses {st}")


def f_chunked_over_limit():
    s = connect()
    s.sendall(b"POST /encode HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b" " * 65536
    sent = 0
    ok = True
    try:
        while sent < 3 * MAX_BODY + 2 * (1 << 20):
            s.sendall(b"10000\r\n" + chunk + b"\r\n")
            sent += len(chunk)
        s.sendall(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        ok = True  # closed on us past twice the limit: allowed
    st = read_responses(s, 1, timeout=10)
    s.close()
    record("chunked body over the limit", ok and st in ([], [413]), f"statuses {st}")


def f_chunked_just_over():
    s = connect()
    s.sendall(b"POST /encode HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n")
    body = GOOD + b" " * (MAX_BODY + 1000)
    step = 50000
    for i in range(0, len(body), step):
        part = body[i:i + step]
        s.sendall(b"%x\r\n" % len(part) + part + b"\r\n")
    s.sendall(b"0\r\n\r\n")
    st = read_responses(s, 1)
    s.close()
    record("chunked body just over the limit", st == [413], f"statuses {st}")


def f_bad_chunk():
    s = connect()
    s.sendall(b"POST /encode HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
    data = read_all(s, timeout=6)
    s.close()
    st = status_of(data)
    record("bad chunk size", st in (0, 400), f"status {st}")


def f_big_headers():
    s = connect()
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: soak\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n")
    data = read_all(s, timeout=6)
    s.close()
    st = status_of(data)
    record("70 KB header block", st in (0, 431), f"status {st}")


def f_pipelined():
    s = connect()
    one = post_head(len(GOOD)) + GOOD
    s.sendall(one + b"GET /healthz HTTP/1.1\r\nHost: soak\r\n\r\n" + one)
    st = read_responses(s, 3)
    s.close()
    record("3 pipelined requests", st == [200, 200, 200], f"statuses {st}")


def f_http10():
    s = connect()
    s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
    data = read_all(s, timeout=6)
    s.close()
    record("HTTP/1.0 without Host", status_of(data) == 200, f"status {status_of(data)}")


def f_nul_header():
    s = connect()
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: soak\r\nX-Nul: a\x00b\r\nX-Request-Id: \x01\x7f\r\n\r\n")
    data = read_all(s, timeout=6)
    s.close()
    st = status_of(data)
    record("NUL and control bytes in headers", st in (0, 200, 400), f"status {st}")


def f_expect_continue():
    s = connect()
    s.sendall(post_head(len(GOOD), b"Expect: 100-continue\r\n"))
    time.sleep(0.05)
    s.sendall(GOOD)
    data = read_all(s, timeout=3)
    s.close()
    record("Expect: 100-continue", b" 200 " in data, f"got {data[:60]!r}")


def f_connect_close():
    s = connect()
    s.close()
    record("connect and close", True)


def f_smuggle():
    s = connect()
    s.sendall(b"POST /encode HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
              b"Content-Length: 15\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"f\r\n" + GOOD + b"\r\n0\r\n\r\n")
    data = read_all(s, timeout=6)
    s.close()
    st = status_of(data)
    record("Content-Length with chunked", st in (0, 200, 400), f"status {st}")


def f_bad_method():
    s = connect()
    s.sendall(b"P\x01ST /encode HTTP/1.1\r\nHost: soak\r\n\r\n")
    data = read_all(s, timeout=6)
    s.close()
    record("invalid method token", status_of(data) in (0, 400, 404, 405, 501),
           f"status {status_of(data)}")


def f_vanish_before_answer():
    s = connect()
    body = b'{"shape":[2048,256]}'
    s.sendall(post_head(len(body)) + body)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    record("gone before a 2 MB answer", True)


def f_slow_reader():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", PORT))
    body = b'{"shape":[1024,256]}'
    s.sendall(post_head(len(body)) + body)
    s.settimeout(2)
    got = 0
    try:
        for _ in range(10):
            d = s.recv(512)
            if not d:
                break
            got += len(d)
            time.sleep(0.1)
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    record("slow reader, then gone", got > 0, f"read {got} bytes")


def f_slowloris():
    s = connect(timeout=15)
    req = post_head(2000) + GOOD
    t0 = time.time()
    closed = False
    try:
        for b in req + b" " * 1000:
            s.send(bytes([b]))
            time.sleep(0.2)
            if time.time() - t0 > 12:
                break
    except (BrokenPipeError, ConnectionResetError):
        closed = True
    took = time.time() - t0
    if not closed:
        closed = read_all(s, timeout=2) == b""
    s.close()
    # --request-timeout 4 in run.sh: closed after about 4 s
    record("slowloris (a byte every 0.2 s)", closed and took < 10, f"closed {closed} after {took:.1f} s")


def f_aborted_upload_burst():
    """Uploads cut by their clients (headers and a little
    body, then close at once) must release their --max-inflight slots at
    once, so the service is back for the next client right away."""
    for _ in range(24):
        s = connect()
        s.sendall(post_head(100000) + b'{"shape":[1,')
        s.close()
    time.sleep(0.5)  # a few periods of the server's watchdog (100 ms)
    s = connect()
    s.sendall(post_head(len(GOOD), b"Connection: close\r\n") + GOOD)
    data = read_all(s, timeout=6)
    s.close()
    record("24 cut uploads, then /encode", status_of(data) == 200, f"status {status_of(data)}")


def f_big_answer_unread():
    """Clients that ask for a big answer (about 5 MB of
    JSON) and do not read it for a while: the server's memory must stay
    within its budget (run.sh samples it) and the service go on."""
    socks = []
    body = b'{"shape":[2048,256]}'
    for _ in range(4):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", PORT))
        s.sendall(post_head(len(body)) + body)
        socks.append(s)
    time.sleep(1.5)
    for s in socks:
        s.close()
    record("4 big answers left unread, then gone", True)


def f_slow_body_holders():
    """Limit slow-body: connections that declare a near-limit body and send
    only its first bytes hold neither the memory budget (a body is charged
    as it arrives) nor --max-inflight slots (taken once the body is in):
    a client sending its whole body meanwhile is computed."""
    socks = []
    for _ in range(64):  # the default --max-inflight
        s = connect()
        s.sendall(post_head(100000) + b'{"shape":[1,2] ')
        socks.append(s)
    time.sleep(0.3)
    s = connect()
    s.sendall(post_head(len(GOOD), b"Connection: close\r\n") + GOOD)
    data = read_all(s, timeout=6)
    s.close()
    for h in socks:
        h.close()
    record("64 slow bodies held, then /encode", status_of(data) == 200, f"status {status_of(data)}")


def post_to(route, body):
    """One request on its own connection (Connection: close): the raw answer."""
    s = connect()
    s.sendall(b"POST " + route + b" HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
              b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
              + body)
    data = read_all(s, timeout=20)
    s.close()
    return data


def f_stalled_diagnose_readers():
    """Limit diagnose-budget: clients that send a /diagnose with return_map (an
    answer of about 1 MB, streamed and charged to the budget) and stop
    reading: the service goes on meanwhile."""
    body = b'{"scheme":"sinusoidal","return_map":true,"table":[' + b",".join(
        [b"[" + b",".join([b"0.5"] * 256) + b"]"] * 256) + b"]}"
    socks = []
    for _ in range(3):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", PORT))
        s.sendall(b"POST /diagnose HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        socks.append(s)
    time.sleep(1.0)
    data = post_to(b"/encode", GOOD)
    for s in socks:
        s.close()
    record("3 /diagnose answers left unread, then /encode", status_of(data) in (200, 503),
           f"status {status_of(data)}")


def f_idle_flood():
    """Limit probes: TCP connections that send nothing must not blind
    the probes."""
    socks = []
    try:
        for _ in range(200):
            socks.append(connect())
        s = connect()
        t0 = time.time()
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n\r\n")
        data = read_all(s, timeout=8)
        took = time.time() - t0
        s.close()
    finally:
        for h in socks:
            h.close()
    record("200 idle connections, then /healthz", status_of(data) == 200 and took < 5,
           f"status {status_of(data)} after {took:.2f} s")


SAME_APPLY = (b'{"embeddings":[' + b",".join(  # the default model: d_model 512
    b"[" + b",".join(str(((t * 512 + j) % 7 - 3) / 4).encode() for j in range(512)) + b"]"
    for t in range(4)) + b'],"positions":[3,1,4,1]}')
first_answer = []


def answer_body(data):
    return data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""


def f_same_bits():
    """Limit same-bits: the same /apply, sent while everything else runs,
    has the same bytes every time."""
    data = post_to(b"/apply", SAME_APPLY)
    if status_of(data) == 503:  # the budget or the queue was full: no answer to compare
        record("same /apply, same bytes under load (503 skipped)", True)
        return
    body = answer_body(data)
    with lock:
        if not first_answer:
            first_answer.append(body)
        want = first_answer[0]
    record("same /apply, same bytes under load", status_of(data) == 200 and body == want,
           f"status {status_of(data)}, {len(body)} bytes, equal {body == want}")


FAULTS = [f_stalled_diagnose_readers, f_idle_flood, f_same_bits, f_same_bits, f_slow_body_holders, f_aborted_upload_burst, f_big_answer_unread, f_truncated_body, f_abort_headers, f_reset_mid_body, f_garbage, f_huge_declared,
          f_chunked_over_limit, f_chunked_just_over, f_bad_chunk, f_big_headers, f_pipelined,
          f_http10, f_nul_header, f_expect_continue, f_connect_close, f_smuggle, f_bad_method,
          f_vanish_before_answer, f_slow_reader]


def worker(seed, deadline):
    rnd = random.Random(seed)
    while time.time() < deadline:
        f = rnd.choice(FAULTS)
        try:
            f()
        except (ConnectionRefusedError, socket.timeout, OSError) as e:
            record(f.__name__ + " (client error)", False, repr(e))


def main():
    deadline = time.time() + SECONDS
    threads = [threading.Thread(target=worker, args=(i, deadline)) for i in range(3)]
    threads.append(threading.Thread(target=lambda: [f_slowloris() for _ in range(2)]))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in sorted(counts):
        print(f"faults:   {counts[k]:6d}  {k}")
    for f in failures:
        print(f"FAIL fault {f}")
    print(f"faults: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
