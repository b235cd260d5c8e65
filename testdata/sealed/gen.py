#!/usr/bin/env python3
"""Writes the internal/sealed test vectors with an implementation independent
of ours (Python's cryptography package), so that the Go tests check the
package against RFC 5869 and RFC 8439 rather than against itself.

    python3 testdata/sealed/gen.py   # from the repository root
"""
import hashlib, hmac, json, os, struct
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

HERE = os.path.dirname(os.path.abspath(__file__))

def hkdf(secret, salt, info, n=32):
    prk = hmac.new(salt, secret, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:n]

def derive(secret, inonce, rnonce, label):
    prk_salt = inonce + rnonce
    base = b"switchboard sealed v1 " + label.encode()
    return hkdf(secret, prk_salt, base + b" i2r"), hkdf(secret, prk_salt, base + b" r2i")

def seal(key, key_id, seq, payload):
    header = struct.pack(">BIQ", 1, key_id, seq)
    nonce = header[1:]  # key id || sequence number
    return header + ChaCha20Poly1305(key).encrypt(nonce, payload, header)

def hx(b):
    return b.hex()

def seq_bytes(n, start):
    return bytes((start + i) % 256 for i in range(n))

derives = []
for name, secret, inonce, rnonce, label in [
    ("counting bytes", seq_bytes(32, 0), seq_bytes(16, 0x40), seq_bytes(16, 0x80), "session"),
    ("handshake with zero responder nonce", seq_bytes(32, 0), seq_bytes(16, 0x40), bytes(16), "handshake"),
    ("same secret, a reconnect's new nonces", seq_bytes(32, 0), seq_bytes(16, 0x41), seq_bytes(16, 0x81), "session"),
    ("all zero", bytes(32), bytes(16), bytes(16), "p2p"),
]:
    i2r, r2i = derive(secret, inonce, rnonce, label)
    derives.append(dict(name=name, secret=hx(secret), initiator_nonce=hx(inonce),
                        responder_nonce=hx(rnonce), label=label, i2r=hx(i2r), r2i=hx(r2i)))

key = bytes.fromhex(derives[0]["i2r"])
seals = []
for name, key_id, seq, payload in [
    ("empty payload, sequence 0", 7, 0, b""),
    ("hello, sequence 1", 7, 1, b"hello"),
    ("a FRAME-sized payload", 0xDEADBEEF, 41, seq_bytes(200, 3)),
    ("the last usable sequence number", 1, 2**64 - 2, b"last"),
]:
    seals.append(dict(name=name, key=hx(key), key_id=key_id, sequence=seq,
                      payload=hx(payload), datagram=hx(seal(key, key_id, seq, payload))))

# A stream an opener sees in order; "want" is the error Open must return.
rkey = bytes.fromhex(derives[0]["r2i"])
d = lambda seq, p: hx(seal(rkey, 9, seq, p))
forged = bytearray(seal(rkey, 9, 5, b"five"))
forged[-1] ^= 1
wrong_key = hx(seal(key, 9, 6, b"six"))
replay = dict(key=hx(rkey), key_id=9, steps=[
    dict(note="first", datagram=d(0, b"zero"), want="", payload=hx(b"zero")),
    dict(note="ahead", datagram=d(3, b"three"), want="", payload=hx(b"three")),
    dict(note="late but inside the window", datagram=d(2, b"two"), want="", payload=hx(b"two")),
    dict(note="the same datagram again", datagram=d(3, b"three"), want="replay"),
    dict(note="forged: last tag bit flipped", datagram=hx(bytes(forged)), want="auth"),
    dict(note="the forgery did not consume sequence 5", datagram=d(5, b"five"), want="", payload=hx(b"five")),
    dict(note="sealed with the other direction's key", datagram=wrong_key, want="auth"),
    dict(note="another key id", datagram=hx(seal(rkey, 10, 7, b"x")), want="keyid"),
    dict(note="jump far ahead", datagram=d(5000, b"far"), want="", payload=hx(b"far")),
    dict(note="older than the window", datagram=d(5000 - 1024, b"old"), want="replay"),
    dict(note="just inside the window", datagram=d(5000 - 1023, b"edge"), want="", payload=hx(b"edge")),
    dict(note="truncated", datagram=d(5001, b"")[:40], want="short"),
    dict(note="unknown version", datagram="02" + d(5002, b"v")[2:], want="version"),
])

for fname, obj in [("derive.json", derives), ("seal.json", seals), ("replay.json", replay)]:
    with open(os.path.join(HERE, fname), "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
