//! On every instruction of every fixture code object (all three targets),
//! `info()`'s explicit registers are exactly the registers the formatter
//! prints (whose text is itself checked against llvm-objdump-19 by
//! objdump_fixtures.rs): no missing or extra operand, same widths.
//! Also a few hand-checked instructions whose def/use the ISA manual states.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use inlay_isa::{format::to_string, info, Access, Decoder, RegFile, Register, Target};
use object::{Object, ObjectSection};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut v = Vec::new();
    for t in ["gfx908", "gfx90a", "gfx942"] {
        for ver in ["v4", "v5"] {
            if let Ok(rd) = std::fs::read_dir(root.join(t).join(ver)) {
                for e in rd.flatten() {
                    if e.path().extension().is_some_and(|x| x == "hsaco") {
                        v.push(e.path());
                    }
                }
            }
        }
    }
    v.sort();
    v
}

fn target_of(f: &object::File) -> Option<Target> {
    match f.flags() {
        object::FileFlags::Elf { e_flags, .. } => match e_flags & 0xFF {
            0x30 => Some(Target::Gfx908),
            0x3F => Some(Target::Gfx90a),
            0x40 | 0x41 | 0x4C => Some(Target::Gfx942),
            _ => None,
        },
        _ => None,
    }
}

/// Registers named in printed operand text, parsed independently of info().
fn printed_registers(text: &str) -> Vec<Register> {
    let ops = match text.split_once(' ') {
        Some((_, ops)) => ops,
        None => return Vec::new(),
    };
    let mut out = Vec::new();
    for tok in ops.split([',', ' ', '|', '-']) {
        let tok = tok.trim();
        let named = |file, first, count| Some(Register::new(file, first, count));
        let r = match tok {
            "vcc" | "vccz" => named(RegFile::Vcc, 0, 2),
            "vcc_lo" => named(RegFile::Vcc, 0, 1),
            "vcc_hi" => named(RegFile::Vcc, 1, 1),
            "exec" | "execz" => named(RegFile::Exec, 0, 2),
            "exec_lo" => named(RegFile::Exec, 0, 1),
            "exec_hi" => named(RegFile::Exec, 1, 1),
            "flat_scratch" => named(RegFile::FlatScratch, 0, 2),
            "flat_scratch_lo" => named(RegFile::FlatScratch, 0, 1),
            "flat_scratch_hi" => named(RegFile::FlatScratch, 1, 1),
            "xnack_mask" => named(RegFile::XnackMask, 0, 2),
            "m0" | "lds_direct" => named(RegFile::M0, 0, 1),
            "scc" | "src_scc" => named(RegFile::Scc, 0, 1),
            _ => tuple(tok),
        };
        out.extend(r);
        // hwreg(...) names a hardware register.
        if let Some(rest) = tok.strip_prefix("hwreg(") {
            let id = rest.trim_end_matches(')');
            let id = HWREGS
                .iter()
                .find(|(n, _)| *n == id)
                .map(|(_, v)| *v)
                .or_else(|| id.parse().ok());
            out.extend(id.map(|v| Register::new(RegFile::HwReg, v, 1)));
        }
    }
    out
}

/// Hardware register ids by name (AMD ISA manual, "Hardware registers").
const HWREGS: [(&str, u16); 12] = [
    ("HW_REG_MODE", 1),
    ("HW_REG_STATUS", 2),
    ("HW_REG_TRAPSTS", 3),
    ("HW_REG_HW_ID", 4),
    ("HW_REG_GPR_ALLOC", 5),
    ("HW_REG_LDS_ALLOC", 6),
    ("HW_REG_IB_STS", 7),
    ("HW_REG_SH_MEM_BASES", 15),
    ("HW_REG_XCC_ID", 20),
    ("HW_REG_FLAT_SCR_LO", 20),
    ("HW_REG_FLAT_SCR_HI", 21),
    ("HW_REG_POPS_PACKER", 25),
];

/// `v5`, `s[4:7]`, `a[0:15]`, `ttmp3`, `ttmp[4:5]`.
fn tuple(tok: &str) -> Option<Register> {
    let (file, rest) = if let Some(r) = tok.strip_prefix("ttmp") {
        (RegFile::Ttmp, r)
    } else {
        let file = match tok.chars().next()? {
            'v' => RegFile::Vgpr,
            's' => RegFile::Sgpr,
            'a' => RegFile::Agpr,
            _ => return None,
        };
        (file, &tok[1..])
    };
    if let Some(range) = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        let (a, b) = range.split_once(':')?;
        let (a, b): (u16, u16) = (a.parse().ok()?, b.parse().ok()?);
        return Some(Register::new(file, a, (b - a + 1) as u8));
    }
    Some(Register::new(file, rest.parse().ok()?, 1))
}

#[test]
fn explicit_registers_match_printed_operands_on_fixtures() {
    let files = fixtures();
    assert!(!files.is_empty(), "no fixtures under fixtures/");
    let mut per_target: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for path in &files {
        let data = std::fs::read(path).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let target = target_of(&file).expect("fixture target");
        let dec = Decoder::new(target);
        let text = file.section_by_name(".text").expect(".text");
        let bytes = text.data().unwrap();
        let mut at = 0;
        while at < bytes.len() {
            let i = match dec.decode(&bytes[at..]) {
                Ok(i) => i,
                Err(_) => break,
            };
            at += i.len().max(4);
            if !i.is_valid() {
                continue;
            }
            *per_target.entry(target.name()).or_default() += 1;
            let s = to_string(&i);
            let mut printed = printed_registers(&s);
            let mut ours: Vec<Register> = info(&i)
                .used_registers()
                .iter()
                .filter(|u| !u.is_implicit())
                .map(|u| u.register)
                .collect();
            printed.sort();
            ours.sort();
            if printed != ours && failures.len() < 20 {
                failures.push(format!("{s}: printed {printed:?}, info {ours:?}"));
            }
        }
    }
    eprintln!("def/use checked against printed operands: {per_target:?}");
    assert_eq!(per_target.len(), 3, "fixtures should cover three targets");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn build(target: Target, bytes: &[u8]) -> inlay_isa::Instruction {
    let i = Decoder::new(target).decode(bytes).unwrap();
    assert!(i.is_valid(), "{bytes:02x?}");
    i
}

fn uses(i: &inlay_isa::Instruction) -> Vec<(RegFile, u16, u8, Access, bool)> {
    info(i)
        .used_registers()
        .iter()
        .map(|u| {
            let r = u.register;
            (r.file, r.first, r.count, u.access, u.is_implicit())
        })
        .collect()
}

/// Instructions assembled with llvm-mc-19 (encodings in the comments), their
/// def/use as the ISA manual describes them.
#[test]
fn hand_checked_instructions() {
    use Access::*;
    use RegFile::*;
    let t = Target::Gfx90a;
    // s_addc_u32 s0, s1, s2: reads SCC (carry in) and writes it (carry out).
    let i = build(t, &[0x01, 0x02, 0x00, 0x82]);
    assert_eq!(to_string(&i), "s_addc_u32 s0, s1, s2");
    assert_eq!(
        uses(&i),
        [
            (Sgpr, 0, 1, Write, false),
            (Sgpr, 1, 1, Read, false),
            (Sgpr, 2, 1, Read, false),
            (Scc, 0, 1, ReadWrite, true),
        ]
    );
    // s_load_dwordx4 s[4:7], s[0:1], 0x10: four SGPRs written.
    let i = build(t, &[0x00, 0x01, 0x0a, 0xc0, 0x10, 0x00, 0x00, 0x00]);
    assert_eq!(to_string(&i), "s_load_dwordx4 s[4:7], s[0:1], 0x10");
    assert_eq!(
        uses(&i),
        [(Sgpr, 4, 4, Write, false), (Sgpr, 0, 2, Read, false)]
    );
    // v_add_co_u32_e32 v1, vcc, v2, v3: carry out in VCC, runs under EXEC.
    let i = build(t, &[0x02, 0x07, 0x02, 0x32]);
    assert_eq!(to_string(&i), "v_add_co_u32_e32 v1, vcc, v2, v3");
    assert_eq!(
        uses(&i),
        [
            (Vgpr, 1, 1, Write, false),
            (Vcc, 0, 2, Write, false),
            (Vgpr, 2, 1, Read, false),
            (Vgpr, 3, 1, Read, false),
            (Exec, 0, 2, Read, true),
        ]
    );
    // global_atomic_add v0, v[2:3], v4, off glc: returns the old value.
    let i = build(t, &[0x00, 0x80, 0x09, 0xdd, 0x02, 0x04, 0x7f, 0x00]);
    assert_eq!(to_string(&i), "global_atomic_add v0, v[2:3], v4, off glc");
    assert_eq!(
        uses(&i),
        [
            (Vgpr, 0, 1, Write, false),
            (Vgpr, 2, 2, Read, false),
            (Vgpr, 4, 1, Read, false),
            (Exec, 0, 2, Read, true),
        ]
    );
    // s_and_saveexec_b64 s[0:1], s[2:3]: EXEC read and written, SCC written.
    let i = build(t, &[0x02, 0x20, 0x80, 0xbe]);
    assert_eq!(to_string(&i), "s_and_saveexec_b64 s[0:1], s[2:3]");
    assert_eq!(
        uses(&i),
        [
            (Sgpr, 0, 2, Write, false),
            (Sgpr, 2, 2, Read, false),
            (Scc, 0, 1, Write, true),
            (Exec, 0, 2, ReadWrite, true),
        ]
    );
    // MFMA: 16 AGPRs written (accumulator read from its own operand).
    let i = build(t, &[0x00, 0x80, 0xcc, 0xd3, 0x02, 0x09, 0x02, 0x04]);
    assert_eq!(
        to_string(&i),
        "v_mfma_f32_32x32x8f16 a[0:15], v[2:3], v[4:5], a[0:15]"
    );
    assert_eq!(
        uses(&i),
        [
            (Agpr, 0, 16, Write, false),
            (Vgpr, 2, 2, Read, false),
            (Vgpr, 4, 2, Read, false),
            (Agpr, 0, 16, Read, false),
            (Exec, 0, 2, Read, true),
        ]
    );
    // global_load_dwordx2: two VGPRs written.
    let i = build(t, &[0x00, 0x80, 0x54, 0xdc, 0x04, 0x00, 0x7f, 0x02]);
    assert_eq!(to_string(&i), "global_load_dwordx2 v[2:3], v[4:5], off");
    assert_eq!(
        uses(&i),
        [
            (Vgpr, 2, 2, Write, false),
            (Vgpr, 4, 2, Read, false),
            (Exec, 0, 2, Read, true),
        ]
    );
    // v_writelane_b32: one lane written, the others kept; EXEC ignored.
    let i = build(t, &[0x01, 0x00, 0x8a, 0xd2, 0x02, 0x06, 0x01, 0x00]);
    assert_eq!(to_string(&i), "v_writelane_b32 v1, s2, 3");
    assert_eq!(
        uses(&i),
        [(Vgpr, 1, 1, ReadWrite, false), (Sgpr, 2, 1, Read, false)]
    );
    // v_cmpx_eq_u32_e32: VCC and EXEC written, EXEC read.
    let i = build(t, &[0x01, 0x05, 0xb4, 0x7d]);
    assert_eq!(to_string(&i), "v_cmpx_eq_u32_e32 vcc, v1, v2");
    assert_eq!(
        uses(&i),
        [
            (Vcc, 0, 2, Write, false),
            (Vgpr, 1, 1, Read, false),
            (Vgpr, 2, 1, Read, false),
            (Exec, 0, 2, ReadWrite, true),
        ]
    );
    // s_getreg_b32 s0, hwreg(HW_REG_MODE): reads hardware register 1.
    let i = build(t, &[0x01, 0xf8, 0x80, 0xb8]);
    assert_eq!(to_string(&i), "s_getreg_b32 s0, hwreg(HW_REG_MODE)");
    assert_eq!(
        uses(&i),
        [(Sgpr, 0, 1, Write, false), (HwReg, 1, 1, Read, false)]
    );
    // buffer_atomic_add ... glc: vdata is the data and receives the old value.
    let i = build(t, &[0x00, 0x40, 0x08, 0xe1, 0x00, 0x01, 0x01, 0x80]);
    assert_eq!(to_string(&i), "buffer_atomic_add v1, off, s[4:7], 0 glc");
    assert_eq!(
        uses(&i),
        [
            (Vgpr, 1, 1, ReadWrite, false),
            (Sgpr, 4, 4, Read, false),
            (Exec, 0, 2, Read, true),
        ]
    );
    // buffer_store_dword with offen: the data and the address are read (a
    // store's address once came out as written, after its data).
    let i = build(t, &[0x04, 0x10, 0x70, 0xe0, 0x07, 0x05, 0x00, 0x80]);
    assert_eq!(
        to_string(&i),
        "buffer_store_dword v5, v7, s[0:3], 0 offen offset:4"
    );
    assert_eq!(
        uses(&i),
        [
            (Vgpr, 5, 1, Read, false),
            (Vgpr, 7, 1, Read, false),
            (Sgpr, 0, 4, Read, false),
            (Exec, 0, 2, Read, true),
        ]
    );
    // s_cbranch_vccz: reads VCC, PC conditionally written.
    let i = build(t, &[0x04, 0x00, 0x86, 0xbf]);
    assert_eq!(to_string(&i), "s_cbranch_vccz 4");
    assert_eq!(
        uses(&i),
        [(Pc, 0, 2, ReadCondWrite, true), (Vcc, 0, 2, Read, true)]
    );
}

/// Untrusted words never make info() panic, and no instruction comes near
/// the inline capacity (so nothing is ever dropped).
#[test]
fn random_words_never_panic_or_overflow() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    };
    // Real encoding prefixes, so most words decode to something.
    const PREFIXES: [u32; 12] = [
        0x0000_0000,
        0x7E00_0000,
        0x7C00_0000,
        0x8000_0000,
        0xBE80_0000,
        0xBF80_0000,
        0xC000_0000,
        0xD000_0000,
        0xD380_0000,
        0xD800_0000,
        0xDC00_0000,
        0xE000_0000,
    ];
    let mut most = 0;
    for target in [Target::Gfx908, Target::Gfx90a, Target::Gfx942] {
        let dec = Decoder::new(target);
        for k in 0..100_000 {
            let p = PREFIXES[k % PREFIXES.len()];
            let w0 = p | (next() & !(p | (p >> 1) | (p >> 2)));
            let mut bytes = [0u8; 8];
            bytes[..4].copy_from_slice(&w0.to_le_bytes());
            bytes[4..].copy_from_slice(&next().to_le_bytes());
            if let Ok(i) = dec.decode(&bytes) {
                most = most.max(info(&i).used_registers().len());
            }
        }
    }
    assert!(most > 4, "random words should reach real instructions");
    assert!(
        most + 4 < inlay_isa::info::CAPACITY,
        "{most} registers used"
    );
}

#[test]
fn overlap_queries() {
    let t = Target::Gfx90a;
    // s_load_dwordx4 s[4:7], s[0:1], 0x10
    let i = build(t, &[0x00, 0x01, 0x0a, 0xc0, 0x10, 0x00, 0x00, 0x00]);
    let inf = info(&i);
    assert!(inf.writes(&Register::new(RegFile::Sgpr, 6, 1)));
    assert!(!inf.writes(&Register::new(RegFile::Sgpr, 8, 2)));
    assert!(inf.reads(&Register::new(RegFile::Sgpr, 1, 4)));
    assert!(!inf.reads(&Register::new(RegFile::Vgpr, 0, 1)));
    assert!(
        !inf.reads(&Register::new(RegFile::Exec, 0, 2)),
        "SMEM ignores EXEC"
    );
}
