#!/usr/bin/env python3
"""What a run put on the wire, from a tcpdump capture (pcap).

    wire_check.py tls PCAP [--ports P,P,...] --secret-file F [--attacker IP]
        Every TCP connection opened in the capture (or to one of PORTS), in both
        directions (only the server's side of a connection from the
        attacker's IP, which sends what it likes), is TLS from its first
        byte to its last: a sequence of
        well-formed records (handshake first), nothing outside a record.
        The run's secret appears nowhere in the capture. Exits 1 naming the
        first connection and offset that break it, or with no connection
        to check.
    wire_check.py plaintext PCAP [--ports ...] --secret-file F
        The check above must see what a run without TLS sends: at least one
        connection is not TLS and the secret is in the capture;
        exits 1 otherwise (so the tls check is known to be able to fail).
    wire_check.py client-stream PCAP --port P --out FILE
        Writes the bytes a client sent on the longest captured connection
        to port P (a real session, to replay).

Reads pcap files of Ethernet (linktype 1) or Linux cooked (113, 276)
frames with IPv4; a connection's bytes are put in order by TCP sequence
number, retransmissions dropped, and checked up to its first gap (a
packet the capture missed).
"""
import argparse
import struct
import sys

TLS_TYPES = {20: "change_cipher_spec", 21: "alert", 22: "handshake",
             23: "application_data"}
MAX_RECORD = 16384 + 2048  # TLSCiphertext's limit (RFC 8446, 5.2)


def frames(path):
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            sys.exit(f"{path}: not a pcap file (only {len(head)} bytes)")
        magic = head[:4]
        if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
            order = "<"
        elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
            order = ">"
        else:
            sys.exit(f"{path}: not a pcap file (magic {magic.hex()})")
        linktype = struct.unpack(order + "I", head[20:24])[0]
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            incl = struct.unpack(order + "IIII", rec)[2]
            data = f.read(incl)
            if len(data) < incl:
                return  # the capture was cut mid-packet
            yield linktype, data


def ipv4_payload(linktype, frame):
    if linktype == 1:
        off = 12
        ethertype = struct.unpack(">H", frame[off:off + 2])[0]
        while ethertype == 0x8100:  # VLAN tag
            off += 4
            ethertype = struct.unpack(">H", frame[off:off + 2])[0]
        return frame[off + 2:] if ethertype == 0x0800 else None
    if linktype == 113:
        return frame[16:] if frame[14:16] == b"\x08\x00" else None
    if linktype == 276:
        return frame[20:] if frame[0:2] == b"\x08\x00" else None
    sys.exit(f"unsupported pcap link type {linktype}")


def segments(path):
    """(src, sport, dst, dport, seq, flags, payload) of every TCP segment."""
    for linktype, frame in frames(path):
        ip = ipv4_payload(linktype, frame)
        if ip is None or len(ip) < 20 or ip[9] != 6:
            continue
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        src = ".".join(str(b) for b in ip[12:16])
        dst = ".".join(str(b) for b in ip[16:20])
        tcp = ip[ihl:total]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        doff = (tcp[12] >> 4) * 4
        yield src, sport, dst, dport, seq, tcp[13], bytes(tcp[doff:])


class Stream:
    """One direction of one connection."""

    def __init__(self):
        self.isn = None  # the SYN's sequence number, when captured
        self.parts = {}  # seq -> payload
        self._data = None  # data()'s answer, once the capture is read

    def add(self, seq, flags, payload):
        if flags & 0x02:  # SYN
            self.isn = seq
        if payload and len(payload) > len(self.parts.get(seq, b"")):
            self.parts[seq] = payload

    def data(self):
        """The bytes in order up to the first gap, and whether one was hit."""
        if self._data is None:
            self._data = self._assemble()
        return self._data

    def _assemble(self):
        if not self.parts:
            return b"", False
        # Without the SYN, the lowest number (no wrap in the runs checked).
        start = ((self.isn + 1) & 0xFFFFFFFF if self.isn is not None
                 else min(self.parts))
        out = bytearray()
        rel = {(seq - start) & 0xFFFFFFFF: p for seq, p in self.parts.items()}
        offsets = sorted(rel)
        at = 0
        for off in offsets:
            p = rel[off]
            if off > at:
                return bytes(out), True
            if off + len(p) > at:
                out += p[at - off:]
                at = off + len(p)
        return bytes(out), False


def connections(path, ports=None):
    """{(client, server): (client->server Stream, server->client Stream)}

    With PORTS, the connections to those ports; without, every connection
    whose opening SYN is in the capture (its sender is the client)."""
    packets = list(segments(path))
    clients = set()  # (host, port) of each SYN without ACK
    for src, sport, _, _, _, flags, _ in packets:
        if flags & 0x12 == 0x02:
            clients.add((src, sport))
    conns = {}
    for src, sport, dst, dport, seq, flags, payload in packets:
        if ports is not None:
            to_server = dport in ports
            if not to_server and sport not in ports:
                continue
        elif (src, sport) in clients:
            to_server = True
        elif (dst, dport) in clients:
            to_server = False
        else:
            continue  # opened before the capture began
        if to_server:
            key, side = ((src, sport), (dst, dport)), 0
        else:
            key, side = ((dst, dport), (src, sport)), 1
        pair = conns.setdefault(key, (Stream(), Stream()))
        pair[side].add(seq, flags, payload)
    return conns


def tls_problem(data):
    """None when DATA is TLS records only (the last may be cut by the
    capture's end); else what is wrong and where."""
    off = 0
    while off + 5 <= len(data):
        ctype, major, minor, length = struct.unpack(">BBBH", data[off:off + 5])
        if ctype not in TLS_TYPES:
            return f"offset {off}: byte {ctype:#04x} is no TLS record type " \
                   f"(bytes {data[off:off + 16].hex()})"
        if off == 0 and ctype != 22:
            return f"offset 0: the first record is {TLS_TYPES[ctype]}, " \
                   "not a handshake"
        if major != 3 or minor > 4:
            return f"offset {off}: record version {major}.{minor}"
        if length > MAX_RECORD:
            return f"offset {off}: record of {length} bytes"
        off += 5 + length
    return None


def read_secret(path):
    with open(path, "rb") as f:
        secret = f.read().strip()
    if len(secret) < 16:
        sys.exit(f"{path}: a secret of {len(secret)} bytes is too short "
                 "to search for")
    return secret


def secret_seen(path, secret, conns):
    for pair in conns.values():
        for stream in pair:
            if secret in stream.data()[0]:
                return True
    # Anywhere else in the capture (another port, a single packet).
    with open(path, "rb") as f:
        return secret in f.read()


def check(args, want_tls):
    ports = {int(p) for p in args.ports.split(",") if p} if args.ports else None
    conns = connections(args.pcap, ports)
    secret = read_secret(args.secret_file)
    checked = total = 0
    problems = []
    for (client, server), pair in sorted(conns.items()):
        for name, stream in zip(("client", "server"), pair):
            if name == "client" and client[0] == args.attacker:
                continue
            data, _ = stream.data()  # up to a missed packet, if any
            if not data:
                continue
            checked += 1
            total += len(data)
            problem = tls_problem(data)
            if problem:
                problems.append(f"{client[0]}:{client[1]} -> "
                                f"{server[0]}:{server[1]}, {name} side, "
                                f"{problem}")
    seen = secret_seen(args.pcap, secret, conns)
    where = (f"to ports {','.join(str(p) for p in sorted(ports))}"
             if ports else "opened in the capture")
    print(f"wire_check: {len(conns)} connections {where}, {checked} streams, "
          f"{total} bytes; not TLS: {len(problems)}; secret on the wire: "
          f"{'yes' if seen else 'no'}")
    if checked == 0:
        print("wire_check: FAIL: no bytes to check")
        return 1
    if want_tls:
        for p in problems[:5]:
            print(f"wire_check: FAIL: not TLS: {p}")
        if seen:
            print("wire_check: FAIL: the run's secret is in the capture")
        return 1 if problems or seen else 0
    if not problems or not seen:
        print("wire_check: FAIL: a run without TLS should show plaintext "
              "(a stream that is not TLS and the secret)")
        return 1
    print(f"wire_check: plaintext seen as expected: {problems[0]}")
    return 0


def client_stream(args):
    conns = connections(args.pcap, {args.port})
    best = b""
    for pair in conns.values():
        data, _ = pair[0].data()
        if len(data) > len(best):
            best = data
    if not best:
        print(f"wire_check: FAIL: no connection to port {args.port} captured")
        return 1
    with open(args.out, "wb") as f:
        f.write(best)
    print(f"wire_check: {len(best)} client bytes of a connection to port "
          f"{args.port}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("tls", "plaintext"):
        p = sub.add_parser(name)
        p.add_argument("pcap")
        p.add_argument("--ports", help="default: every connection")
        p.add_argument("--secret-file", required=True)
        p.add_argument("--attacker", default="")
    p = sub.add_parser("client-stream")
    p.add_argument("pcap")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.cmd == "client-stream":
        return client_stream(args)
    return check(args, args.cmd == "tls")


if __name__ == "__main__":
    sys.exit(main())
