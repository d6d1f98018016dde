//! Every VALU and SALU opcode of `tests/mnemonics.txt` (the gfx90a code
//! objects of Debian's librocsparse0 and our fixtures) checked against AMD's
//! own description of it: the CDNA ISA pseudo-code, read from the pinned
//! tinygrad release (see `pcode/source.rs`) and evaluated by our
//! interpreter (`pcode/eval.rs`), lane by lane, over random and special
//! inputs (±0, ±inf, quiet and signalling NaNs, denormals, extremes), every
//! encoding llvm-mc-19 accepts for the opcode (e32, e64, SDWA, DPP, VOP3P),
//! the cross product of the modifiers it accepts (neg, abs, clamp, omod,
//! op_sel, op_sel_hi, neg_lo, neg_hi; SDWA selects with sext, neg, abs,
//! clamp, omod; every DPP control with and without bound_ctrl, random row
//! and bank masks), operands in VGPRs, SGPRs, inline constants and
//! literals, random EXEC masks and MODE settings (denormal flushing, IEEE,
//! DX10 clamp).
//!
//! llvm-mc-19 encodes every case (one instruction a line); each runs as
//! one step of a wave of the virtual GPU from a random register state, and
//! every register it could touch is compared with the oracle's. Where the
//! document's text is known wrong, `pcode/ops.rs` ERRATA corrects it (each
//! with its evidence); where the document is silent, the rule used is
//! cited in `pcode/oracle.rs`. Seeded: a failure prints the instruction,
//! MODE, EXEC, the lane's inputs and both results, and reproduces.

// Lane loops index several columns with the same lane number.
#![allow(clippy::needless_range_loop)]

use crate::pcode;

use std::collections::BTreeMap;
use std::process::Command;

use std::sync::atomic::Ordering;

use inlay_vgpu::program::CodeRegion;
use inlay_vgpu::valu::FORCE_BASELINE;
use inlay_vgpu::wave::{Env, Flow, Wave};
use inlay_vgpu::{MemKind, Memory, Program};

use pcode::cases::*;
use pcode::eval::Table;
use pcode::ops::{key_of, OpInfo, Unit, ERRATA, SUPPLEMENT};
use pcode::oracle::{Expected, Loose, Oracle, State, NV};
use pcode::parse::Stmt;

const LLVM_MC: &str = "llvm-mc-19";
const SEED: u64 = 0x1a14_0000_cd4a;

fn required() -> bool {
    std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1")
}

/// Skips (or, where the oracles are required, fails) with `why`.
fn unavailable(why: &str) {
    if required() {
        panic!("{why} (INLAY_REQUIRE_ORACLES=1)");
    }
    eprintln!("note: skipping the pseudo-code oracle: {why}");
}

/// Assembles one instruction per line; for each line its bytes, or None
/// where llvm-mc-19 rejected it.
fn assemble(lines: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
    let dir = std::env::temp_dir().join(format!("inlay-pcode-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join(format!("cases{}.s", lines.len()));
    std::fs::write(&path, lines.join("\n") + "\n").map_err(|e| e.to_string())?;
    let out = Command::new(LLVM_MC)
        .args([
            "-triple=amdgcn-amd-amdhsa",
            "-mcpu=gfx90a",
            "--show-encoding",
        ])
        .arg(&path)
        .output()
        .map_err(|e| format!("{LLVM_MC}: {e}"))?;
    let _ = std::fs::remove_file(&path);
    let name = path.to_string_lossy().to_string();
    let mut bad = vec![false; lines.len()];
    for l in String::from_utf8_lossy(&out.stderr).lines() {
        let Some(rest) = l.strip_prefix(&name).and_then(|r| r.strip_prefix(':')) else {
            continue;
        };
        if !rest.contains("error:") {
            continue;
        }
        if let Some(n) = rest.split(':').next().and_then(|n| n.parse::<usize>().ok()) {
            if let Some(b) = bad.get_mut(n - 1) {
                *b = true;
            }
        }
    }
    let mut encs = Vec::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(enc) = l.split("encoding: [").nth(1) else {
            continue;
        };
        let bytes: Result<Vec<u8>, _> = enc
            .trim_end_matches(']')
            .split(',')
            .map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16))
            .collect();
        encs.push(bytes.map_err(|e| format!("{e}: {l}"))?);
    }
    let good = bad.iter().filter(|b| !**b).count();
    if good != encs.len() {
        return Err(format!(
            "{LLVM_MC}: {} encodings for {good} accepted lines",
            encs.len()
        ));
    }
    let mut it = encs.into_iter();
    Ok(bad
        .iter()
        .map(|b| if *b { None } else { it.next() })
        .collect())
}

/// Forms and modifiers llvm-mc accepts for one opcode in one encoding.
struct FormInfo {
    op: usize,
    form: Form,
    kinds: [Vec<Kind>; 3],
    allowed: Allowed,
    dpp: Vec<u32>,
}

fn base_case(op: usize, info: &OpInfo, form: Form) -> Case {
    let scalar = !matches!(info.unit, Unit::Valu | Unit::Wave);
    let n = (0..3).filter(|&k| info.src_width[k] > 0).count();
    let mut kinds = vec![if scalar { Kind::Sgpr } else { Kind::Vgpr }; n];
    // Lane selects and scalar sources of the wave-level instructions.
    if info.mnemonic == "v_writelane_b32" {
        kinds = vec![Kind::Sgpr, Kind::Sgpr];
    } else if info.mnemonic == "v_readlane_b32" {
        kinds = vec![Kind::Vgpr, Kind::Sgpr];
    }
    let mut mods = Mods::default();
    if form == Form::Sdwa {
        mods.sdwa = Some(Sdwa {
            dst_sel: 6,
            dst_unused: 0,
            sel: [6, 6],
            sext: [false; 2],
        });
    }
    if form == Form::Dpp {
        // row_newbcast: the one control every gfx90a DPP instruction takes
        // (the 64-bit ones take no other).
        mods.dpp = Some(Dpp {
            ctrl: 0x151,
            row_mask: 0xf,
            bank_mask: 0xf,
            bound_ctrl: false,
        });
    }
    if is_packed(info) {
        mods.opsel_hi = (1u8 << n) - 1;
    }
    let sdst = if scalar || info.unit == Unit::Wave {
        SDST
    } else if form == Form::E32 || form == Form::Dpp {
        VCC
    } else {
        SDST
    };
    Case {
        op,
        form,
        kinds,
        vdst: VDST,
        sdst,
        mods,
        mode: Mode::DEFAULT,
        exec: u64::MAX,
        simm: 3,
        text: String::new(),
    }
}

/// Asks llvm-mc which encodings, operand kinds and modifiers each opcode takes.
fn probe(ops: &[OpInfo]) -> Result<Vec<FormInfo>, String> {
    #[derive(Clone, Copy)]
    enum What {
        Base,
        Kind(usize, Kind),
        Neg(usize),
        Abs(usize),
        NegHi(usize),
        Opsel(usize),
        OpselHi(usize),
        Sext(usize),
        Clamp,
        Omod,
        Dpp(u32),
    }
    let mut lines = Vec::new();
    let mut what = Vec::new();
    for (i, info) in ops.iter().enumerate() {
        // VOP1/VOP2/VOPC opcodes (their text is `…_E32`) come in four
        // encodings; VOP3-only, VOP3P and scalar ones in one.
        let forms: &[Form] = match info.unit {
            Unit::Valu if info.key.ends_with("_E32") => {
                &[Form::E32, Form::E64, Form::Sdwa, Form::Dpp]
            }
            _ => &[Form::Bare],
        };
        let n = (0..3).filter(|&k| info.src_width[k] > 0).count();
        for &form in forms {
            let mut add = |w: What, f: &dyn Fn(&mut Case)| {
                let mut c = base_case(i, info, form);
                f(&mut c);
                c.render(info);
                lines.push(c.text);
                what.push((i, form, w));
            };
            add(What::Base, &|_| {});
            for k in 0..n {
                for kind in [
                    Kind::Vgpr,
                    Kind::Sgpr,
                    Kind::Int(1),
                    Kind::Float(0),
                    Kind::Literal(0x1234_5678),
                ] {
                    add(What::Kind(k, kind), &|c| c.kinds[k] = kind);
                }
                if info.unit == Unit::Valu {
                    add(What::Neg(k), &|c| c.mods.neg |= 1 << k);
                    add(What::Abs(k), &|c| c.mods.abs |= 1 << k);
                    if is_packed(info) {
                        add(What::NegHi(k), &|c| c.mods.neg_hi |= 1 << k);
                        add(What::Opsel(k), &|c| c.mods.opsel |= 1 << k);
                        add(What::OpselHi(k), &|c| c.mods.opsel_hi &= !(1 << k));
                    }
                    if form == Form::Sdwa && k < 2 {
                        add(What::Sext(k), &|c| {
                            if let Some(s) = c.mods.sdwa.as_mut() {
                                s.sext[k] = true;
                            }
                        });
                    }
                }
            }
            if info.unit == Unit::Valu {
                add(What::Clamp, &|c| c.mods.clamp = true);
                add(What::Omod, &|c| c.mods.omod = 1);
            }
            if form == Form::Dpp {
                for ctrl in DPP_KINDS {
                    add(What::Dpp(ctrl), &|c| {
                        if let Some(d) = c.mods.dpp.as_mut() {
                            d.ctrl = ctrl;
                        }
                    });
                }
            }
        }
    }
    let res = assemble(&lines)?;
    let mut infos: BTreeMap<(usize, u8), FormInfo> = BTreeMap::new();
    let form_id = |f: Form| f as u8;
    // Bases first: a form exists when its plain line assembles.
    for (k, (i, form, w)) in what.iter().enumerate() {
        if let (What::Base, Some(_)) = (w, &res[k]) {
            infos.insert(
                (*i, form_id(*form)),
                FormInfo {
                    op: *i,
                    form: *form,
                    kinds: Default::default(),
                    allowed: Allowed {
                        neg: 0,
                        abs: 0,
                        neg_hi: 0,
                        opsel: 0,
                        opsel_hi: 0,
                        clamp: false,
                        omod: false,
                        sext: 0,
                    },
                    dpp: Vec::new(),
                },
            );
        }
    }
    // A modifier counts only where it changes the encoding: llvm-mc takes
    // some it cannot encode and drops them (`|x|` on v_div_scale, whose
    // VOP3b encoding has no abs bits).
    let mut base_bytes: BTreeMap<(usize, u8), &Vec<u8>> = BTreeMap::new();
    for (k, (i, form, w)) in what.iter().enumerate() {
        if let (What::Base, Some(b)) = (w, &res[k]) {
            base_bytes.insert((*i, form_id(*form)), b);
        }
    }
    for (k, (i, form, w)) in what.iter().enumerate() {
        let Some(fi) = infos.get_mut(&(*i, form_id(*form))) else {
            continue;
        };
        let Some(bytes) = &res[k] else {
            continue;
        };
        let changes = base_bytes.get(&(*i, form_id(*form))) != Some(&bytes);
        if !changes && !matches!(w, What::Base | What::Kind(_, Kind::Vgpr) | What::Dpp(0x151)) {
            continue;
        }
        let a = &mut fi.allowed;
        match *w {
            What::Base => {}
            What::Kind(s, kind) => fi.kinds[s].push(kind),
            What::Neg(s) => a.neg |= 1 << s,
            What::Abs(s) => a.abs |= 1 << s,
            What::NegHi(s) => a.neg_hi |= 1 << s,
            What::Opsel(s) => a.opsel |= 1 << s,
            What::OpselHi(s) => a.opsel_hi |= 1 << s,
            What::Sext(s) => a.sext |= 1 << s,
            What::Clamp => a.clamp = true,
            What::Omod => a.omod = true,
            What::Dpp(c) => fi
                .dpp
                .extend(dpp_controls().into_iter().filter(|&x| dpp_kind(x) == c)),
        }
    }
    Ok(infos.into_values().collect())
}

/// The cases of one opcode in one form.
fn generate(fi: &FormInfo, info: &OpInfo, r: &mut Rng, out: &mut Vec<Case>) {
    let base = base_case(fi.op, info, fi.form);
    let n = base.kinds.len();
    // A jump's target comes from SGPRs (a constant or literal address is
    // not one real code uses, and a literal would make PC + 4 ambiguous).
    let fixed_kinds = info.writes_pc;
    let random_kinds = |r: &mut Rng, c: &mut Case| {
        if fixed_kinds {
            return;
        }
        // At most one SGPR or literal (the constant bus takes one).
        let mut scalar_used = false;
        for k in 0..n {
            if r.chance(3) || fi.kinds[k].is_empty() {
                continue;
            }
            let kind = match r.pick(&fi.kinds[k]) {
                Kind::Int(_) => Kind::Int(r.below(81) as i32 - 16),
                Kind::Float(_) => Kind::Float(r.below(9) as usize),
                Kind::Literal(_) => {
                    // Below 2^31 for 64-bit operands (see oracle.rs).
                    let x = r.next() as u32;
                    Kind::Literal(if info.src_width[k] == 64 { x >> 1 } else { x })
                }
                k => k,
            };
            let scalar = matches!(kind, Kind::Sgpr | Kind::Literal(_));
            if scalar && scalar_used {
                continue;
            }
            scalar_used |= scalar;
            c.kinds[k] = kind;
        }
    };
    let finish = |r: &mut Rng, mut c: Case, sparse: bool, out: &mut Vec<Case>| {
        c.mode = mode(r);
        c.exec = exec_mask(r, sparse);
        // Aliasing: the result in a source's register.
        if r.chance(8) && c.kinds.first() == Some(&Kind::Vgpr) && info.src_width[0] == info.d0_width
        {
            c.vdst = VSRC[0];
        }
        let names_sdst = matches!(c.form, Form::E64 | Form::Bare | Form::Sdwa);
        if (info.mask_dst || info.carry_out || info.d1) && names_sdst {
            c.sdst = if r.chance(3) { VCC } else { SDST };
        }
        if !matches!(info.unit, Unit::Valu | Unit::Wave) && r.chance(8) {
            c.sdst = SSRC[0];
        }
        c.render(info);
        out.push(c);
    };
    match fi.form {
        Form::Sdwa => {
            let a = &fi.allowed;
            let vopc = info.mask_dst;
            let dsts: Vec<(u8, u8)> = if vopc {
                vec![(6, 0)]
            } else {
                (0..7u8)
                    .flat_map(|d| (0..3u8).map(move |u| (d, u)))
                    .collect()
            };
            // Every destination select with every src0 select; src1's
            // select, sext, neg, abs, clamp and omod vary across them.
            for &(dst_sel, dst_unused) in &dsts {
                for s in 0..if vopc { 49 } else { 7u8 } {
                    let mut c = base.clone();
                    // Compares: every pair of selects.
                    let (s0, s1) = if vopc {
                        (s / 7, s % 7)
                    } else {
                        (s, if n > 1 { r.below(7) as u8 } else { 6 })
                    };
                    c.mods.sdwa = Some(Sdwa {
                        dst_sel,
                        dst_unused,
                        sel: [s0, s1],
                        sext: [
                            a.sext & 1 != 0 && r.chance(2),
                            a.sext & 2 != 0 && r.chance(2),
                        ],
                    });
                    c.mods.neg = r.next() as u8 & a.neg;
                    c.mods.abs = r.next() as u8 & a.abs;
                    c.mods.clamp = a.clamp && r.chance(4);
                    c.mods.omod = if a.omod { r.below(4) as u8 } else { 0 };
                    random_kinds(r, &mut c);
                    finish(r, c, true, out);
                }
            }
        }
        Form::Dpp => {
            let a = &fi.allowed;
            // Every control, bound_ctrl alternating.
            for (i, &ctrl) in fi.dpp.iter().enumerate() {
                {
                    let bound_ctrl = i % 2 == 1;
                    let mut c = base.clone();
                    let mask = |r: &mut Rng| if r.chance(2) { 0xf } else { r.below(16) as u8 };
                    c.mods.dpp = Some(Dpp {
                        ctrl,
                        row_mask: mask(r),
                        bank_mask: mask(r),
                        bound_ctrl,
                    });
                    c.mods.neg = r.next() as u8 & a.neg;
                    c.mods.abs = r.next() as u8 & a.abs;
                    c.mods.clamp = a.clamp && r.chance(4);
                    c.mods.omod = if a.omod { r.below(4) as u8 } else { 0 };
                    finish(r, c, false, out);
                }
            }
        }
        _ => {
            let sets = modifier_sets(&fi.allowed);
            // At least 24 cases per form, so every operand kind shows up.
            let reps = 24usize.div_ceil(sets.len());
            let sparse = sets.len() > 1024;
            for m in &sets {
                for _ in 0..reps {
                    let mut c = base.clone();
                    c.mods = Mods {
                        sdwa: None,
                        dpp: None,
                        ..*m
                    };
                    if is_packed(info) && m.opsel_hi == 0 && fi.allowed.opsel_hi == 0 {
                        c.mods.opsel_hi = base.mods.opsel_hi;
                    }
                    random_kinds(r, &mut c);
                    if matches!(info.unit, Unit::Sopk | Unit::Sopp) {
                        c.simm = if info.unit == Unit::Sopp {
                            r.below(17) as i32 - 8
                        } else {
                            r.pick(&[0, 1, -1, 0x7fff, -0x8000, 100, -100])
                                + if r.chance(2) {
                                    r.below(60000) as i32 - 30000
                                } else {
                                    0
                                }
                        };
                        c.simm = c.simm.clamp(-0x8000, 0x7fff);
                    }
                    finish(r, c, sparse, out);
                }
            }
        }
    }
}

/// A register state for case `c`: junk everywhere, inputs in the sources.
fn initial_state(info: &OpInfo, c: &Case, r: &mut Rng, pcs: &[u64]) -> State {
    let mut st = State {
        v: vec![[0; 64]; NV],
        a: vec![[0; 64]; NV],
        s: [0; 128],
        scc: r.chance(2),
    };
    for (i, reg) in st.v.iter_mut().enumerate() {
        for (l, x) in reg.iter_mut().enumerate() {
            *x = (i as u32).wrapping_mul(0x9e37_79b9) ^ (l as u32).wrapping_mul(0x85eb_ca6b);
        }
    }
    for (i, reg) in st.a.iter_mut().enumerate() {
        for (l, x) in reg.iter_mut().enumerate() {
            *x = (i as u32 + 7).wrapping_mul(0xc2b2_ae35) ^ l as u32;
        }
    }
    for (i, x) in st.s.iter_mut().enumerate() {
        *x = (i as u32).wrapping_mul(0x2545_f491) ^ 0x5a5a_0000;
    }
    let n = c.kinds.len();
    for k in 0..n {
        let w = info.src_width[k];
        let float = info.src_float[k];
        match c.kinds[k] {
            Kind::Vgpr => {
                let file = if info.mnemonic == "v_accvgpr_read_b32" {
                    &mut st.a
                } else {
                    &mut st.v
                };
                let reg = VSRC[k] as usize;
                for l in 0..64 {
                    let v = value(r, w, float);
                    file[reg][l] = v as u32;
                    if w == 64 {
                        file[reg + 1][l] = (v >> 32) as u32;
                    }
                }
            }
            Kind::Sgpr => {
                let v = if info.mnemonic == "v_writelane_b32" && k == 1
                    || info.mnemonic == "v_readlane_b32"
                {
                    {
                        let n = if r.chance(4) { 1 << 32 } else { 64 };
                        r.below(n)
                    }
                } else if info.mnemonic.starts_with("s_setpc")
                    || info.mnemonic.starts_with("s_swappc")
                {
                    // Mostly an instruction's address.
                    if r.chance(4) {
                        r.next()
                    } else {
                        pcs[r.below(pcs.len() as u64) as usize]
                    }
                } else {
                    value(r, w, float)
                };
                st.s[SSRC[k] as usize] = v as u32;
                if w == 64 {
                    st.s[SSRC[k] as usize + 1] = (v >> 32) as u32;
                }
            }
            _ => {}
        }
    }
    // Equal operands now and then (compares, div_scale's S0 == S1 tests).
    if n > 1
        && c.kinds[0] == Kind::Vgpr
        && c.kinds[1] == Kind::Vgpr
        && info.src_width[0] == info.src_width[1]
    {
        let w = (info.src_width[0] / 32) as usize;
        for l in 0..64 {
            if r.chance(6) {
                for h in 0..w {
                    st.v[VSRC[1] as usize + h][l] = st.v[VSRC[0] as usize + h][l];
                }
            }
        }
    }
    if n > 2
        && c.kinds[2] == Kind::Vgpr
        && c.kinds[0] == Kind::Vgpr
        && info.src_width[0] == info.src_width[2]
        && r.chance(3)
    {
        let w = (info.src_width[0] / 32) as usize;
        for h in 0..w {
            st.v[VSRC[0] as usize + h] = st.v[VSRC[2] as usize + h];
        }
    }
    // Old destination values (SDWA preserve, accumulators), masks, EXEC.
    for h in 0..2 {
        for l in 0..64 {
            st.v[VDST as usize + h][l] = value(r, 32, info.float_result) as u32;
        }
    }
    let vcc = r.next();
    st.s[VCC as usize] = vcc as u32;
    st.s[VCC as usize + 1] = (vcc >> 32) as u32;
    let m = r.next();
    st.s[SCARRY_IN as usize] = m as u32;
    st.s[SCARRY_IN as usize + 1] = (m >> 32) as u32;
    st.s[126] = c.exec as u32;
    st.s[127] = (c.exec >> 32) as u32;
    st
}

fn load_state(w: &mut Wave, st: &State, mode: Mode) {
    for i in 0..NV {
        w.v[i] = st.v[i];
        w.a[i] = st.a[i];
    }
    w.s[..128].copy_from_slice(&st.s);
    w.scc = st.scc;
    w.hwreg[1] = mode.bits();
}

fn read_state(w: &Wave) -> State {
    let mut s = [0u32; 128];
    s.copy_from_slice(&w.s[..128]);
    State {
        v: w.v[..NV].to_vec(),
        a: w.a[..NV].to_vec(),
        s,
        scc: w.scc,
    }
}

/// Differences between the wave's state and the oracle's, as text.
fn differences(got: &State, ex: &Expected) -> Vec<String> {
    let want = &ex.state;
    let mut out = Vec::new();
    // Whether a loose result allows what the wave holds in lane `l` of `r`.
    let allows = |x: &Loose, r: usize, l: usize| {
        let (Loose::Nan { reg, lane, width }
        | Loose::Any { reg, lane, width }
        | Loose::Zero { reg, lane, width }) = *x;
        let base = reg as usize;
        if lane != l || !(base == r || width == 64 && base + 1 == r) {
            return false;
        }
        let bits = if width == 64 {
            got.v[base][l] as u64 | (got.v[base + 1][l] as u64) << 32
        } else {
            got.v[base][l] as u64
        };
        match x {
            Loose::Any { .. } => true,
            Loose::Nan { .. } if width == 64 => f64::from_bits(bits).is_nan(),
            Loose::Nan { .. } => f32::from_bits(bits as u32).is_nan(),
            Loose::Zero { .. } if width == 64 => bits << 1 == 0,
            Loose::Zero { .. } => (bits as u32) << 1 == 0,
        }
    };
    for r in 0..NV {
        for l in 0..64 {
            if got.v[r][l] == want.v[r][l] || ex.loose.iter().any(|x| allows(x, r, l)) {
                continue;
            }
            out.push(format!(
                "v{r} lane {l}: got {:#010x}, want {:#010x}",
                got.v[r][l], want.v[r][l]
            ));
        }
    }
    for r in 0..NV {
        for l in 0..64 {
            if got.a[r][l] != want.a[r][l] {
                out.push(format!(
                    "a{r} lane {l}: got {:#010x}, want {:#010x}",
                    got.a[r][l], want.a[r][l]
                ));
            }
        }
    }
    for i in 0..128 {
        if got.s[i] != want.s[i] {
            out.push(format!(
                "s{i}: got {:#010x}, want {:#010x}",
                got.s[i], want.s[i]
            ));
        }
    }
    if got.scc != want.scc {
        out.push(format!("scc: got {}, want {}", got.scc, want.scc));
    }
    out
}

/// The inputs of lane `l` as text (for failure reports).
fn inputs(info: &OpInfo, c: &Case, st: &State, l: usize) -> String {
    let mut s = Vec::new();
    for k in 0..c.kinds.len() {
        let w = info.src_width[k];
        let v = match c.kinds[k] {
            Kind::Vgpr => {
                let f = if info.mnemonic == "v_accvgpr_read_b32" {
                    &st.a
                } else {
                    &st.v
                };
                let r = VSRC[k] as usize;
                if w == 64 {
                    format!("{:#018x}", f[r][l] as u64 | (f[r + 1][l] as u64) << 32)
                } else {
                    format!("{:#010x}", f[r][l])
                }
            }
            Kind::Sgpr => {
                if w == 64 {
                    format!("{:#018x}", st.sreg64(SSRC[k]))
                } else {
                    format!("{:#010x}", st.s[SSRC[k] as usize])
                }
            }
            k => format!("{k:?}"),
        };
        s.push(format!("S{k}={v}"));
    }
    s.push(format!("vdst={:#010x}", st.v[c.vdst as usize][l]));
    s.push(format!(
        "vcc={:#x} mask_in={:#x} scc={}",
        st.sreg64(VCC),
        st.sreg64(SCARRY_IN),
        st.scc
    ));
    s.join(" ")
}

#[test]
fn every_alu_opcode_against_the_isa_pseudo_code() {
    let texts = match pcode::source::texts() {
        Ok(t) => t,
        Err(e) => return unavailable(&e),
    };
    if Command::new(LLVM_MC).arg("--version").output().is_err() {
        return unavailable(&format!("{LLVM_MC} not found"));
    }
    // The errata's originals must be in the pinned text.
    let mut text = texts.text.clone();
    let mut kind = texts.kind.clone();
    for e in &ERRATA {
        let t = text
            .get_mut(e.op)
            .unwrap_or_else(|| panic!("erratum for unknown {}", e.op));
        assert!(
            t.contains(e.from),
            "erratum text {:?} not in {}",
            e.from,
            e.op
        );
        *t = t.replace(e.from, e.to);
    }
    for (name, t) in SUPPLEMENT {
        assert!(
            !text.contains_key(name),
            "{name} is in the table now: drop the supplement"
        );
        text.insert(name.to_string(), t.to_string());
        kind.insert(name.to_string(), "VOP3Op".to_string());
    }
    let table: Table = pcode::source::table(&text);

    // The opcodes: every VALU/SALU mnemonic of the list with a text.
    let list = include_str!("../mnemonics.txt");
    let mut ops = Vec::new();
    let mut skipped = Vec::new();
    for line in list.lines() {
        let Some(m) = line.split_whitespace().next() else {
            continue;
        };
        if line.starts_with(' ')
            || line.starts_with('#')
            || !(m.starts_with("v_") || m.starts_with("s_"))
        {
            continue;
        }
        // Memory, and what has no effect on registers to check.
        if m.starts_with("s_load") || m.starts_with("s_atomic") || m.starts_with("v_mfma") {
            skipped.push(m.to_string());
            continue;
        }
        // s_trap hands the wave to a trap handler: nothing in registers.
        if matches!(
            m,
            "s_waitcnt" | "s_sleep" | "s_barrier" | "s_endpgm" | "s_trap"
        ) {
            skipped.push(m.to_string());
            continue;
        }
        // INLAY_PCODE_OPS=v_add_f32,s_bfe_i64 narrows a run (for debugging).
        if let Ok(only) = std::env::var("INLAY_PCODE_OPS") {
            if !only.split(',').any(|o| o == m) {
                continue;
            }
        }
        let Some(key) = key_of(&text, m) else {
            panic!("{m}: no pseudo-code (add it to SUPPLEMENT with its source)");
        };
        assert!(
            table.ops.contains_key(&key),
            "{key}: the pseudo-code does not parse"
        );
        ops.push(OpInfo::new(m, &key, &kind[&key], &text[&key]));
    }
    eprintln!("{} opcodes; not ALU: {}", ops.len(), skipped.join(" "));

    let t0 = std::time::Instant::now();
    let forms = probe(&ops).expect("probe");
    eprintln!("probe: {:.1?}", t0.elapsed());
    // INLAY_PCODE_SEED explores other inputs (CI runs the fixed one).
    let seed = std::env::var("INLAY_PCODE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SEED);
    let mut r = Rng(seed);
    let mut cases = Vec::new();
    for fi in &forms {
        generate(fi, &ops[fi.op], &mut r, &mut cases);
    }
    // Lines llvm-mc refuses (operand combinations the encoding cannot
    // hold) are replaced by their all-VGPR variant.
    let lines: Vec<String> = cases.iter().map(|c| c.text.clone()).collect();
    let mut encs = assemble(&lines).expect("assemble");
    eprintln!("assemble: {:.1?}", t0.elapsed());
    let redo: Vec<usize> = (0..cases.len()).filter(|&n| encs[n].is_none()).collect();
    for &n in &redo {
        let c = &mut cases[n];
        let info = &ops[c.op];
        let b = base_case(c.op, info, c.form);
        c.kinds = b.kinds;
        c.vdst = VDST;
        c.render(info);
    }
    let again: Vec<String> = redo.iter().map(|&n| cases[n].text.clone()).collect();
    for (&n, e) in redo.iter().zip(assemble(&again).expect("assemble")) {
        encs[n] = e;
    }
    let rejected: Vec<&String> = redo
        .iter()
        .filter(|&&n| encs[n].is_none())
        .map(|&n| &cases[n].text)
        .collect();
    assert!(
        rejected.is_empty(),
        "llvm-mc refused {} cases, e.g. {:?}",
        rejected.len(),
        &rejected[..rejected.len().min(5)]
    );
    let bytes: Vec<u8> = encs.iter().flatten().flatten().copied().collect();

    // The cases as one code object's text in device memory.
    let mem = Memory::new();
    let base = mem
        .alloc(bytes.len() as u64 + 64, 256, MemKind::Device, 0)
        .expect("alloc");
    mem.write_bytes(base, &bytes).expect("write");
    let region = CodeRegion {
        load_base: base,
        text_vaddr: 0,
        text_size: bytes.len() as u64,
        code_object_version: 5,
        kernels: Vec::new(),
    };
    let program = Program::from_memory(&mem, &[region]).expect("predecode");
    assert_eq!(program.insts.len(), cases.len(), "one instruction per case");
    let pcs: Vec<u64> = program.insts.iter().map(|i| i.addr).collect();

    let oracle = Oracle { table: &table };
    let bodies: Vec<&Vec<Stmt>> = ops.iter().map(|o| &table.ops[&o.key]).collect();
    let mut wave = Wave::new(0);
    let mut lds: Vec<u8> = Vec::new();
    let gws = inlay_vgpu::gws::Gws::default();
    let mut failures: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    let examples: usize = std::env::var("INLAY_PCODE_EXAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let start = std::time::Instant::now();
    // Every case on the build the CPU runs (AVX2 where it has it), then
    // every fourth again on the baseline build.
    for baseline in [false, true] {
        FORCE_BASELINE.store(baseline, Ordering::Relaxed);
        for (n, c) in cases.iter().enumerate() {
            if baseline && n % 4 != 0 {
                continue;
            }
            let info = &ops[c.op];
            // Each case's inputs from its own generator: the same in both passes.
            let mut r = Rng(seed ^ (n as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let init = initial_state(info, c, &mut r, &pcs);
            let inst = &program.insts[n];
            let ex = oracle
                .expect(info, bodies[c.op], c, &init, inst.addr)
                .unwrap_or_else(|e| panic!("oracle on `{}`: {e}", c.text));
            load_state(&mut wave, &init, c.mode);
            let mut env = Env {
                program: &program,
                mem: &mem,
                lds: lds.as_mut_slice(),
                cache: Default::default(),
                interrupt: None,
                gws: &gws,
            };
            let flow = wave.step(inst, &mut env);
            let got = read_state(&wave);
            let mut diffs = Vec::new();
            match flow {
                Err(e) if !matches!(e.kind, inlay_vgpu::FaultKind::BadJump { .. }) => {
                    diffs.push(format!("fault: {}", e.kind));
                }
                _ => {
                    diffs = differences(&got, &ex);
                    let next = match flow {
                        Ok(Flow::Jump(t)) => pcs[t as usize],
                        Err(e) => e.addr.unwrap_or(0),
                        _ => inst.addr + inst.len as u64,
                    };
                    let want = ex.next_pc.unwrap_or(inst.addr + inst.len as u64);
                    if next != want && !matches!(info.unit, Unit::Valu | Unit::Wave) {
                        diffs.push(format!("next pc: got {next:#x}, want {want:#x}"));
                    }
                }
            }
            if diffs.is_empty() {
                continue;
            }
            let lane = diffs
                .iter()
                .find_map(|d| {
                    d.split("lane ")
                        .nth(1)?
                        .split(':')
                        .next()?
                        .parse::<usize>()
                        .ok()
                })
                .unwrap_or(0);
            let what = format!(
                "{}{}{}{}",
                info.mnemonic,
                c.form.suffix(),
                if diffs[0].starts_with("fault") {
                    " (fault)"
                } else {
                    ""
                },
                if baseline { " (baseline build)" } else { "" }
            );
            let entry = failures.entry(what).or_default();
            entry.0 += 1;
            if entry.1.len() < examples {
                entry.1.push(format!(
                    "  `{}`  MODE {:?} EXEC {:#x}\n    lane {lane} inputs: {}\n    {}",
                    c.text,
                    c.mode,
                    c.exec,
                    inputs(info, c, &init, lane),
                    diffs[..diffs.len().min(4)].join("\n    ")
                ));
            }
        }
    }
    FORCE_BASELINE.store(false, Ordering::Relaxed);
    eprintln!(
        "{} cases ({} forms) in {:.1?}",
        cases.len(),
        forms.len(),
        start.elapsed()
    );
    if !failures.is_empty() {
        let mut report = String::new();
        let total: usize = failures.values().map(|f| f.0).sum();
        for (m, (count, examples)) in &failures {
            report += &format!("{m}: {count} cases differ\n{}\n", examples.join("\n"));
        }
        panic!("{total} cases differ from the ISA pseudo-code:\n{report}");
    }
}
