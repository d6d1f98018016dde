"""Ask llvm-mc-19 what every opcode number of every encoding means.

For each target and encoding we build one probe instruction per opcode number
with distinctive field values, disassemble them all in one llvm-mc call, and
keep the text. Later steps (gen.py) turn the text into operand templates.
"""
import re
import struct
import subprocess

MARK = 0xBF800007  # s_nop 7: separates probes in the batch
# Appended to every probe: a literal if the instruction takes one, else it
# decodes on its own as a 4-byte VOP2 (so the probe text is then 2 lines).
PAD = 0x12345678


def words_to_line(words):
    b = b"".join(struct.pack("<I", w & 0xFFFFFFFF) for w in words)
    return ",".join("0x%02x" % x for x in b)


def run_batch(target, probes):
    """probes: list of word lists. Returns per probe (text, took_literal) or None.

    Some words crash llvm-mc-19 (an SDWA select of 7): a batch that crashes is
    split until the crashing probes are alone; those count as refused."""
    try:
        return run_batch_once(target, probes)
    except subprocess.CalledProcessError as e:
        if e.returncode >= 0 or len(probes) <= 1:
            if len(probes) == 1:
                print("llvm-mc-19 crashes on", ["%08x" % (w & 0xFFFFFFFF) for w in probes[0]])
                return [None]
            raise
        half = len(probes) // 2
        return run_batch(target, probes[:half]) + run_batch(target, probes[half:])


def run_batch_once(target, probes):
    lines = []
    for p in probes:
        lines.append(words_to_line(list(p) + [PAD]))
        lines.append(words_to_line([MARK]))
    src = "\n".join(lines) + "\n"
    r = subprocess.run(
        ["llvm-mc-19", "--disassemble", "-triple=amdgcn-amd-amdhsa", "-mcpu=" + target],
        input=src.encode(), capture_output=True, check=True)
    bad = set()
    for m in re.finditer(r"<stdin>:(\d+):\d+: warning: invalid instruction encoding", r.stderr.decode()):
        bad.add(int(m.group(1)) - 1)
    out = [l.strip() for l in r.stdout.decode().splitlines()[1:]]
    res = []
    i = 0
    for n, _ in enumerate(probes):
        text = []
        while i < len(out) and out[i] != "s_nop 7":
            text.append(out[i]); i += 1
        if 2 * n in bad:
            text = []  # llvm-mc skips 4 bytes and decodes the rest: ignore it
        # the marker itself (probe SOPP op 0 may also print s_nop 7: never used)
        assert out[i] == "s_nop 7", (n, out[i - 3:i + 3])
        i += 1
        res.append((text[0], len(text) == 1) if text else None)
    return res
