#!/usr/bin/env python3
"""The one reader of clnorm's binary cache entries (src/bincache.c) outside the library, for
gpu_extreme.sh (PTX=1, through the command below) and ptx_audit.sh (through entries()): on NVIDIA
a program's binary is its PTX text.

usage: bincache_ptx.py [--order mtime|name] CACHE DEST
    writes each entry of the cache directory CACHE to DEST as NNN.ptx (the payload, trailing NULs
    dropped) and NNN.key (its key: the source hash, the build options and the device), NNN the
    entry's place among CACHE's files in that order (files that are not entries keep their
    number), 000 first: mtime (default), the order the process built the programs in; name, the
    files' names (hashes of the keys).

From Python (scripts/ on sys.path): entries(cache, order) yields (number, file name, key, payload).
"""
import argparse
import os
import struct


def entries(cache, order="mtime"):
    """(number, file name, key text, payload bytes) of each entry of the directory `cache`, in
    `order`: "mtime" (ties by name) or "name"; number counts every file, entry or not."""
    names = os.listdir(cache)
    if order == "mtime":
        names = [f for _, f in sorted((os.path.getmtime(os.path.join(cache, f)), f) for f in names)]
    else:
        names = sorted(names)
    for number, name in enumerate(names):
        with open(os.path.join(cache, name), "rb") as f:
            data = f.read()
        # magic "CLNMBIN\0", u32 format version, u32 key length, u64 payload length, then (format
        # 2) u64 checksum and u64 key hash, the key and the payload; format 1 had no key hash
        if len(data) < 32 or data[:7] != b"CLNMBIN":
            continue
        version, key_len, payload_len = struct.unpack_from("<IIQ", data, 8)
        head = 32 if version == 1 else 40
        key = data[head:head + key_len].decode("utf-8", "replace")
        payload = data[head + key_len:head + key_len + payload_len].rstrip(b"\0")
        yield number, name, key, payload


def main():
    parser = argparse.ArgumentParser(
        description="Write each clnorm binary cache entry's payload and key to DEST as NNN.ptx "
        "and NNN.key.")
    parser.add_argument("--order", choices=("mtime", "name"), default="mtime",
                        help="numbering order of CACHE's files (default: mtime, the build order)")
    parser.add_argument("cache")
    parser.add_argument("dest")
    args = parser.parse_args()
    for number, _, key, payload in entries(args.cache, args.order):
        with open(os.path.join(args.dest, "%03d.key" % number), "w") as f:
            f.write(key)
        with open(os.path.join(args.dest, "%03d.ptx" % number), "wb") as f:
            f.write(payload)


if __name__ == "__main__":
    main()
