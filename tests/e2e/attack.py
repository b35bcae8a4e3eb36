#!/usr/bin/env python3
"""Connects to a run's listeners as an attacker would (run it from another
host, e.g. another network namespace).

    attack.py --targets H:P,H:P,... --other-cert PEM --other-key KEY
              [--replay FILE --replay-target H:P]

For each target, four tries, each of which must get nothing:
  plain      a TCP connection sending an HTTP/2 preface and a gRPC call
             in cleartext: the reply may hold TLS records (an alert), never
             a byte outside one, and never application data;
  no-cert    TLS without a client certificate: no application byte comes
             back (the server refuses the handshake or closes at once);
  other-ca   TLS presenting a certificate of another CA: the same;
and with --replay, the client bytes of a captured real session sent again
to --replay-target: the server closes the connection within 10 s.
Prints a line per try; exits 1 if any try got something, or could not
connect at all (a target that no longer listens tells nothing).
"""
import argparse
import concurrent.futures
import socket
import ssl
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# SETTINGS (empty), then HEADERS of stream 1 with a literal ":path" of a PS
# method, then 64 bytes of DATA: what a plaintext gRPC client would send.
PATH = b"/dtf.rpc.ParameterServer/Step"
HEADERS = b"\x04" + bytes([len(PATH)]) + PATH
CALL = (b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
        + struct.pack(">I", len(HEADERS))[1:] + b"\x01\x04\x00\x00\x00\x01"
        + HEADERS
        + b"\x00\x00\x40\x00\x01\x00\x00\x00\x01" + b"\x00" * 64)


def parse_target(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


def read_all(sock, seconds):
    """What the peer sends within SECONDS, until it closes."""
    sock.settimeout(0.5)
    got = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionError, OSError):
            return got, True
        if not chunk:
            return got, True
        got += chunk
    return got, False


def only_tls_without_data(reply):
    """Whether REPLY is TLS records only (alerts or handshake), none of
    them application data."""
    off = 0
    while off + 5 <= len(reply):
        ctype, major, _, length = struct.unpack(">BBBH", reply[off:off + 5])
        if ctype not in (21, 22) or major != 3:
            return False
        off += 5 + length
    return off >= len(reply) or len(reply) - off < 5


def plain(target):
    with socket.create_connection(target, timeout=5) as s:
        try:
            s.sendall(PREFACE + CALL)
        except OSError:
            return True, "refused while sending"
        reply, closed = read_all(s, 5)
    ok = only_tls_without_data(reply)
    how = "closed" if closed else "open after 5 s"
    return ok, f"{len(reply)} bytes back ({reply[:8].hex() or 'none'}), {how}"


def tls_try(target, cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    if cert:
        ctx.load_cert_chain(cert, key)
    raw = socket.create_connection(target, timeout=5)  # errors: to main
    try:
        s = ctx.wrap_socket(raw, server_hostname=target[0])
    except (ssl.SSLError, ConnectionError, OSError) as e:
        raw.close()
        return True, f"handshake refused ({type(e).__name__}: {e})"
    got = b""
    try:
        s.sendall(PREFACE + CALL)
        got, closed = read_all(s, 5)
        how = "closed" if closed else "open after 5 s"
    except (ssl.SSLError, ConnectionError, OSError) as e:
        how = f"refused after the handshake ({type(e).__name__}: {e})"
    finally:
        s.close()
    return not got, f"{len(got)} application bytes back, {how}"


def replay(target, path):
    with open(path, "rb") as f:
        data = f.read()
    with socket.create_connection(target, timeout=5) as s:
        sent = 0
        try:
            for i in range(0, len(data), 16384):
                s.sendall(data[i:i + 16384])
                sent = i + len(data[i:i + 16384])
        except OSError:
            pass
        reply, closed = read_all(s, 10)
    return closed, (f"{sent} of {len(data)} captured bytes sent, "
                    f"{len(reply)} bytes back, "
                    f"{'closed by the server' if closed else 'still open after 10 s'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", required=True)
    parser.add_argument("--other-cert", required=True)
    parser.add_argument("--other-key", required=True)
    parser.add_argument("--replay")
    parser.add_argument("--replay-target")
    args = parser.parse_args()
    tries = []  # (target text, name, function)
    for text in args.targets.split(","):
        target = parse_target(text)
        tries += [(text, "plain", lambda t=target: plain(t)),
                  (text, "no-cert", lambda t=target: tls_try(t, None, None)),
                  (text, "other-ca", lambda t=target: tls_try(
                      t, args.other_cert, args.other_key))]
    if args.replay:
        tries.append((args.replay_target, "replay",
                      lambda: replay(parse_target(args.replay_target),
                                     args.replay)))

    def attempt(one):
        try:
            return one[2]()
        except (ConnectionError, OSError) as e:
            # Nothing listens: the try tells nothing, so it fails.
            return False, f"could not connect ({e})"

    # All at once, while the run goes on: each waits at most seconds.
    with concurrent.futures.ThreadPoolExecutor(len(tries)) as pool:
        results = list(pool.map(attempt, tries))
    failed = 0
    for (text, name, _), (ok, what) in zip(tries, results):
        failed += not ok
        print(f"attack: {text} {name}: "
              f"{'nothing' if ok else 'GOT SOMETHING'}: {what}")
    print(f"attack: {len(tries)} tries, {failed} got something")
    return 1 if failed or not tries else 0


if __name__ == "__main__":
    sys.exit(main())
