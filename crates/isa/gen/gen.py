#!/usr/bin/env python3
"""Generate crates/isa/src/generated/tables.rs from llvm-mc-19.

    python3 crates/isa/gen/gen.py        # from the repository root; needs llvm-mc-19

Every fact in the output is learned from LLVM 19's AMDGPU disassembler by
probing (see probe.py, layouts.py, learn.py): for each target, encoding and
opcode number we disassemble instruction words with distinctive field values
and read back the mnemonic, which fields are printed in which order, register
counts and how constants print. Nothing here is copied from LLVM's sources.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from learn import (learn, learn_classes, learn_constants, learn_mimg_sizes, learn_modifiers, learn_rejects,  # noqa: E402
                   split_text,
                   table_encodings, KIND_VALUES, ACCEPT)
from probe import run_batch  # noqa: E402
from layouts import build  # noqa: E402

TARGETS = ["gfx908", "gfx90a", "gfx942"]
OUT = os.path.join(os.path.dirname(__file__), "..", "src", "generated", "tables.rs")

FIELDS = ["vdst", "sdst", "src0", "src1", "src2", "vsrc1", "ssrc0", "ssrc1", "simm16", "sdata", "sbase",
          "offset", "soffset", "addr", "data", "data0", "data1", "saddr", "vdata", "vaddr", "srsrc", "ssamp",
          "literal"]
# Must match format.rs F_* constants.
FLAG_BITS = {"NEG": 1, "ABS": 2, "CLAMP": 4, "OMOD": 8, "OPSEL": 16, "OPSEL_HI_ONES": 32, "GDS": 64}
SRC_FIELDS = ("src0", "src1", "src2", "ssrc0", "ssrc1")


def camel(s):
    return "".join(p.capitalize() for p in s.split("_"))


def const_kind(consts):
    inv2pi = consts[0]
    if inv2pi == "0.15915494309189532":
        return "F64"
    if inv2pi == "0x3118":
        return "I16"
    if consts[3] is not None and len(consts[3]) == 6:  # 16-bit literal 0x5678
        return "F16"
    if consts[7] == "1.0":  # a 32-bit literal that is f16 1.0 (packed f16)
        return "V2F16"
    return "B32"


def imm_kind(mn, text):
    if "gpr_idx" in mn:
        return "GprIdx"
    if text.startswith("hwreg("):
        return "Hwreg"
    if text.startswith("sendmsg("):
        return "Sendmsg"
    if "cnt(" in text:
        return "Waitcnt"
    if text.startswith("0x"):
        return "Hex"
    if text == "":
        return "DecNonzero"
    if re.match(r"^-?\d+$", text):
        return "Branch" if ("branch" in mn or "call" in mn or "fork" in mn) else "Dec"
    raise ValueError((mn, text))


def class_index(classes, name, verdicts):
    """Index of an operand class (register class name, verdict per value kind)."""
    key = (name or "", tuple(verdicts or [ACCEPT] * len(KIND_VALUES)))
    if key not in classes:
        classes.append(key)
    return classes.index(key)


def slot_code(layout, mn, slot, fixed_texts, classes):
    f = slot.get("field")
    if f is None:
        t = slot["fixed"]
        if layout in ("SOPK", "SOPP"):
            if mn == "s_setreg_imm32_b32" and not t.startswith("hwreg"):
                return "Slot::lit()"
            return "Slot::imm(ImmKind::%s)" % imm_kind(mn, t)
        if layout == "SOPC" and "gpr_idx" in mn:
            return "Slot::imm(ImmKind::GprIdx)"
        if layout == "SMEM" and t.startswith("0x"):
            return "Slot::imm(ImmKind::SmemOffset)"
        if layout == "VOP2" and t.startswith("0x"):
            return "Slot::lit()"
        if t not in fixed_texts:
            fixed_texts.append(t)
        return "Slot::fixed(%d)" % fixed_texts.index(t)
    if slot.get("imm"):
        return "Slot::field_imm(Field::%s)" % camel(f)
    file = {"v": "V", "s": "S", "a": "A"}[slot["file"]]
    ck = const_kind(slot["consts"]) if "consts" in slot else "B32"
    cls = class_index(classes, slot.get("class"), slot.get("verdicts"))
    cls_acc = cls
    if "verdicts_acc" in slot:
        cls_acc = class_index(classes, slot.get("class_acc"), slot.get("verdicts_acc"))
    return "Slot::reg(Field::%s, %d, File::%s, ConstKind::%s, %d, %d)" % (
        camel(f), slot["regs"], file, ck, cls, cls_acc)


def mark_optional_imm(target, learned):
    """SOPP instructions that print nothing for a zero immediate (s_endpgm)."""
    ops = [op for op, d in learned["SOPP"].items() if len(d["slots"]) == 1]
    out = run_batch(target, [[0xBF800000 | int(op) << 16] for op in ops])
    for op, r in zip(ops, out):
        if r is not None and " " not in r[0].strip():
            learned["SOPP"][op]["slots"] = [{"fixed": ""}]


def base_name(mn):
    return re.sub(r"_(e32|e64|sdwa|dpp)$", "", mn)


def sweep_names(target, learned):
    """How llvm-mc prints each 8-bit scalar source value, for 1- and 2-register
    operands and for each constant kind (s_mov_b32/_b64, v_add_f16, v_add_u16)."""
    def find(table, mn):
        return next(int(op) for op, d in learned[table].items() if d["mn"] == mn)
    users = [("SOP1", "s_mov_b32", "ssrc0"), ("SOP1", "s_mov_b64", "ssrc0"),
             ("VOP2", "v_add_f16_e32", "src0"), ("VOP2", "v_add_u16_e32", "src0")]
    out = []
    for table, mn, field in users:
        op = find(table, mn)
        vals = dict(learned[table][str(op)]["vals"]) if str(op) in learned[table] else dict(learned[table][op]["vals"])
        probes = []
        for v in range(256):
            vv = dict(vals); vv[field] = v
            probes.append(build(table, op, vv))
        names = []
        for v, r in zip(range(256), run_batch(target, probes)):
            n = None
            # 249/250 make a VOP source SDWA/DPP, 255 a literal: not names
            if r is not None and v not in (249, 250, 255):
                _, ops, _ = split_text(r[0])
                n = ops[1] if len(ops) > 1 else None
                if n is not None and "Invalid" in r[0]:
                    n = None
            names.append(n)
        out.append(names)
    return out


def sweep_tuple_ends(target, learned):
    """Where scalar register tuples of 4, 8 and 16 registers must end: one
    past the last SGPR and TTMP a tuple may use (s_load_dwordx{4,8,16} sdata)."""
    ends = set()
    for n in (4, 8, 16):
        op = next(int(o) for o, d in learned["SMEM"].items() if d["mn"] == "s_load_dwordx%d" % n)
        vals = dict(learned["SMEM"][op]["vals"] if op in learned["SMEM"] else learned["SMEM"][str(op)]["vals"])
        firsts = list(range(0, 128, 4))
        probes = []
        for v in firsts:
            vals["sdata"] = v
            probes.append(build("SMEM", op, vals))
        ok = [v for v, r in zip(firsts, run_batch(target, probes)) if r is not None and "nvalid" not in r[0]]
        sgpr = max(v for v in ok if v < 102) + n
        ttmp = max(v for v in ok if 108 <= v < 124) - 108 + n
        ends.add((sgpr, ttmp))
    assert len(ends) == 1, "tuple ends differ by width: %s" % ends
    return ends.pop()


def sweep_hwreg(target, learned):
    """Symbolic names of hardware registers 0..63 (s_getreg_b32 with full width)."""
    op = next(int(o) for o, d in learned["SOPK"].items() if d["mn"] == "s_getreg_b32")
    probes = [[0xB0000000 | op << 23 | 8 << 16 | 31 << 11 | i] for i in range(64)]
    names = []
    for r in run_batch(target, probes):
        m = re.search(r"hwreg\(([A-Z_0-9]+)\)", r[0]) if r else None
        names.append(m.group(1) if m and not m.group(1).isdigit() else "")
    return names


def sweep_sendmsg(target):
    """How s_sendmsg prints each 10-bit immediate ("" = the numeric form)."""
    out = run_batch(target, [[0xBF900000 | v] for v in range(1024)])
    res = []
    for r in out:
        t = r[0].split(" ", 1)[1] if r else ""
        res.append("" if re.match(r"sendmsg\(\d+, \d+, \d+\)$", t) else t)
    return res


def rust_str_array(name, items):
    body = ", ".join('"%s"' % (i or "") for i in items)
    return "pub static %s: [&str; %d] = [%s];\n" % (name, len(items), body)


def main():
    learned = {}
    for t in TARGETS:
        r = learn(t)
        learn_constants(t, r)
        learn_modifiers(t, r)
        learn_rejects(t, r)
        learn_classes(t, r)
        learn_mimg_sizes(t, r)
        learned[t] = r
    for t in TARGETS:
        mark_optional_imm(t, learned[t])
    names = sweep_names("gfx90a", {k: {str(o): d for o, d in v.items()} for k, v in learned["gfx90a"].items()})

    opcodes = []  # base names, index = Opcode
    descs = []  # (mnemonic, opcode, slot range)
    desc_ix = {}
    slots = []  # slot code strings, shared
    slot_ix = {}
    fixed_texts = []
    classes = [("", tuple([ACCEPT] * len(KIND_VALUES)))]  # 0: every value printed as is
    dense = {}  # (target, table) -> list of desc ids (0 = invalid)
    for t in TARGETS:
        for table, layout, seg in table_encodings():
            ops = learned[t][table]
            n = max([int(o) for o in ops] + [0]) + 1
            arr = [0] * n
            form = table.endswith(("_GLC", "_LDS", "_GDS"))
            base = learned[t].get(table[:-4]) if form else None
            if table.endswith("_GDS"):
                for op, d in ops.items():
                    if op not in base:  # exists only with gds (GWS): prints it everywhere
                        d.setdefault("flags", []).append("GDS")

            def desc_key(d):
                mn = d["mn"]
                codes = tuple(slot_code(layout, mn, s, fixed_texts, classes) for s in d["slots"])
                if codes not in slot_ix:
                    slot_ix[codes] = len(slots)
                    slots.extend(codes)
                b = base_name(mn)
                if b not in opcodes:
                    opcodes.append(b)
                flags = sum(FLAG_BITS[f] for f in d.get("flags", []))
                zero = sum(1 << FIELDS.index(f) for f in d.get("zero", []) if f in FIELDS)
                rej = tuple(d.get("reject", [0, 0]))
                return (mn, opcodes.index(b), slot_ix[codes], len(codes), flags, zero, rej)

            for op, d in ops.items():
                key = desc_key(d)
                if base is not None and op in base and desc_key(base[op]) == key:
                    continue  # the same as without the bit: the decoder falls back to the base table
                if key not in desc_ix:
                    desc_ix[key] = len(descs) + 1
                    descs.append(key)
                arr[int(op)] = desc_ix[key]
            dense[(t, table)] = arr

    w = []
    w.append("// @generated by crates/isa/gen/gen.py from llvm-mc-19 probes. Do not edit.\n")
    w.append("// Regenerate: python3 crates/isa/gen/gen.py\n")
    w.append("#![allow(clippy::all)]\n")
    w.append("use crate::tables::{ConstKind, Desc, Field, File, ImmKind, OperandClass, Slot, TargetTables};\n\n")
    w.append(rust_str_array("OPCODE_NAMES", opcodes))
    w.append(rust_str_array("FIXED_TEXT", fixed_texts))
    w.append("pub static SLOTS: [Slot; %d] = [\n" % len(slots))
    for s in slots:
        w.append("    %s,\n" % s)
    w.append("];\n")
    w.append("pub static OPERAND_CLASSES: [OperandClass; %d] = [\n" % len(classes))
    for name, verdicts in classes:
        packed = sum(v << (2 * k) for k, v in enumerate(verdicts))
        w.append('    OperandClass::new("%s", 0x%x),\n' % (name, packed))
    w.append("];\n")
    sgpr_end, ttmp_end = sweep_tuple_ends("gfx90a", learned["gfx90a"])
    w.append("pub const SGPR_TUPLE_END: u32 = %d;\npub const TTMP_TUPLE_END: u32 = %d;\n" % (sgpr_end, ttmp_end))
    w.append("pub static DESCS: [Desc; %d] = [\n    Desc::INVALID,\n" % (len(descs) + 1))
    for mn, op, s0, sn, fl, zero, rej in descs:
        w.append('    Desc::new("%s", %d, %d, %d, %d, %d, [0x%x, 0x%x]),\n' % (mn, op, s0, sn, fl, zero, rej[0], rej[1]))
    w.append("];\n")
    for t in TARGETS:
        for table, _, _ in table_encodings():
            arr = dense[(t, table)]
            w.append("static %s_%s: [u16; %d] = [" % (t.upper(), table, len(arr)))
            for i, x in enumerate(arr):
                w.append(("\n    " if i % 24 == 0 else " ") + "%d," % x)
            w.append("\n];\n")
        mimg = learned[t]["MIMG"]
        sizes = [0] * (max([int(o) for o in mimg] + [0]) + 1)
        for op, d in mimg.items():
            sizes[int(op)] = d.get("vdata_sizes", 0)
        w.append("static %s_MIMG_VDATA_SIZES: [u8; %d] = %s;\n" % (t.upper(), len(sizes), sizes))
        w.append("pub static %s: TargetTables = TargetTables {\n" % t.upper())
        for table, _, _ in table_encodings():
            w.append("    %s: &%s_%s,\n" % (table.lower(), t.upper(), table))
        w.append("    mimg_vdata_sizes: &%s_MIMG_VDATA_SIZES,\n" % t.upper())
        w.append("};\n")
    labels = ["SRC_NAMES_B32", "SRC_NAMES_B64", "SRC_NAMES_F16", "SRC_NAMES_I16"]
    for lab, arr in zip(labels, names):
        w.append(rust_str_array(lab, arr))
    for t in TARGETS:
        w.append(rust_str_array("HWREG_" + t.upper(), sweep_hwreg(t, learned[t])))
    msgs = [sweep_sendmsg(t) for t in TARGETS]
    assert all(m == msgs[0] for m in msgs), "sendmsg names differ per target: make the table per target"
    w.append(rust_str_array("SENDMSG", msgs[0]))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("".join(w))
    # The committed file is rustfmt's layout of the output.
    import subprocess
    subprocess.run(["rustfmt", "--edition", "2021", OUT], check=False)
    print("wrote", OUT, sum(len(x) for x in w), "bytes,", len(descs), "descs,", len(opcodes), "opcodes")


if __name__ == "__main__":
    main()
