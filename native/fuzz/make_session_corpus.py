#!/usr/bin/env python3
"""Writes the seed inputs of fuzz_session into native/fuzz/corpus_session/.

One input (see the header comment of fuzz_session.c): a mode byte, then
records of six control bytes (repairs, type | fd count << 3, fd kinds low and
high, pick, length) and their bytes. The seeds are the conversations the
fuzzer should start from: each message type well-formed, the common lies, and
a little garbage; the fuzzer mutates from there.

  python3 native/fuzz/make_session_corpus.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus_session")

# Input byte 0
SEND, ALLOW_UNSEALED, CLOSE_FIRST = 0x01, 0x02, 0x04
# Record repairs
FIX_HEADER, REAL_DESC, BY_ID, FIX_META = 0x01, 0x02, 0x04, 0x08
REAL_PAIR, NEAR, RELEASE, COUNT_LIES = 0x10, 0x20, 0x40, 0x80
# Message types and attachable fd kinds
HANDLE, FRAME, REL, FORGET, KEEP, FENCE = range(6)
K_FRAME, K_SMALL, K_SEALABLE, K_PIPE, K_DEV_NULL, K_EVENTFD, K_SOCKET = range(7)

META_SIZE = 136  # sizeof(gpures_frame_meta); FIX_META writes the true size anyway


def record(repairs, type_, fds=(), pick=0, body=b""):
    kinds = 0
    for i, k in enumerate(fds):
        kinds |= k << (4 * i)
    ctl = bytes([repairs, type_ | len(fds) << 3, kinds & 0xFF, kinds >> 8, pick, len(body)])
    return ctl + body


def meta(flags=0x1, sequence=7):
    """A gpures_frame_meta with a sequence number (and zeros elsewhere)."""
    m = struct.pack("<IIq", META_SIZE, flags, sequence)
    return m + bytes(META_SIZE - len(m))


def announce(buffer_pick, **kw):
    return record(FIX_HEADER | REAL_DESC | REAL_PAIR, FRAME, (K_FRAME,), buffer_pick, **kw)


def by_id(buffer_pick, extra=0, body=None):
    return record(FIX_HEADER | BY_ID | FIX_META | REAL_PAIR | extra, FRAME, (), buffer_pick,
                  meta() if body is None else body)


def fence(lie, arg=b"", pick=4):
    """A FENCE naming the frame `pick` names; `lie` is its first byte (0: honest)."""
    return record(FIX_HEADER | REAL_DESC | REAL_PAIR, FENCE, (K_EVENTFD,), pick,
                  bytes([lie]) + arg)


SEEDS = {
    # RECEIVE: the normal stream, then the sender forgets the buffer and names it again.
    "recv-announce-frames-forget": bytes([0]) + announce(0) + by_id(4, RELEASE)
    + by_id(8, RELEASE, b"") + record(FIX_HEADER | REAL_PAIR, FORGET, (), 0) + by_id(12),
    "recv-announce-twice": bytes([0]) + announce(1) + announce(1) + by_id(5, RELEASE),
    "recv-never-announced": bytes([0]) + by_id(2) + by_id(3, RELEASE),
    "recv-handle": bytes([0]) + record(FIX_HEADER | REAL_DESC, HANDLE, (K_FRAME,), 9),
    "recv-bad-fds": bytes([ALLOW_UNSEALED]) + announce(0, body=b"")
    + record(FIX_HEADER | REAL_DESC | REAL_PAIR, FRAME, (K_SMALL,), 1)
    + record(FIX_HEADER | REAL_DESC | REAL_PAIR, FRAME, (K_FRAME, K_PIPE), 2)
    + record(FIX_HEADER | REAL_DESC | REAL_PAIR | COUNT_LIES, FRAME, (K_FRAME,), 3)
    + record(FIX_HEADER | REAL_DESC | REAL_PAIR, FRAME, (K_SEALABLE,), 3),
    "recv-releases-not-ours": bytes([0]) + announce(0) + record(FIX_HEADER | REAL_PAIR, REL, (), 0)
    + record(FIX_HEADER | REAL_PAIR, KEEP, (), 0) + record(FIX_HEADER, REL, (K_PIPE,), 0),
    "recv-close-while-held": bytes([CLOSE_FIRST]) + announce(0) + by_id(4) + announce(1)
    + by_id(5, RELEASE),
    "recv-garbage": bytes([0]) + record(0, 0, (K_DEV_NULL,), 0, bytes(range(60)))
    + record(0, 0, (), 0, b"") + record(FIX_HEADER, 7, (), 0, b"\xff" * 20),
    "recv-bad-meta": bytes([0]) + announce(0, body=meta(0xFF, -1))
    + by_id(4, 0, meta(0x4, 0)) + by_id(8, 0, b"\x08\0\0\0\x01\0\0\0"),
    # RECEIVE: FENCEs, each followed by the frame it names (pick 4: buffer 1, serial 2): an
    # honest one, then a kind not known here, a lying header size, a lying descriptor size, a
    # cut body, a header cut after its type, a kind that is no SyncPoint.
    "recv-fence-honest": bytes([0]) + announce(0) + fence(0) + by_id(4, RELEASE),
    "recv-fence-unknown-kind": bytes([0]) + announce(0) + fence(2, b"\x02") + by_id(4)
    + by_id(8, RELEASE),
    "recv-fence-lying-header-size": bytes([0]) + announce(0) + fence(3, b"\x28") + by_id(4)
    + by_id(8, RELEASE),
    "recv-fence-lying-desc-size": bytes([0]) + announce(0) + fence(4, b"\x07") + by_id(4)
    + by_id(8, RELEASE),
    "recv-fence-cut-body": bytes([0]) + announce(0) + fence(5, b"\x07") + by_id(4)
    + by_id(8, RELEASE),
    "recv-fence-cut-header": bytes([0]) + announce(0) + fence(6, b"\x02") + by_id(4)
    + by_id(8, RELEASE),
    "recv-fence-not-a-sync-kind": bytes([0]) + announce(0) + fence(7) + by_id(4)
    + record(FIX_HEADER | REAL_DESC, HANDLE, (K_FRAME,), 9),
    # SEND: true releases, lies near the truth, a KEEP, garbage with fds.
    "send-true-releases": bytes([SEND | 3 << 3]) + record(FIX_HEADER | REAL_PAIR, REL, (), 0)
    + record(FIX_HEADER | REAL_PAIR, REL, (), 1) + record(FIX_HEADER | REAL_PAIR, REL, (), 2),
    "send-lies": bytes([SEND | 2 << 3]) + record(FIX_HEADER | REAL_PAIR | NEAR, REL, (), 0x40)
    + record(FIX_HEADER | REAL_PAIR | NEAR, REL, (), 0x00)
    + record(FIX_HEADER | REAL_PAIR | NEAR, REL, (), 0x89)
    + record(FIX_HEADER | REAL_PAIR, REL, (), 1) + record(FIX_HEADER | REAL_PAIR, REL, (), 1)
    + record(FIX_HEADER, REL, (), 0x33),
    "send-keep": bytes([SEND | 1 << 3]) + record(FIX_HEADER | REAL_PAIR, KEEP, (), 0)
    + record(FIX_HEADER | REAL_PAIR, REL, (), 1),
    "send-garbage": bytes([SEND]) + record(FIX_HEADER | REAL_PAIR, REL, (K_PIPE, K_FRAME), 0)
    + record(FIX_HEADER | REAL_DESC, HANDLE, (K_FRAME,), 0) + record(0, 0, (), 0, b"")
    + record(0, 0, (K_EVENTFD,), 0, bytes(48)) + record(FIX_HEADER | REAL_PAIR, FORGET, (), 0),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"{len(SEEDS)} inputs in {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
