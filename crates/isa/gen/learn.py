"""Learn, per target, encoding and opcode number: mnemonic, operand template, constant kinds.

Everything here comes from llvm-mc-19's disassembler (see probe.py)."""
import itertools
import re

from layouts import NOPROBE, OP_LIMIT, ENC, SEGMENTS, PROBE, PRINTS_AS, OPTIONAL, build
from probe import run_batch

# A dropped source field is probed as an SGPR (s20/s24) instead of being left
# empty: some sources (carry-in, cndmask selector) only accept SGPRs.
SCALAR_ALT = {"src2": 20, "src1": 24, "src0": 28}
REG = re.compile(r"^([vsa])(?:(\d+)|\[(\d+):(\d+)\])$")
SRC9 = ("src0", "src1", "src2", "ssrc0", "ssrc1")


def split_text(text):
    """'mn a, b, c mod1 mod2' -> (mn, [a, b, c], 'mod1 mod2')."""
    text = re.sub(r"/\*.*?\*/", "", text)
    mn, _, rest = text.partition(" ")
    ops, depth, cur = [], 0, ""
    for ch in rest:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            ops.append(cur.strip()); cur = ""
        else:
            cur += ch
    cur = cur.strip()
    mods = ""
    if cur:
        # the last operand ends at the first space outside brackets
        depth = 0
        for i, ch in enumerate(cur):
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif ch == " " and depth == 0:
                cur, mods = cur[:i], cur[i + 1:]
                break
        ops.append(cur)
    return mn, [o for o in ops if o], mods


# Extension dwords for SDWA / DPP probes: src0 = v8, all selects DWORD /
# dpp_ctrl row_shr:1 with full row and bank masks.
SDWA_EXT = 8 | 6 << 8 | 6 << 16 | 6 << 24
DPP_EXT = 8 | 0x111 << 8 | 0xFF << 24
EXT = {"SDWA": (0xF9, SDWA_EXT), "DPP": (0xFA, DPP_EXT)}


def table_encodings():
    """(table name, layout name, segment bits or extension kind)."""
    out = [(v + "_" + x, v, x) for v in ("VOP1", "VOP2", "VOPC") for x in EXT]
    for e in ENC:
        if e == "FLAT":
            for s, v in SEGMENTS.items():
                out.append((s, e, v))
        else:
            out.append((e, e, None))
    # Atomics print a returned-value operand when glc (sc0) is set, loads
    # into LDS are other instructions (some exist only so: buffer_store_lds_
    # dword), and the GWS operations exist only with gds set: learn those
    # forms as tables of their own. seg = ("GLC", "LDS" or "GDS", inner seg, bit).
    for name, layout, seg in list(out):
        if layout in GLC_BIT:
            out.append((name + "_GLC", layout, ("GLC", seg, GLC_BIT[layout])))
        if layout in LDS_BIT and seg != 0:  # FLAT proper has no lds bit
            out.append((name + "_LDS", layout, ("LDS", seg, LDS_BIT[layout])))
        if layout in GDS_BIT:
            out.append((name + "_GDS", layout, ("GDS", seg, GDS_BIT[layout])))
    return out


GLC_BIT = {"FLAT": 16, "MUBUF": 14}
LDS_BIT = {"FLAT": 13, "MUBUF": 16}
GDS_BIT = {"DS": 16}


def words(layout, seg, op, vals):
    """Instruction words for a probe; seg is a FLAT segment or an extension kind."""
    if isinstance(seg, tuple):
        w = words(layout, seg[1], op, vals)
        w[0] |= 1 << seg[2]
        return w
    if seg in EXT:
        src, ext = EXT[seg]
        v = dict(vals); v["src0"] = src
        if seg == "SDWA" and layout == "VOP1":
            ext &= 0x00FFFFFF  # no src1_sel
        return build(layout, op, v) + [ext & ~0xFF | (vals.get("src0", 8) & 0xFF)]
    w = build(layout, op, vals)
    if seg is not None:
        w[0] |= seg << 14
    return w


def variants(layout, seg, op):
    """Probe field assignments for one opcode, most complete first.

    Fields in OPTIONAL may also be probed as an SGPR (SCALAR_ALT: some sources
    accept only SGPRs, e.g. lane selects and carry-ins) or left at zero (LLVM
    rejects some set unused fields). The first one llvm-mc accepts is used."""
    fields = [f for f in ENC[layout][3] if f in PROBE and f not in NOPROBE.get(layout, [])]
    opt = [f for f in OPTIONAL.get(layout, []) if f in fields]
    choices = []
    for f in opt:
        c = [("probe", PROBE[f])]
        if f in SCALAR_ALT:
            c.append(("sgpr", SCALAR_ALT[f]))
        c.append(("zero", 0))
        choices.append(c)
    combos = sorted(itertools.product(*choices),
                    key=lambda cs: (sum(k == "zero" for k, _ in cs), sum(k == "sgpr" for k, _ in cs)))
    res = []
    for cs in combos:
        vals = {f: PROBE[f] for f in fields}
        for f, (kind, v) in zip(opt, cs):
            if kind == "zero":
                del vals[f]
            else:
                vals[f] = v
        if layout == "FLAT":
            inner = seg[1] if isinstance(seg, tuple) else seg
            vals["saddr"] = 0 if inner == 0 else 0x7F
        res.append((vals, words(layout, seg, op, vals)))
    return res


def prints_as(field, v):
    """Register number a field value prints as."""
    if field in ("src0", "src1", "src2"):
        return v - 256 if v >= 256 else v
    return {"sbase": 2, "srsrc": 4, "ssamp": 4}.get(field, 1) * v


def parse_operand(layout, vals, text):
    m = REG.match(text)
    if m:
        pre, one, lo, hi = m.groups()
        start = int(one if one is not None else lo)
        count = 1 if one is not None else int(hi) - int(lo) + 1
        for f, v in vals.items():
            if f in PRINTS_AS and prints_as(f, v) == start:
                return {"field": f, "regs": count, "file": pre}
        if layout == "VOP3" and start == 0 and pre == "s":
            return {"field": "sdst", "regs": count, "file": pre}
        if layout == "MIMG" and start == 0 and pre == "s":
            return {"field": "ssamp", "regs": count, "file": pre}
        return {"fixed": text}
    if text.isdigit():
        for f, v in vals.items():
            if v == int(text) and f not in ("src0", "src1", "src2", "simm16", "offset"):
                return {"field": f, "imm": True}  # a field printed as a number (s_atc_probe)
    return {"fixed": text}


def learn(target):
    result = {}
    for table, layout, seg in table_encodings():
        nops = OP_LIMIT.get(layout, 1 << ENC[layout][2][2])
        probes, owners = [], []
        for op in range(nops):
            for vals, w in variants(layout, seg, op):
                probes.append(w); owners.append((op, vals))
        out = run_batch(target, probes)
        chosen = {}
        for (op, vals), r in zip(owners, out):
            if r is None or op in chosen:
                continue
            text, lit = r
            if "Invalid" in text or "invalid" in text:
                continue
            chosen[op] = (vals, text, lit)
        ops = {}
        for op, (vals, text, lit) in chosen.items():
            mn, operands, mods = split_text(text)
            if operands[-1:] == ["gds"]:  # GWS operations without operands: a modifier
                operands, mods = operands[:-1], "gds"
            if mn == "s_nop" and table != "SOPP":
                continue
            # EXP/VINTRP operands are formatted by hand (targets, attributes)
            slots = [] if layout in ("EXP", "VINTRP") else [parse_operand(layout, vals, o) for o in operands]
            # fields the probe had to leave at zero: LLVM rejects them set
            zero = [f for f in OPTIONAL.get(layout, []) if f in PROBE and f not in vals
                    and f not in NOPROBE.get(layout, [])]
            ops[op] = {"mn": mn, "slots": slots, "mods": mods, "lit": lit, "vals": vals, "text": text,
                       "zero": zero}
        result[table] = ops
    return result


F16_ONE_LITERAL = -1  # in learn_constants' tests: source 255 followed by 0x3c00


def learn_constants(target, result):
    """For every 9-bit source slot, how llvm-mc prints inline 1/(2*pi) (248),
    inline -1 (193), 0.5 (240), a literal 0x12345678 (255), exec_lo, vcc_lo,
    src_scc, and a literal 0x3c00 (f16 1.0: the last entry). Adds 'consts'
    to the slot."""
    probes, owners = [], []
    tests = (248, 193, 240, 255, 0x7E, 0x6A, 0xFB, F16_ONE_LITERAL)
    for table, layout, seg in table_encodings():
        if seg in EXT:
            continue  # same operand types as the plain form
        for op, d in result[table].items():
            for i, s in enumerate(d["slots"]):
                f = s.get("field")
                if f not in SRC9:
                    continue
                for v in tests:
                    vals = dict(d["vals"])
                    vals[f] = 255 if v == F16_ONE_LITERAL else v
                    w = words(layout, seg, int(op), vals)
                    if v == F16_ONE_LITERAL:
                        w.append(0x3C00)
                    probes.append(w); owners.append((table, op, i))
    out = run_batch(target, probes)
    for (table, op, i), r in zip(owners, out):
        slot = result[table][op]["slots"][i]
        txt = None
        if r is not None:
            _, ops, _ = split_text(r[0])
            txt = ops[i] if i < len(ops) else None
        slot.setdefault("consts", []).append(txt)


# Modifier probes: (table, name, extra dword0 bits, extra dword1 bits, text that shows it)
MOD_PROBES = [
    ("VOP3", "NEG", 0, 1 << 29, "-v"),
    ("VOP3", "ABS", 1 << 8, 0, "|v"),
    ("VOP3", "CLAMP", 1 << 15, 0, " clamp"),
    ("VOP3", "OMOD", 0, 1 << 27, "mul:2"),
    ("VOP3", "OPSEL", 1 << 11, 0, "op_sel:"),
    ("VOP3P", "OPSEL_HI_ONES", 1 << 14, 3 << 27, "op_sel_hi"),
    # v_fma_mix*: neg_lo/neg_hi are printed as -x / |x| on the operands
    ("VOP3P", "NEG", 0, 1 << 29, "-v"),
    ("VOP3P", "ABS", 1 << 8, 0, "|v"),
]


def learn_modifiers(target, result):
    """Which modifiers each VOP3/VOP3P opcode prints: adds 'flags' (names) to each op."""
    probes, owners = [], []
    for table, name, b0, b1, _ in MOD_PROBES:
        for op, d in result[table].items():
            w = words(table, None, int(op), d["vals"])
            w[0] |= b0; w[1] |= b1
            probes.append(w); owners.append((table, op, name))
    out = run_batch(target, probes)
    texts = {n: t for _, n, _, _, t in MOD_PROBES}
    for (table, op, name), r in zip(owners, out):
        d = result[table][op]
        d.setdefault("flags", [])
        shown = r is not None and texts[name] in r[0]
        if name == "OPSEL_HI_ONES":
            shown = r is not None and not shown
        if shown:
            d["flags"].append(name)


# Single bits that LLVM may refuse for some opcodes (e.g. lds on most buffer
# ops, gds on gfx90a): (layout, dword, bit).
REJECT_BITS = {
    "MUBUF": [(0, b) for b in (12, 13, 14, 15, 16, 17)] + [(1, 23)],
    "MTBUF": [(0, b) for b in (12, 13, 14)] + [(1, b) for b in (21, 22, 23)],
    "FLAT": [(0, b) for b in (13, 16, 17, 25)] + [(1, 23)],
    "DS": [(0, 16), (0, 25)],
    "SMEM": [(0, b) for b in (14, 15, 16, 17)],
    "VOP3": [(0, b) for b in (8, 9, 10, 11, 12, 13, 14, 15)] + [(1, b) for b in (27, 28, 29, 30, 31)],
    "VOP3P": [(0, b) for b in (8, 9, 10, 11, 12, 13, 14, 15)] + [(1, b) for b in (27, 28, 29, 30, 31)],
    "MIMG": [(0, b) for b in (12, 13, 14, 15, 16, 17, 25)] + [(1, 31)],
}


# src1_sel of VOP2/VOPC SDWA (VOP1 has none: any bit set there is refused).
# A select of 7 crashes LLVM 19's printer, so never probe one.
SRC1_SEL_BITS = (24, 25, 26)


# The same for the SDWA and DPP dword: clamp, omod, sext/neg/abs of each
# source (integer operations take sext only, float ones neg/abs only).
REJECT_BITS_EXT = {
    "SDWA": [(1, b) for b in (13, 14, 15, 19, 20, 21, 24, 25, 26, 27, 28, 29, 30, 31)],
    "DPP": [(1, b) for b in (16, 17, 18, 20, 21, 22, 23)],
}


# Operand fields the decoder can check for zero (gen.py FIELDS).
ZERO_CHECKED = ("vdst", "sdst", "src0", "src1", "src2", "vsrc1", "ssrc0", "ssrc1", "simm16", "sdata", "sbase",
                "offset", "soffset", "addr", "data", "data0", "data1", "saddr", "vdata", "vaddr", "srsrc", "ssamp")


def learn_rejects(target, result):
    """Per opcode, the bits of REJECT_BITS whose setting makes llvm-mc reject
    the learned probe: adds 'reject' = [mask0, mask1]. Also re-checks each
    'zero' field with another value and drops it if that value is accepted."""
    probes, owners = [], []
    for table, layout, seg in table_encodings():
        for op, d in result[table].items():
            # fields no operand reads (but VOP3's sdst, whose bits are modifiers
            # in VOP3a) may have to be zero too: checked like the dropped ones
            used = {s.get("field") for s in d["slots"]}
            for f in ENC[layout][3]:
                if f not in d["vals"] and f not in used and f not in d["zero"] and f in ZERO_CHECKED \
                        and not (layout == "VOP3" and f == "sdst"):
                    d["zero"].append(f)
            ext = REJECT_BITS_EXT.get(seg, []) if isinstance(seg, str) else []
            if seg == "SDWA" and layout != "VOP1":
                ext = [(dw, b) for dw, b in ext if b not in SRC1_SEL_BITS]  # a field there
            for dword, bit in REJECT_BITS.get(layout, []) + ext:
                w = words(layout, seg, int(op), d["vals"])
                if w[dword] >> bit & 1:
                    continue
                w[dword] |= 1 << bit
                probes.append(w); owners.append((table, op, ("bit", dword, bit)))
            for f in d.get("zero", []):
                for v in ((2, 256 + 2) if f in ("src0", "src1", "src2") else (2, 26)):
                    vals = dict(d["vals"]); vals[f] = v
                    probes.append(words(layout, seg, int(op), vals)); owners.append((table, op, ("zero", f)))
    out = run_batch(target, probes)
    for (table, op, what), r in zip(owners, out):
        d = result[table][op]
        d.setdefault("reject", [0, 0])
        ok = r is not None and "nvalid" not in r[0]
        if what[0] == "bit" and not ok:
            d["reject"][what[1]] |= 1 << what[2]
        if what[0] == "zero" and ok and what[1] in d["zero"]:
            d["zero"].remove(what[1])


# One value of each kind of operand LLVM's decoder tells apart, in 9-bit
# source encoding (VGPR n = 256 + n); decode.rs `value_kind` maps every value
# to its kind in this order. SGPR, the six specials 102-107, TTMP, m0, null,
# exec_lo/hi, inline integer, nothing (209-234), src_shared_base..
# src_pops_exiting_wave_id, inline float, 249..255 one by one (SDWA, DPP,
# src_vccz, src_execz, src_scc, src_lds_direct, literal), even and odd VGPR.
KIND_VALUES = [4, 102, 103, 104, 105, 106, 107, 108, 124, 125, 126, 127, 129, 209,
               235, 236, 237, 238, 239, 242, 249, 250, 251, 252, 253, 254, 255, 260, 261]
# What LLVM does with a value: refuses the instruction, prints it, or prints
# it with an "Invalid register" / "Invalid immediate" annotation.
REJECT, ACCEPT, BAD_REGISTER, BAD_IMMEDIATE = 0, 1, 2, 3
SCALE = {"sbase": 2, "srsrc": 4, "ssamp": 4}
ANNOTATION = re.compile(r"/\*Invalid register, operand has '([^']+)' register class\*/")


def class_probe(layout, seg, op, vals, slot, code):
    """Words of a probe whose `slot` field holds `code` (9-bit source
    encoding), or None if the field cannot hold it."""
    f = slot["field"]
    vals = dict(vals)
    ext_bits = 0
    if seg in EXT and f in ("src0", "vsrc1"):
        if seg == "DPP" and code < 256:
            return None
        vals[f] = code & 0xFF
        if code < 256:
            ext_bits = 1 << (23 if f == "src0" else 31)
    elif f in ("src0", "src1", "src2"):
        if layout in ("VOP1", "VOP2", "VOPC") and code in (249, 250):
            return None  # these make the instruction SDWA/DPP
        vals[f] = code
    elif f == "vsrc1" or slot["file"] in "va":
        if code < 256:
            return None
        vals[f] = code - 256
    else:
        scale = SCALE.get(f, 1)
        width = ENC[layout][3][f][2]
        if code >= 256 or code % scale or code // scale >= 1 << width:
            return None
        vals[f] = code // scale
    w = words(layout, seg, op, vals)
    if seg in EXT:
        w[-1] |= ext_bits
    return w


def mai_acc_cd(target, mn):
    """MAI instructions whose vdst/src2 file is chosen by bit 15 (acc_cd)."""
    return target != "gfx908" and (mn.startswith("v_mfma") or mn.startswith("v_smfmac"))


def learn_classes(target, result):
    """Per register operand, what LLVM does with each kind of value
    (KIND_VALUES): adds 'verdicts' (per kind) and 'class' (the register
    class its annotation names) to the slot; for MAI vdst/src2 the same
    with acc_cd set as 'verdicts_acc'/'class_acc'."""
    probes, owners = [], []
    for table, layout, seg in table_encodings():
        for op, d in result[table].items():
            for i, s in enumerate(d["slots"]):
                if "field" not in s or s.get("imm"):
                    continue
                accs = [False]
                if layout == "VOP3P" and s["field"] in ("vdst", "src2") and mai_acc_cd(target, d["mn"]):
                    accs.append(True)
                for acc in accs:
                    for k, code in enumerate(KIND_VALUES):
                        w = class_probe(layout, seg, int(op), d["vals"], s, code)
                        if w is None:
                            continue
                        if acc:
                            w[0] |= 1 << 15
                        probes.append(w); owners.append((table, op, i, acc, k))
    out = run_batch(target, probes)
    for (table, op, i, acc, k), r in zip(owners, out):
        s = result[table][op]["slots"][i]
        key = "verdicts_acc" if acc else "verdicts"
        s.setdefault(key, [ACCEPT] * len(KIND_VALUES))
        if r is None:
            s[key][k] = REJECT
            continue
        m = ANNOTATION.search(r[0])
        if m:
            s[key][k] = BAD_REGISTER
            s.setdefault("class_acc" if acc else "class", m.group(1))
        elif "/*Invalid immediate*/" in r[0]:
            s[key][k] = BAD_IMMEDIATE


def learn_mimg_sizes(target, result):
    """For every image opcode, the data sizes (in dwords, 1-5) LLVM has an
    instruction for: it sizes vdata from dmask (4 for gather4), d16 (packed:
    halved, rounded up) and tfe (+1), and keeps the decoded size when no
    instruction of the computed size exists. Adds 'vdata_sizes' (bit n =
    size n) to each MIMG op."""
    tfe_bits = (0,) if target != "gfx908" else (0, 1)  # gfx90a+: bit 16 is acc
    probes, owners = [], []
    for op, d in result["MIMG"].items():
        gather = "gather4" in d["mn"]
        for dmask in (1, 3, 7, 15):
            for d16 in (0, 1):
                for tfe in tfe_bits:
                    size = 4 if gather else bin(dmask).count("1")
                    size = (size + 1) // 2 if d16 else size
                    w = words("MIMG", None, int(op), d["vals"])
                    w[0] |= dmask << 8 | tfe << 16
                    w[1] |= d16 << 31
                    probes.append(w); owners.append((op, size + tfe))
    out = run_batch(target, probes)
    for (op, size), r in zip(owners, out):
        d = result["MIMG"][op]
        d.setdefault("vdata_sizes", 0)
        if r is None:
            continue
        _, ops, _ = split_text(r[0])
        m = REG.match(ops[0]) if ops else None
        if m:
            _, one, lo, hi = m.groups()
            printed = 1 if one is not None else int(hi) - int(lo) + 1
            if printed == size:
                d["vdata_sizes"] |= 1 << size
