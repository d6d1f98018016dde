"""Bit layouts of the GFX9-family (gfx908/gfx90a/gfx942) encodings, used to build probes.

Each encoding lists its fields as name -> (dword, low bit, width). A probe sets
every operand field to a distinctive value (register starts 4, 8, 12, 16, 20,
24) so gen.py can map each printed operand back to the field it came from.
"""

ENC = {
    #       fixed bits (dword0 value, mask), opcode field, operand fields
    "SOP2": (0x80000000, 0xC0000000, (0, 23, 7), {"sdst": (0, 16, 7), "ssrc1": (0, 8, 8), "ssrc0": (0, 0, 8)}),
    "SOPK": (0xB0000000, 0xF0000000, (0, 23, 5), {"sdst": (0, 16, 7), "simm16": (0, 0, 16)}),
    "SOP1": (0xBE800000, 0xFF800000, (0, 8, 8), {"sdst": (0, 16, 7), "ssrc0": (0, 0, 8)}),
    "SOPC": (0xBF000000, 0xFF800000, (0, 16, 7), {"ssrc1": (0, 8, 8), "ssrc0": (0, 0, 8)}),
    "SOPP": (0xBF800000, 0xFF800000, (0, 16, 7), {"simm16": (0, 0, 16)}),
    "SMEM": (0xC0000000, 0xFC000000, (0, 18, 8), {"sdata": (0, 6, 7), "sbase": (0, 0, 6), "imm": (0, 17, 1),
                                                  "offset": (1, 0, 21), "soffset": (1, 25, 7), "soe": (0, 14, 1)}),
    "VOP2": (0x00000000, 0x80000000, (0, 25, 6), {"vdst": (0, 17, 8), "vsrc1": (0, 9, 8), "src0": (0, 0, 9)}),
    "VOP1": (0x7E000000, 0xFE000000, (0, 9, 8), {"vdst": (0, 17, 8), "src0": (0, 0, 9)}),
    "VOPC": (0x7C000000, 0xFE000000, (0, 17, 8), {"vsrc1": (0, 9, 8), "src0": (0, 0, 9)}),
    "VOP3": (0xD0000000, 0xFC000000, (0, 16, 10), {"vdst": (0, 0, 8), "sdst": (0, 8, 7), "src0": (1, 0, 9),
                                                   "src1": (1, 9, 9), "src2": (1, 18, 9)}),
    "VOP3P": (0xD3800000, 0xFF800000, (0, 16, 7), {"vdst": (0, 0, 8), "src0": (1, 0, 9), "src1": (1, 9, 9),
                                                   "src2": (1, 18, 9)}),
    "DS": (0xD8000000, 0xFC000000, (0, 17, 8), {"vdst": (1, 24, 8), "data1": (1, 16, 8), "data0": (1, 8, 8),
                                                "addr": (1, 0, 8)}),
    "FLAT": (0xDC000000, 0xFC00C000, (0, 18, 7), {"vdst": (1, 24, 8), "saddr": (1, 16, 7), "data": (1, 8, 8),
                                                  "addr": (1, 0, 8)}),
    "MUBUF": (0xE0000000, 0xFC000000, (0, 18, 7), {"soffset": (1, 24, 8), "srsrc": (1, 16, 5), "vdata": (1, 8, 8),
                                                   "vaddr": (1, 0, 8)}),
    "MTBUF": (0xE8000000, 0xFC000000, (0, 15, 4), {"soffset": (1, 24, 8), "srsrc": (1, 16, 5), "vdata": (1, 8, 8),
                                                   "vaddr": (1, 0, 8)}),
    "MIMG": (0xF0000000, 0xFC000000, (0, 18, 7), {"ssamp": (1, 21, 5), "srsrc": (1, 16, 5), "vdata": (1, 8, 8),
                                                  "vaddr": (1, 0, 8)}),
    # Graphics encodings (gfx908 only); their operands are formatted by hand.
    "EXP": (0xC400000F, 0xFC000000, (0, 0, 0), {}),
    "VINTRP": (0xD4100000, 0xFC000000, (0, 16, 2), {}),
}
# FLAT segments are separate table encodings: the same opcode number means
# flat_*, scratch_* or global_* depending on bits [15:14].
SEGMENTS = {"FLAT": 0, "SCRATCH": 1, "GLOBAL": 2}

V = 256  # 9-bit source encoding of v0

# Probe values per field: the value written, and the register number it prints as.
PROBE = {
    "sdst": 8, "ssrc0": 12, "ssrc1": 16, "simm16": 0x0101,
    "sdata": 8, "sbase": 6, "imm": 1, "offset": 0x10,
    "vdst": 4, "vsrc1": 12, "src0": V + 8, "src1": V + 12, "src2": V + 16,
    "data0": 12, "data1": 16, "data": 12, "addr": 8, "saddr": 20,
    "soffset": 24, "srsrc": 5, "vdata": 4, "vaddr": 8, "ssamp": 0,
}
# Register number each field prints as (the start of a range).
PRINTS_AS = {"sdst": 8, "ssrc0": 12, "ssrc1": 16, "sdata": 8, "sbase": 12, "vdst": 4, "vsrc1": 12,
             "src0": 8, "src1": 12, "src2": 16, "data0": 12, "data1": 16, "data": 12, "addr": 8,
             "saddr": 20, "soffset": 24, "srsrc": 20, "vdata": 4, "vaddr": 8}
# Fields left at zero in probes (they overlap modifier bits or print at s0).
NOPROBE = {"VOP3": ["sdst"], "MIMG": ["ssamp"]}
# Fields a probe may have to leave at zero (LLVM rejects some set unused fields).
OPTIONAL = {"VOP3": ["src0", "src1", "src2", "vdst"], "VOP3P": ["src0", "src1", "src2"], "DS": ["vdst", "data1", "data0", "addr"],
            "FLAT": ["vdst", "data"], "VOP1": ["vdst"], "SOP1": ["sdst", "ssrc0"], "SOPK": ["sdst"],
            "SOPC": [], "SOPP": ["simm16"], "SMEM": ["sdata", "sbase", "imm", "offset", "soffset"], "MUBUF": ["vdata"]}


# Opcode numbers beyond these belong to another encoding sharing the prefix.
OP_LIMIT = {"SOP2": 96, "SOPK": 29, "VOP2": 62, "VOP3": 896}


def build(enc, op, values):
    fixed, _mask, (_, lo, _w), fields = ENC[enc]
    words = [fixed | op << lo, 0]
    for name, v in values.items():
        d, b, w = fields[name]
        words[d] |= (v & ((1 << w) - 1)) << b
    return words[:size(enc) // 4]


def size(enc):
    if enc == "EXP":
        return 8
    return 8 if max([d for d, _, _ in ENC[enc][3].values()] + [0]) == 1 else 4
