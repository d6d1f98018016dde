#!/usr/bin/env python3
"""Builds the seed corpora from the committed fixtures (run from fuzz/).

codeobj:  every fixture file under 64 KiB (code objects, .o, bundles, CCOB,
          the host executable).
metadata: the descriptor of every NT_AMDGPU_METADATA note (the msgpack
          document), cut out of the fixture code objects.
Writes into seeds/<target>/; `cargo fuzz cmin` then keeps the useful ones
in corpus/<target>/ (see README.md).
"""
import hashlib
import json
import os
import struct

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


def put(target, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def metadata_notes(elf):
    """Yields the desc bytes of AMDGPU metadata notes (ELF64 LE, SHT_NOTE)."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    for i in range(shnum):
        sh = shoff + i * shentsize
        sh_type, = struct.unpack_from("<I", elf, sh + 4)
        off, size = struct.unpack_from("<QQ", elf, sh + 0x18)
        align, = struct.unpack_from("<Q", elf, sh + 0x30)
        if sh_type != 7:  # SHT_NOTE
            continue
        a = 8 if align == 8 else 4
        pos = off
        while pos < off + size:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
            name = elf[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            desc_at = pos + 12 + (namesz + a - 1) // a * a
            if name == b"AMDGPU" and ntype == 32:
                yield elf[desc_at:desc_at + descsz]
            pos = desc_at + (descsz + a - 1) // a * a


def main():
    with open(os.path.join(FIX, "manifest.json")) as f:
        files = json.load(f)["files"]
    for rec in files:
        with open(os.path.join(FIX, rec["path"]), "rb") as f:
            data = f.read()
        if len(data) <= 64 * 1024:
            put("codeobj", data)
        if rec["kind"] in ("hsaco", "object"):
            for desc in metadata_notes(data):
                put("metadata", desc)


if __name__ == "__main__":
    main()
