#!/usr/bin/env python3
"""Generate src/generated/defuse.rs: per-opcode register roles from AMD's
machine-readable CDNA ISA specification, used as an independent oracle for
`info()` (tests/defuse_spec.rs). Nothing in the library reads it at run time.

Source: the tinygrad 0.14.0 wheel (MIT licence, Copyright (c) 2024 the tiny
corp), whose files tinygrad/runtime/autogen/amd/cdna/{operands,str_pcode}.py
are generated from AMD's CDNA ISA XML (operand fields, sizes and kinds) and
the ISA guide's pseudocode. We read only facts from them (field widths, which
of SCC/VCC/EXEC/M0/PC and which destination fields the pseudocode reads or
assigns); no code or text of theirs is copied into the output.

Regenerate (one command; the wheel is scratch data under /tmp):
    pip download --no-deps tinygrad==0.14.0 -d /tmp/tg && \
    unzip -qo /tmp/tg/tinygrad-0.14.0-py3-none-any.whl -d /tmp/tg/w && \
    python3 crates/isa/gen/defuse.py /tmp/tg/w

Output row: encoding class as AMD names it, lower-case opcode name (AMD's
`_E32`/`_E64` suffixes kept), implicit registers and explicit fields:
  implicit: "scc:rw vcc:r exec:w m0:r pc:rw"
  fields:   "vdst:32:w src0:32:r"  role r, w, rw, R (written when the
            instruction returns data: glc/sc0 atomics), ? (no pseudocode)
"""
import os
import re
import sys

IMPLICIT = [("SCC", "scc"), ("VCC", "vcc"), ("VCCZ", "vcc"), ("EXEC", "exec"),
            ("EXECZ", "exec"), ("M0", "m0"), ("PC", "pc")]
DST_FIELDS = ("vdst", "sdst", "sdata", "vdata")
SRC_TOKENS = {"src0": ["S0", "SRC0"], "src1": ["S1"], "src2": ["S2"]}


def strip_comments(code):
    return "\n".join(l.split("//")[0] for l in code.split("\n"))


def selectors(code, i):
    """Indices `[...]` (balanced) and `.field`s after position i: (list, end)."""
    idx = []
    while i < len(code):
        if code[i] == ".":
            m = re.match(r"\.\w+", code[i:])
            if not m:
                break
            i += m.end()
        elif code[i] == "[":
            depth, j = 0, i
            while j < len(code):
                depth += {"[": 1, "]": -1}.get(code[j], 0)
                if depth == 0:
                    break
                j += 1
            idx.append(code[i + 1:j])
            i = j + 1
        else:
            break
    return idx, i


def depth_at(code, pos):
    """Nesting depth of if/for blocks at pos (0 = straight-line code)."""
    text = code[:pos]
    opens = len(re.findall(r"\bthen\b|\bdo\b", text))
    closes = len(re.findall(r"\bendif\b|\bendfor\b", text))
    return opens - closes


def in_tuple_lhs(code, pos):
    """Whether pos is inside `{ ... }` that is assigned to (`{ D1, D0 } = x`)."""
    lb = code.rfind("{", 0, pos)
    if lb < 0 or code.rfind("}", lb, pos) >= 0:
        return False
    rb = code.find("}", pos)
    return rb >= 0 and re.match(r"\s*=(?!=)", code[rb + 1:]) is not None


def accesses(code, token):
    """(read, write, partial) for an identifier in pseudocode, in statement
    order: a read after an unconditional whole write sees the new value and
    is not a read of the register's old contents."""
    r = w = partial = False
    overwritten = None  # end of the statement that overwrote the register
    whole = False  # written without a bit range
    bits = set()  # bits of the first dword written through ranges like [15 : 0]
    for m in re.finditer(r"\b%s\b" % token, code):
        before = code[:m.start()]
        if re.search(r"declare\s+$", before):
            continue
        fresh = overwritten is None or m.start() < overwritten
        idx, end = selectors(code, m.end())
        # `VGPR[lane][VDST] = x` writes the register VDST names; one chosen
        # lane, or a bit slice of it, keeps the rest of the old value.
        g = re.search(r"[VS]GPR\[([^\]]*)\]\[$", before)
        if g:
            rest = code[end:]
            close = re.match(r"\s*\]((?:\[[^\]]*\])*)(?:\.\w+)*\s*=(?!=)", rest)
            if close:
                w = True
                if g.group(1).strip() == "lane" or ":" in close.group(1):
                    partial = True
                continue
        if in_tuple_lhs(code, m.start()):
            w = True
            continue
        op = re.match(r"\s*(==|[+\-|&^*]=|=)?", code[end:]).group(1)
        if op is None or op == "==":
            r = r or fresh
            continue
        w = True
        if op != "=":
            r = r or fresh  # compound assignment reads too
            continue
        # Indexed by a single bit other than the lane, or a bit range of a
        # 32-bit special register: a partial write.
        top = [re.sub(r"\[[^\[\]]*\]", "", i) for i in idx]
        # (bit by bit in a loop over the whole register is a whole write).
        in_loop = re.search(r"\bfor\b[^\n]*\bdo\b", before) and not re.search(r"\bendfor\b", before)
        # (an element of a register declared as an array is a whole dword).
        array = re.search(r"declare %s\s*:[^\n]*\[\d+\]" % token, code)
        if any(":" not in i and i.strip() != "laneId" for i in top) and not in_loop and not array:
            partial = True
        elif token == "M0" and any(":" in i and i.replace(" ", "") != "31:0" for i in top):
            partial = True
        rng = [re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", i) for i in top]
        if len(rng) == 1 and rng[0]:
            hi, lo = int(rng[0].group(1)), int(rng[0].group(2))
            bits.update(range(lo, hi + 1) if hi < 32 else range(32))
        elif not top:
            whole = True
        if not top and depth_at(code, m.start()) == 0 and overwritten is None:
            ends = [e for e in (code.find(";", m.end()), code.find("\n", m.end())) if e >= 0]
            overwritten = min(ends) if ends else len(code)
    # Only part of the register written (8/16-bit results): the rest is kept.
    if bits and not whole and bits != set(range(32)):
        partial = True
    return r, w, partial


def role(code, tokens):
    r = w = p = False
    for t in tokens:
        a, b, c = accesses(code, t)
        r, w, p = r or a, w or b, p or c
    if p:
        r = True
    return ("r" if r else "") + ("w" if w else "")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tg/w"
    sys.path.insert(0, root)
    from tinygrad.runtime.autogen.amd.cdna import operands, str_pcode  # noqa: E402

    pcode, ops = str_pcode.PCODE, operands.OPERANDS
    rows = []
    for key in sorted(set(pcode) | set(ops), key=lambda k: (type(k).__name__, k.name)):
        enc = type(key).__name__[:-2]  # "SOP2Op" -> "SOP2"
        code = pcode.get(key)
        fields = ops.get(key, {})
        code = strip_comments(code) if code else None
        imp = {}
        if code:
            for tok, name in IMPLICIT:
                r, w, partial = accesses(code, tok)
                r = r or partial  # the bits not written keep their value
                cur = imp.get(name, "")
                imp[name] = ("r" if r or "r" in cur else "") + ("w" if w or "w" in cur else "")
        if enc == "VOPC" and code and accesses(code, "D0")[1]:
            imp["vcc"] = imp.get("vcc", "") + "w"  # D0 of the e32 form is VCC
        imp_s = " ".join(f"{n}:{a}" for n, a in imp.items() if a)
        fs = []
        for f in sorted(fields):
            bits = fields[f][1]
            if code is None:
                rl = "?"
            elif f in DST_FIELDS:
                rl = field_role(enc, f, code, fields)
            elif f in SRC_TOKENS:
                rl = role(code, SRC_TOKENS[f]) or "r"  # v_swap writes its source
            else:
                rl = "r"
            fs.append(f"{f}:{bits}:{rl}")
        rows.append((enc, key.name.lower(), imp_s, " ".join(fs), code is not None))

    out = os.path.join(os.path.dirname(__file__), "..", "src", "generated", "defuse.rs")
    with open(out, "w") as f:
        f.write("// @generated by crates/isa/gen/defuse.py from AMD's CDNA ISA specification\n")
        f.write("// (via the tinygrad 0.14.0 wheel, MIT licence). Do not edit.\n")
        f.write("// Regenerate: see the docstring of crates/isa/gen/defuse.py.\n\n")
        f.write("/// One opcode as AMD's specification describes it: (encoding class such\n")
        f.write("/// as `SOP2`/`VOP3SD`/`GLOBAL`, lower-case name with AMD's `_e32`/`_e64`,\n")
        f.write("/// implicit registers `scc:rw vcc:r exec:w m0:r pc:rw`, explicit fields\n")
        f.write("/// `name:bits:role` with role r, w, rw, R (written when returning) or ?\n")
        f.write("/// (no pseudocode)).\n")
        f.write("pub type SpecOp = (&'static str, &'static str, &'static str, &'static str);\n\n")
        f.write("#[rustfmt::skip]\n")
        f.write(f"pub static SPEC: [SpecOp; {len(rows)}] = [\n")
        for enc, name, imp, fl, hp in rows:
            f.write(f'    ("{enc}", "{name}", "{imp}", "{fl}"),\n')
        f.write("];\n")
    print(f"wrote {len(rows)} opcodes to {os.path.normpath(out)}")


def field_role(enc, f, code, fields):
    """Role of a destination-like field from the pseudocode names it goes by."""
    if f == "vdst" and enc in ("FLAT", "GLOBAL", "SCRATCH", "DS"):
        return role(code, ["VDATA", "VDST", "RETURN_DATA"]) or "w"
    if f == "sdst" and enc == "VOP3SD":
        # The carry / scale-flag output; a VCC read is the carry-in (src2).
        return "w" if accesses(code, "D1")[1] or accesses(code, "VCC")[1] else ""
    if f in ("vdst", "sdst"):
        rl = role(code, ["D0", "VDST", "DST", "D"])
        if rl == "" and f == "sdst":
            return "r"  # SOPK compares and s_setreg name a source in sdst
        return rl
    # sdata / vdata of SMEM and buffer instructions
    rl = role(code, ["SDATA", "VDATA", "DATA", "DATA2"])
    if "RETURN_DATA" in code:
        rl = (rl if "r" in rl else "r") + "R"
    return rl


if __name__ == "__main__":
    main()
