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
    # Atomics print a returned-value operand when glc (sc0) is set: learn that
    # form as its own table. seg = ("GLC", inner seg, glc bit).
    for name, layout, seg in list(out):
        if layout in GLC_BIT:
            out.append((name + "_GLC", layout, ("GLC", seg, GLC_BIT[layout])))
    return out


GLC_BIT = {"FLAT": 16, "MUBUF": 14}


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
        return build(layout, op, v) + [ext | (vals.get("src0", 8) & 0xFF)]
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


def learn_constants(target, result):
    """For every 9-bit source slot, how llvm-mc prints inline 1/(2*pi) (248),
    inline -1 (193), 0.5 (240) and a literal 0x12345678 (255). Adds 'consts' to the slot."""
    probes, owners = [], []
    tests = (248, 193, 240, 255, 0x7E, 0x6A, 0xFB)
    for table, layout, seg in table_encodings():
        if seg in EXT:
            continue  # same operand types as the plain form
        for op, d in result[table].items():
            for i, s in enumerate(d["slots"]):
                f = s.get("field")
                if f not in SRC9:
                    continue
                for v in tests:
                    vals = dict(d["vals"]); vals[f] = v
                    probes.append(words(layout, seg, int(op), vals)); owners.append((table, op, i))
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
    "SMEM": [(0, b) for b in (14, 15, 16)],
    "VOP3": [(0, b) for b in (8, 9, 10, 11, 12, 13, 14, 15)] + [(1, b) for b in (27, 28, 29, 30, 31)],
    "VOP3P": [(0, b) for b in (8, 9, 10, 11, 12, 13, 14, 15)] + [(1, b) for b in (27, 28, 29, 30, 31)],
    "MIMG": [(0, b) for b in (12, 13, 14, 15, 16, 17, 25)] + [(1, 31)],
}


# The same for the SDWA and DPP dword: clamp, omod, sext/neg/abs of each
# source (integer operations take sext only, float ones neg/abs only).
REJECT_BITS_EXT = {
    "SDWA": [(1, b) for b in (13, 14, 15, 19, 20, 21, 27, 28, 29)],
    "DPP": [(1, b) for b in (20, 21, 22, 23)],
}


def learn_rejects(target, result):
    """Per opcode, the bits of REJECT_BITS whose setting makes llvm-mc reject
    the learned probe: adds 'reject' = [mask0, mask1]. Also re-checks each
    'zero' field with another value and drops it if that value is accepted."""
    probes, owners = [], []
    for table, layout, seg in table_encodings():
        for op, d in result[table].items():
            ext = REJECT_BITS_EXT.get(seg, []) if isinstance(seg, str) else []
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
