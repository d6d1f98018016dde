//! Oracle: `info()` against LLVM's own instruction descriptions, for every
//! opcode of every target's tables (gfx908, gfx90a, gfx942).
//!
//! A small C++ program (`support/llvm_defuse.cpp`, built with clang++-19
//! against libLLVM-19 into target/tmp on the first run, then reused while
//! its source is unchanged) disassembles each instruction with LLVM's AMDGPU
//! MCDisassembler and prints, from the MCInstrDesc, every explicit register
//! operand as a def (operand index < NumDefs) or a use, the uses tied to a
//! def (TIED_TO, taken from the codegen pseudo where LLVM 19 dropped it from
//! the encoded instruction, and counted even when the disassembler leaves
//! the tied operand out of the MCInst), and the implicit defs and uses.
//! Registers are expanded to their 32-bit registers (`VGPR4_VGPR5` is v4 and
//! v5, `VCC` is vcc_lo and vcc_hi), and so are ours, so identity and width
//! are compared together.
//!
//! Instructions: one instance of every table entry (opcode number, glc
//! forms too; all register fields 0; VOP3 also with VGPR sources), and every
//! operand form of `encode_llvm_mc.rs` (distinct registers per operand, each
//! field varied). For each one LLVM decodes to the same length with every
//! register inside its operand's register class (LLVM prints the others
//! with "Invalid register", e.g. SGPR sources of MFMA), per 32-bit register:
//! - every register LLVM defines, we write; every register LLVM uses, we read;
//! - every register we write, LLVM defines; every register we read, LLVM uses.
//!
//! The test fails if a desc of any target's tables is not checked at least
//! once with register operands that do not overlap one another (so that a
//! read of the destination cannot hide behind a source), and lists it.
//!
//! How LLVM's names map to ours: `SRC_VCCZ`, `SRC_EXECZ` and `SRC_SCC`
//! (source codes 251..253) are reads of VCC, EXEC and SCC, and `LDS_DIRECT`
//! (254) a read of M0, which addresses it; `SRC_SHARED_BASE` and the other
//! aperture/ID sources are constants. The program counter and hardware
//! registers other than MODE are not registers in LLVM and are not compared.
//!
//! Where LLVM's description and the hardware differ, we follow the hardware;
//! each such class is listed in [`EXCEPTIONS`] with its argument from the
//! ISA, matched narrowly (opcode, register, direction), and counted.
//! An exception that no longer matches anything fails the test too. In
//! short (LLVM's side first):
//! - MODE read by FP VALU operations: not modelled by `info()` (a scope
//!   limit, documented in info.rs, not a hardware fact);
//! - MODE read/written by s_getreg/s_setreg of another hwreg, or read by an
//!   s_setreg of all of MODE: LLVM cannot see the hwreg immediate;
//! - M0 read by every gfx9 DS instruction: GFX6-8's LDS bound, gone in GFX9;
//! - vdata written by MIMG atomics without glc;
//! - no tied input for format_d16_x/hi_x buffer loads, v_pk_fmac_f16_e32 and
//!   the `_legacy` 16-bit ops with op_sel[3] (the kept half is read);
//! - no EXEC for fork/join; sdst used and not written by s_movreld;
//!   no FLAT_SCR for scratch loads into LDS; all four sources of exp used
//!   whatever `en`; no SCC for s_quadmask; SCC clobbered by s_setvskip; no
//!   TTMP0/1 for s_trap; VCC written by class-compare SDWA with an SGPR
//!   destination; no M0 for the gfx9 v_interp_p2_f16; M0 not read by
//!   s_set_gpr_idx_mode (it keeps all but M0[15:12]).

mod support;

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use inlay_isa::format::to_string;
use inlay_isa::info::HW_REG_MODE;
use inlay_isa::{info, Decoder, Encoding as E, Instruction, RegFile, Target};
use support::forms::{forms, table_entries, table_instances, words_bytes};

const SOURCE: &str = include_str!("support/llvm_defuse.cpp");

/// Builds the dumper once per test binary (cached across runs by the hash
/// of its source) and returns its path.
fn dumper() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let missing = |what: &str| -> ! {
            panic!(
                "this oracle needs {what} (Debian packages llvm-19-dev and clang-19): \
                 run scripts/install-deps"
            )
        };
        let config = |arg: &str| -> String {
            match Command::new("llvm-config-19").arg(arg).output() {
                Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().into(),
                _ => missing("llvm-config-19"),
            }
        };
        let include = config("--includedir");
        if !Path::new(&include).join("llvm/MC/MCInstrDesc.h").exists() {
            missing("LLVM 19's headers");
        }
        let libdir = config("--libdir");
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        SOURCE.hash(&mut h);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let exe = dir.join(format!("llvm_defuse-{:016x}", h.finish()));
        if exe.exists() {
            return exe;
        }
        let src = dir.join(format!("llvm_defuse-{}.cpp", std::process::id()));
        let tmp = dir.join(format!("llvm_defuse-{}.tmp", std::process::id()));
        std::fs::write(&src, SOURCE).unwrap();
        let mut cmd = Command::new("clang++-19");
        cmd.args(config("--cxxflags").split_whitespace())
            .arg("-O1")
            .arg(&src)
            .arg("-o")
            .arg(&tmp)
            .args(config("--ldflags").split_whitespace())
            .args(config("--libs").split_whitespace())
            .arg(format!("-Wl,-rpath,{libdir}"));
        let out = cmd.output().unwrap_or_else(|_| missing("clang++-19"));
        let _ = std::fs::remove_file(&src);
        assert!(
            out.status.success(),
            "building the LLVM dumper failed (is llvm-19-dev installed? run \
             scripts/install-deps):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::rename(&tmp, &exe).unwrap();
        exe
    })
}

/// What LLVM says of one instruction.
#[derive(Debug, Default)]
struct Llvm {
    name: String,
    size: usize,
    /// 32-bit registers defined and used (explicit and implicit).
    defs: BTreeSet<Unit>,
    uses: BTreeSet<Unit>,
    /// The raw line, for messages.
    line: String,
    /// Some register is outside its operand's class (LLVM prints "Invalid
    /// register" there): not an instruction LLVM describes.
    bad_class: bool,
}

/// One 32-bit register: file and index (HwReg: the hardware register id).
type Unit = (RegFile, u16);

/// Our unit of one of LLVM's 32-bit register names; None for constants.
fn unit(full: &str) -> Vec<Unit> {
    use RegFile::*;
    // Per-generation variants: M0_gfxpre11, TTMP0_gfx9plus, ...
    let name = ["_gfx", "_vi", "_ci"]
        .iter()
        .filter_map(|s| full.find(s))
        .min()
        .map_or(full, |k| &full[..k]);
    let num = |p: &str| -> Option<u16> {
        let rest = name.strip_prefix(p)?;
        (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
            .then(|| rest.parse().ok())
            .flatten()
    };
    for (p, f) in [
        ("VGPR", Vgpr),
        ("AGPR", Agpr),
        ("SGPR", Sgpr),
        ("TTMP", Ttmp),
    ] {
        if let Some(n) = num(p) {
            return vec![(f, n)];
        }
    }
    match name {
        "VCC_LO" => vec![(Vcc, 0)],
        "VCC_HI" => vec![(Vcc, 1)],
        "EXEC_LO" => vec![(Exec, 0)],
        "EXEC_HI" => vec![(Exec, 1)],
        "FLAT_SCR_LO" => vec![(FlatScratch, 0)],
        "FLAT_SCR_HI" => vec![(FlatScratch, 1)],
        "XNACK_MASK_LO" => vec![(XnackMask, 0)],
        "XNACK_MASK_HI" => vec![(XnackMask, 1)],
        "M0" | "LDS_DIRECT" => vec![(M0, 0)],
        "SCC" | "SRC_SCC" => vec![(Scc, 0)],
        "MODE" => vec![(HwReg, HW_REG_MODE)],
        "SRC_VCCZ" => vec![(Vcc, 0), (Vcc, 1)],
        "SRC_EXECZ" => vec![(Exec, 0), (Exec, 1)],
        // `null` reads as 0 and drops writes; apertures (and their halves)
        // and the POPS wave id are constants
        "SGPR_NULL" => vec![],
        _ if ["SRC_SHARED_", "SRC_PRIVATE_", "SRC_POPS_"]
            .iter()
            .any(|p| name.starts_with(p)) =>
        {
            vec![]
        }
        _ => panic!("LLVM register {full} has no mapping here"),
    }
}

fn units(list: &str) -> Vec<Unit> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .flat_map(unit)
        .collect()
}

/// Runs the dumper on one batch; one result per instruction (None: LLVM
/// does not decode it).
fn llvm_defuse(target: Target, insts: &[Vec<u8>]) -> Vec<Option<Llvm>> {
    let mut input = String::with_capacity(insts.len() * 20);
    for b in insts {
        for x in b {
            input.push_str(&format!("{x:02x}"));
        }
        input.push('\n');
    }
    let mut child = Command::new(dumper())
        .arg(target.name())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the LLVM dumper");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "LLVM dumper failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<Option<Llvm>> = text
        .lines()
        .map(|l| {
            if l == "invalid" {
                return None;
            }
            let mut f = l.split('\t');
            let mut r = Llvm {
                name: f.next()?.to_string(),
                size: f.next()?.parse().ok()?,
                line: l.to_string(),
                ..Llvm::default()
            };
            let mut regs: HashMap<usize, Vec<Unit>> = HashMap::new();
            for field in f {
                if let Some(x) = field.strip_prefix("idef:") {
                    r.defs.extend(units(x));
                } else if let Some(x) = field.strip_prefix("iuse:") {
                    r.uses.extend(units(x));
                } else {
                    let (k, mut rest) = field.split_once(':')?;
                    if let Some(x) = rest.strip_prefix("badclass:") {
                        r.bad_class = true;
                        rest = x;
                    }
                    let k: usize = k.strip_prefix('o')?.parse().ok()?;
                    if let Some(x) = rest.strip_prefix("D:") {
                        regs.insert(k, units(x));
                        r.defs.extend(units(x));
                    } else if let Some(x) = rest.strip_prefix("U:") {
                        // a tied use: "tJ:UNITS"
                        let x = match x.split_once(':') {
                            Some((t, u)) if t.starts_with('t') => u,
                            _ => x,
                        };
                        regs.insert(k, units(x));
                        r.uses.extend(units(x));
                    } else if let Some(j) = rest.strip_prefix("missing:t") {
                        // a tied input the MCInst lacks: reads operand J
                        let j: usize = j.parse().ok()?;
                        r.uses.extend(regs.get(&j).cloned().unwrap_or_default());
                    }
                }
            }
            Some(r)
        })
        .collect();
    assert_eq!(
        v.len(),
        insts.len(),
        "dumper output does not pair with input"
    );
    v
}

/// One difference: a register and what one side does that the other does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Diff {
    /// LLVM defines it, we do not write it.
    LlvmDef(Unit),
    /// LLVM uses it, we do not read it.
    LlvmUse(Unit),
    /// We write it, LLVM does not define it.
    OurWrite(Unit),
    /// We read it, LLVM does not use it.
    OurRead(Unit),
}

/// Files both sides model (MODE is checked separately).
fn compared(u: Unit) -> bool {
    !matches!(u.0, RegFile::Pc | RegFile::HwReg) || u == (RegFile::HwReg, HW_REG_MODE)
}

fn differences(i: &Instruction, l: &Llvm) -> Vec<Diff> {
    let mut ours_r = BTreeSet::new();
    let mut ours_w = BTreeSet::new();
    for u in info(i).used_registers() {
        for k in 0..u.register.count as u16 {
            let unit = (u.register.file, u.register.first + k);
            if u.access.reads() {
                ours_r.insert(unit);
            }
            if u.access.writes() {
                ours_w.insert(unit);
            }
        }
    }
    let mut d = Vec::new();
    d.extend(l.defs.difference(&ours_w).map(|&u| Diff::LlvmDef(u)));
    d.extend(l.uses.difference(&ours_r).map(|&u| Diff::LlvmUse(u)));
    d.extend(ours_w.difference(&l.defs).map(|&u| Diff::OurWrite(u)));
    d.extend(ours_r.difference(&l.uses).map(|&u| Diff::OurRead(u)));
    d.retain(|x| match *x {
        Diff::LlvmDef(u) | Diff::LlvmUse(u) | Diff::OurWrite(u) | Diff::OurRead(u) => compared(u),
    });
    d
}

/// A class of differences where LLVM's description is not the hardware:
/// (argument, whether it covers a difference of an instruction).
type Exception = (&'static str, fn(&Instruction, Diff) -> bool);

/// Whether no two register operands of `i` overlap (so that a tied input
/// or a read of the destination cannot hide behind a source operand). The
/// printed `vcc` of carry operations, both carry-in and carry-out, is fixed.
fn distinct_registers(i: &Instruction) -> bool {
    let regs: Vec<_> = info(i)
        .used_registers()
        .iter()
        .filter(|u| {
            let slot = u.operand.and_then(|k| i.slots().get(k as usize));
            matches!(slot, Some(inlay_isa::tables::Slot::Reg { .. }))
        })
        .map(|u| u.register)
        .collect();
    regs.iter()
        .enumerate()
        .all(|(k, a)| regs[k + 1..].iter().all(|b| !a.overlaps(b)))
}

fn name(i: &Instruction) -> &'static str {
    i.opcode().map_or("", |o| o.name())
}

/// The units of the registers `info()` reports for `i` (explicit ones).
fn explicit_units(i: &Instruction) -> BTreeSet<Unit> {
    let mut v = BTreeSet::new();
    for u in info(i).used_registers().iter().filter(|u| !u.is_implicit()) {
        for k in 0..u.register.count as u16 {
            v.insert((u.register.file, u.register.first + k));
        }
    }
    v
}

fn vector(u: Unit) -> bool {
    matches!(u.0, RegFile::Vgpr | RegFile::Agpr)
}

const MODE: Unit = (RegFile::HwReg, HW_REG_MODE);

/// The known modelling differences, each argued from the ISA; each matches
/// one opcode family, one register and one direction.
const EXCEPTIONS: &[Exception] = &[
    (
        "MODE reads: LLVM marks every VALU operation whose result depends on \
         the FP mode (round, denormals) as reading MODE; info() does not \
         report MODE reads (documented in info.rs), only s_setreg/s_getreg \
         and s_set_gpr_idx_* accesses",
        |i, d| d == Diff::LlvmUse(MODE) && name(i).starts_with("v_"),
    ),
    (
        "s_getreg/s_setreg of a hardware register other than MODE: LLVM's \
         description reads/writes MODE whatever the hwreg immediate names \
         (it cannot see it); we report the register named",
        |i, d| {
            let other = !explicit_units(i).contains(&MODE);
            (d == Diff::LlvmUse(MODE) || d == Diff::LlvmDef(MODE))
                && other
                && ["s_getreg_b32", "s_setreg_b32", "s_setreg_imm32_b32"].contains(&name(i))
        },
    ),
    (
        "s_setreg writing all 32 bits of MODE does not read it; LLVM's \
         description reads MODE for any field it sets",
        |i, d| {
            d == Diff::LlvmUse(MODE)
                && name(i).starts_with("s_setreg")
                && info(i).used_registers().iter().any(|u| {
                    u.access == inlay_isa::Access::Write && u.register.file == RegFile::HwReg
                })
        },
    ),
    (
        "DS and M0 on gfx9+: LLVM's encoded DS instructions share the GFX6-8 \
         descriptions, where M0 bounds LDS addresses; from GFX9 the hardware \
         does not (LLVM's ldsRequiresM0Init() is false and its gfx9 codegen \
         uses the DS_*_gfx9 pseudos, which read no M0). Not for the DS \
         operations that do read M0 (gws, ordered_count, append/consume, \
         addtid, src2, nop), whose M0 info() must report",
        |i, d| {
            let m0_ops = [
                "gws",
                "ordered_count",
                "append",
                "consume",
                "addtid",
                "_src2_",
                "ds_nop",
            ];
            d == Diff::LlvmUse((RegFile::M0, 0))
                && i.encoding() == E::Ds
                && !m0_ops.iter().any(|p| name(i).contains(p))
        },
    ),
    (
        "MIMG atomics without glc: LLVM has one description per atomic with \
         vdata tied to a def; the ISA returns the pre-op value only when glc \
         is set (buffer/flat atomics have separate _RTN descriptions)",
        |i, d| {
            matches!(d, Diff::LlvmDef(u) if vector(u))
                && i.encoding() == E::Mimg
                && name(i).starts_with("image_atomic")
                && i.words()[0] & 1 << 13 == 0
        },
    ),
    (
        "buffer/tbuffer format d16 loads of one component (format_d16_x, \
         format_d16_hi_x) write 16 bits and keep the other half (AMD's \
         specification: vdata rw); LLVM ties vdata for the byte/short d16 \
         loads but not for these",
        |i, d| {
            matches!(d, Diff::OurRead(u) if vector(u))
                && matches!(i.encoding(), E::Mubuf | E::Mtbuf)
                && name(i).contains("load_format_d16")
                && !name(i).contains("_xy")
        },
    ),
    (
        "gfx9 `_legacy` 16-bit VOP3 ops with op_sel[3]: `D0 = {tmp, D0[15:0]}` \
         keeps the low half (AMD's pseudocode; without op_sel[3] they write \
         `{16'0, tmp}`, which info() reports as a plain write); LLVM's \
         descriptions of these have no op_sel operand and ignore the bit",
        |i, d| {
            matches!(d, Diff::OurRead(u) if vector(u))
                && i.words()[0] & 1 << 14 != 0
                && [
                    "v_mad_legacy_f16",
                    "v_mad_legacy_u16",
                    "v_mad_legacy_i16",
                    "v_fma_legacy_f16",
                    "v_div_fixup_legacy_f16",
                ]
                .contains(&name(i))
        },
    ),
    (
        "v_pk_fmac_f16 (e32): D = S0 * S1 + D (AMD's specification: vdst rw); \
         LLVM's description ties no accumulator input",
        |i, d| matches!(d, Diff::OurRead(u) if vector(u)) && name(i) == "v_pk_fmac_f16",
    ),
    (
        "s_cbranch_g_fork/i_fork/join push and pop (PC, EXEC) and set EXEC \
         (AMD's specification: exec rw); LLVM, which never emits them, \
         describes them without EXEC",
        |i, d| {
            matches!(
                d,
                Diff::OurRead((RegFile::Exec, _)) | Diff::OurWrite((RegFile::Exec, _))
            ) && name(i).starts_with("s_cbranch_")
                && (name(i).ends_with("fork") || name(i) == "s_cbranch_join")
        },
    ),
    (
        "s_movreld: SGPR[sdst + M0] = S0 reads no destination and writes the \
         named register only when M0 is 0 (we report a CondWrite); LLVM \
         cannot name the register written and lists sdst as an input",
        |i, d| {
            let dst = explicit_units(i);
            matches!(d, Diff::LlvmUse(u) | Diff::OurWrite(u) if dst.contains(&u))
                && name(i).starts_with("s_movreld_")
        },
    ),
    (
        "scratch loads into LDS form their address like every scratch access \
         (flat scratch base); LLVM's LDS-DMA scratch descriptions omit the \
         FLAT_SCR use its other scratch descriptions have",
        |i, d| {
            // gfx942 scratch_load_lds_*; gfx908/gfx90a loads with the lds bit
            let lds = name(i).starts_with("scratch_load_lds_")
                || to_string(i).split_whitespace().any(|w| w == "lds");
            matches!(d, Diff::OurRead((RegFile::FlatScratch, _)))
                && i.encoding() == E::Scratch
                && lds
        },
    ),
    (
        "exp: channels disabled by `en` (printed `off`, or the upper sources \
         under compr) are not exported; LLVM lists all four sources",
        |i, d| {
            matches!(d, Diff::LlvmUse(u) if vector(u) && !explicit_units(i).contains(&u))
                && i.encoding() == E::Exp
        },
    ),
    (
        "s_quadmask sets SCC = (D != 0) (AMD's specification: scc w); LLVM's \
         description defines no SCC",
        |i, d| d == Diff::OurWrite((RegFile::Scc, 0)) && name(i).starts_with("s_quadmask_"),
    ),
    (
        "s_setvskip sets MODE.vskip and leaves SCC alone (AMD's \
         specification: no scc); LLVM's description clobbers SCC",
        |i, d| d == Diff::LlvmDef((RegFile::Scc, 0)) && name(i) == "s_setvskip",
    ),
    (
        "s_trap saves the return PC in {TTMP1, TTMP0} (ISA pseudocode); LLVM \
         does not model the trap handler's registers",
        |i, d| matches!(d, Diff::OurWrite((RegFile::Ttmp, 0 | 1))) && name(i) == "s_trap",
    ),
    (
        "v_cmp(x)_class SDWA with an SGPR destination (sd = 1) writes that \
         pair, not VCC; LLVM's class-compare SDWA descriptions keep the e32 \
         form's implicit VCC def (its other VOPC SDWA descriptions do not)",
        |i, d| {
            matches!(d, Diff::LlvmDef((RegFile::Vcc, _)))
                && i.encoding() == E::VopcSdwa
                && i.words()[1] & 1 << 15 != 0
                && (name(i).starts_with("v_cmp_class_") || name(i).starts_with("v_cmpx_class_"))
        },
    ),
    (
        "v_interp_p2_f16 (gfx9 form) fetches the attribute's P20 from LDS at \
         the offset M0 holds, like every interpolation instruction; LLVM's \
         description of the gfx9 form (alone among the v_interp ones) lists no M0",
        |i, d| d == Diff::OurRead((RegFile::M0, 0)) && name(i) == "v_interp_p2_f16",
    ),
    (
        "s_set_gpr_idx_mode sets M0[15:12] and keeps the rest of M0 (AMD's \
         specification: m0 rw); LLVM's description only defines M0",
        |i, d| d == Diff::OurRead((RegFile::M0, 0)) && name(i) == "s_set_gpr_idx_mode",
    ),
];

#[test]
fn info_matches_llvm_instruction_descriptions() {
    let t0 = std::time::Instant::now();
    let exe = dumper();
    eprintln!("LLVM dumper: {} ({:?})", exe.display(), t0.elapsed());
    let mut failures: Vec<String> = Vec::new();
    let mut used = vec![0usize; EXCEPTIONS.len()];
    let mut unchecked_all = Vec::new();
    for target in [Target::Gfx908, Target::Gfx90a, Target::Gfx942] {
        // The instructions: table instances, then every operand form.
        let mut insts: Vec<(Vec<u8>, Instruction)> = Vec::new();
        let mut have = std::collections::HashSet::new();
        // Each table instance, and for VOP3 ones with VGPR sources too (the
        // v_interp_*_e64 forms take no SGPR; their src0 is the attribute).
        let decoder = Decoder::new(target);
        let table = table_instances(target).into_iter().flat_map(|i| {
            let mut v = vec![i];
            if i.encoding() == E::Vop3 {
                for (src0, src2) in [(0x101, 0x103), (8, 0)] {
                    let w = [i.words()[0] | 4, src0 | 0x102 << 9 | src2 << 18];
                    v.extend(
                        decoder
                            .decode(&words_bytes(&w))
                            .ok()
                            .filter(|j| j.is_valid()),
                    );
                }
            }
            v.into_iter()
                .map(|i| (i.words().iter().flat_map(|w| w.to_le_bytes()).collect(), i))
        });
        for (b, i) in table.chain(forms(target)) {
            if i.is_valid() && have.insert(b.clone()) {
                insts.push((b, i));
            }
        }
        let bytes: Vec<Vec<u8>> = insts.iter().map(|x| x.0.clone()).collect();
        let theirs = llvm_defuse(target, &bytes);
        let mut checked_descs = BTreeSet::new();
        let mut distinct_descs = BTreeSet::new();
        let (mut checked, mut undecoded) = (0, 0);
        let mut other_length = Vec::new();
        for ((_, i), l) in insts.iter().zip(&theirs) {
            let Some(l) = l.as_ref().filter(|l| !l.bad_class) else {
                undecoded += 1;
                continue;
            };
            if l.size != i.len() {
                // A decoder difference (the decoder oracles' business), not
                // one of def/use: not checked here.
                if other_length.len() < 4 {
                    other_length.push(format!("{} ({})", to_string(i), l.name));
                }
                undecoded += 1;
                continue;
            }
            if std::env::var("SHOW_MNEMONIC").is_ok_and(|m| m == i.mnemonic()) {
                eprintln!(
                    "{}: {}: {:?}\n    llvm: {}",
                    target.name(),
                    to_string(i),
                    info(i).used_registers(),
                    l.line
                );
            }
            checked += 1;
            checked_descs.insert(i.desc() as *const _ as usize);
            if distinct_registers(i) {
                distinct_descs.insert(i.desc() as *const _ as usize);
            }
            for d in differences(i, l) {
                match EXCEPTIONS.iter().position(|(_, f)| f(i, d)) {
                    Some(k) => used[k] += 1,
                    None => failures.push(format!(
                        "{}: {}: {d:?}\n    llvm: {}",
                        target.name(),
                        to_string(i),
                        l.line
                    )),
                }
            }
        }
        // Coverage: every entry of the tables.
        let entries = table_entries(target);
        let mut descs = BTreeSet::new();
        for (enc, op, glc, d) in &entries {
            let desc = inlay_isa::tables::desc(*d);
            let key = desc as *const _ as usize;
            if !descs.insert(key) {
                continue;
            }
            if !checked_descs.contains(&key) {
                unchecked_all.push(format!(
                    "{}: {enc:?} {op} glc={glc} {}",
                    target.name(),
                    desc.mnemonic
                ));
            } else if !distinct_descs.contains(&key) {
                unchecked_all.push(format!(
                    "{}: {enc:?} {op} glc={glc} {} (only with overlapping registers)",
                    target.name(),
                    desc.mnemonic
                ));
            }
        }
        if !other_length.is_empty() {
            eprintln!(
                "{}: LLVM decodes another length, e.g.: {other_length:?}",
                target.name()
            );
        }
        eprintln!(
            "{}: {} table entries ({} descs, {} of them also checked with registers that \
             do not overlap), {} instructions built, {checked} checked against LLVM, \
             {undecoded} not decoded by LLVM or with registers outside LLVM's operand classes",
            target.name(),
            entries.len(),
            descs.len(),
            distinct_descs.intersection(&descs).count(),
            insts.len(),
        );
    }
    for ((why, _), n) in EXCEPTIONS.iter().zip(&used) {
        eprintln!("exception, {n} differences: {why}");
    }
    eprintln!("total {:?}", t0.elapsed());
    failures.sort();
    let show = if std::env::var("SHOW_ALL").is_ok() {
        failures.len()
    } else {
        60
    };
    assert!(
        failures.is_empty(),
        "{} differences from LLVM:\n{}",
        failures.len(),
        failures[..failures.len().min(show)].join("\n")
    );
    assert!(
        unchecked_all.is_empty(),
        "{} table descs not checked:\n{}",
        unchecked_all.len(),
        unchecked_all.join("\n")
    );
    let stale: Vec<&str> = EXCEPTIONS
        .iter()
        .zip(&used)
        .filter(|(_, n)| **n == 0)
        .map(|((w, _), _)| *w)
        .collect();
    assert!(stale.is_empty(), "exceptions that match nothing: {stale:?}");
}
