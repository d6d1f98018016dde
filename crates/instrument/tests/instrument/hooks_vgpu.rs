//! Calls to compiled hooks (fixtures/src/hooks_test.hip) on the virtual GPU.
//!
//! The transparency property: over every gfx90a fixture kernel, rounds of
//! calls at random points (before or after random instructions, at the
//! entry, at the exits) to random hooks of the test module with random
//! arguments (live registers, launch values, constants, addresses, a
//! register by reference) leave every buffer the kernel writes
//! bit-identical, and what each hook records — the value it was passed,
//! EXEC, its work-item and workgroup ids, gridDim and blockDim — equals what
//! the virtual GPU had at that point in an uninstrumented run (its probe),
//! call by call, wave by wave. After the random rounds, each kernel gets
//! one dense round (calls before every instruction, before every memory
//! instruction, before or before and after every instruction of a block),
//! where registers run out and calls sit next to calls. Seeded (`INLAY_HOOK_SEED`), sized by
//! `INLAY_HOOK_ROUNDS` (rounds per kernel).

use crate::harness;

use std::collections::BTreeMap;
use std::sync::Mutex;

use harness::calls::{device, hook_module, instrument};
use harness::{fixture, kernels, launch};
use inlay_codeobj::CodeObject;
use inlay_instrument::hooks::{Arg, HookCall, LaunchValue, Placement, Point};
use inlay_instrument::lift::{Flow, Program};
use inlay_instrument::rewrite::{has_address, inline_refusal, Plan};
use inlay_instrument::{analyse, emit, Analysis};
use inlay_isa::{Encoding, Instruction, RegFile, Register};
use inlay_vgpu::{Probe, ProbeHit};

/// One record of the test module's trace (see `struct Record` there).
#[derive(Debug, Clone)]
struct Record {
    id: u32,
    kind: u32,
    point_exec: u64,
    hook_exec: u64,
    block: [u32; 3],
    grid: [u32; 3],
    size: [u32; 3],
    value: [u64; 64],
    tid: [u32; 64],
}

const RECORD: usize = 64 + 64 * 8 + 64 * 4;

fn records(bytes: &[u8], n: usize) -> Vec<Record> {
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    bytes
        .chunks_exact(RECORD)
        .take(n)
        .map(|r| Record {
            id: u32_at(r, 0),
            kind: u32_at(r, 4),
            point_exec: u64_at(r, 8),
            hook_exec: u64_at(r, 16),
            block: std::array::from_fn(|k| u32_at(r, 24 + 4 * k)),
            grid: std::array::from_fn(|k| u32_at(r, 36 + 4 * k)),
            size: std::array::from_fn(|k| u32_at(r, 48 + 4 * k)),
            value: std::array::from_fn(|l| u64_at(r, 64 + 8 * l)),
            tid: std::array::from_fn(|l| u32_at(r, 64 + 512 + 4 * l)),
        })
        .collect()
}

#[test]
fn a_hook_at_the_entry_sees_its_wave() {
    let bytes = fixture(5, "vector_add");
    let co = CodeObject::parse(&bytes).unwrap();
    let md = co.metadata.as_ref().unwrap().kernels[0].clone();
    let name = md.name.clone();
    let (mem, dev) = device();
    let original = dev.load(&bytes).unwrap();
    let an = analyse(&co, &name).unwrap();
    let module = hook_module();
    let plan = Plan {
        calls: vec![HookCall {
            point: Point::Entry,
            module: 0,
            hook: "obs_value".into(),
            args: vec![
                Arg::Const32(7),
                Arg::Value(Register::new(RegFile::Exec, 0, 2)),
                Arg::Launch(LaunchValue::WorkitemId(0)),
            ],
            once_per_wave: false,
            placement: Default::default(),
        }],
        modules: vec![module],
        ..Plan::default()
    };
    let loaded =
        instrument(&mem, &co, &name, &an, &original, &plan).unwrap_or_else(|e| panic!("{e}"));
    let l = launch(&dev, &md, 7);
    dev.dispatch(
        &loaded.program,
        &emit::instrumented_name(&name),
        l.grid,
        l.wg,
        &l.args,
    )
    .unwrap_or_else(|f| panic!("{f}"));
    let cursor = dev
        .download_u32(loaded.variable("inlay_cursor"), 1)
        .unwrap()[0] as usize;
    let mut raw = vec![0u8; cursor * RECORD];
    dev.read(loaded.variable("inlay_trace"), &mut raw).unwrap();
    let recs = records(&raw, cursor);
    let waves = harness::waves_of(&(l.grid, l.wg)) as usize;
    assert_eq!(recs.len(), waves, "one record per wave");
    for r in &recs {
        assert_eq!((r.id, r.kind), (7, 1));
        assert_eq!(r.point_exec, r.hook_exec);
        assert_eq!(r.grid, [l.grid[0] / l.wg[0], 1, 1]);
        assert_eq!(r.size, l.wg);
        for lane in 0..64 {
            if r.hook_exec >> lane & 1 == 1 {
                assert_eq!(r.value[lane], u64::from(r.tid[lane] & 0x3ff), "lane {lane}");
            }
        }
    }
}

/// xorshift64*: the rounds are reproducible from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> Option<T> {
        (!v.is_empty()).then(|| v[self.below(v.len())])
    }
}

/// What a chosen call passes as its value, and so what the GPU must have had.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Reg(Register),
    Ref(Register),
    Launch(LaunchValue),
    Const(u32),
    Address,
}

/// Which hook, which value, where.
#[derive(Debug, Clone)]
struct Chosen {
    id: u32,
    point: Point,
    hook: &'static str,
    kind: u32,
    value: Value,
    once: bool,
}

/// Where the probe looks for a call's point: (address offset in the code
/// object, after the instruction) pairs.
fn probe_sites(prog: &Program, point: Point) -> Vec<(u64, bool)> {
    let entry = prog.inst_at(0, prog.functions[0].entry).unwrap();
    match point {
        Point::Before(i) => vec![(prog.insts[i].addr, false)],
        Point::After(i) => vec![(prog.insts[i].addr, true)],
        Point::Entry => vec![(prog.insts[entry].addr, false)],
        Point::Exits => prog
            .wave_ends()
            .into_iter()
            .filter(|&i| prog.blocks[prog.insts[i].block].function == 0)
            .map(|i| (prog.insts[i].addr, false))
            .collect(),
    }
}

/// SGPRs whose values are code addresses (the instrumented code's differ).
fn code_address_sgprs(prog: &Program) -> Vec<u16> {
    let mut out = vec![30, 31];
    for i in &prog.insts {
        if matches!(i.inst.mnemonic(), "s_getpc_b64" | "s_swappc_b64") {
            if let Some(inlay_isa::Operand::Sgpr { first, .. }) = i.inst.operand(0) {
                out.extend([first, first + 1]);
            }
        }
    }
    out
}

/// Whether a call may go after instruction `i` (it falls through to one).
fn falls_through(prog: &Program, i: usize) -> bool {
    let ins = &prog.insts[i];
    inlay_instrument::lift::flow(&ins.inst, ins.addr) == Flow::Next
        && prog
            .inst_at(
                prog.blocks[ins.block].function,
                ins.addr + ins.inst.len() as u64,
            )
            .is_some()
}

/// Chooses a call: a point, a hook and a value it can be checked against.
fn choose(rng: &mut Rng, an: &Analysis, id: u32, explicit_args: u32, avoid_s: &[u16]) -> Chosen {
    let prog = &an.program;
    let n = prog.insts.len();
    let point = match rng.below(10) {
        0 | 1 => Point::Entry,
        2 => Point::Exits,
        3..=5 => {
            let i = rng.below(n);
            if falls_through(prog, i) {
                Point::After(i)
            } else {
                Point::Before(i)
            }
        }
        _ => Point::Before(rng.below(n)),
    };
    choose_at(rng, an, id, explicit_args, avoid_s, point, false)
}

/// Dense plans, the kind that find what a few calls at a time do not
/// (registers running out, calls next to calls): a call before every
/// instruction, before every memory instruction (passing its address),
/// before every instruction of one block, or before and after each
/// instruction of one block. Hooks and values as [`choose`] draws them.
fn choose_dense(
    rng: &mut Rng,
    an: &Analysis,
    first_id: u32,
    explicit_args: u32,
    avoid_s: &[u16],
) -> (&'static str, Vec<Chosen>) {
    let prog = &an.program;
    let all: Vec<usize> = (0..prog.insts.len()).collect();
    let block = |rng: &mut Rng| prog.blocks[rng.below(prog.blocks.len())].insts.clone();
    let (what, points): (&str, Vec<Point>) = match rng.below(4) {
        0 => (
            "a call before every instruction",
            all.into_iter().map(Point::Before).collect(),
        ),
        1 => (
            "a call before every memory instruction",
            all.into_iter()
                .filter(|&i| has_address(&prog.insts[i].inst))
                .map(Point::Before)
                .collect(),
        ),
        2 => (
            "a call before every instruction of a block",
            block(rng).map(Point::Before).collect(),
        ),
        _ => (
            "calls before and after every instruction of a block",
            block(rng)
                .flat_map(|i| {
                    let after = falls_through(prog, i).then_some(Point::After(i));
                    std::iter::once(Point::Before(i)).chain(after)
                })
                .collect(),
        ),
    };
    let chosen = points
        .into_iter()
        .enumerate()
        .map(|(k, p)| {
            let address = matches!(p, Point::Before(i) if has_address(&prog.insts[i].inst));
            choose_at(
                rng,
                an,
                first_id + k as u32,
                explicit_args,
                avoid_s,
                p,
                address,
            )
        })
        .collect();
    (what, chosen)
}

/// Chooses the hook and value of a call at `point` (the address, through
/// `obs_value64`, when `address`).
fn choose_at(
    rng: &mut Rng,
    an: &Analysis,
    id: u32,
    explicit_args: u32,
    avoid_s: &[u16],
    point: Point,
    address: bool,
) -> Chosen {
    let prog = &an.program;
    let entry = prog.inst_at(0, prog.functions[0].entry).unwrap();
    // Liveness where the hook runs: a register value is only guaranteed
    // where it is live (dead ones are the engine's to use).
    let (at, live) = match point {
        Point::Before(i) => (i, an.live_before(i)),
        Point::After(i) => {
            let ins = &prog.insts[i];
            let next = prog
                .inst_at(
                    prog.blocks[ins.block].function,
                    ins.addr + ins.inst.len() as u64,
                )
                .unwrap();
            (i, an.live_before(next))
        }
        Point::Entry => (entry, an.live_before(entry)),
        // Nothing is live at an s_endpgm: launch values and constants only.
        Point::Exits => (entry, inlay_instrument::Live::default()),
    };
    // SCC between the s_add_u32 and s_addc_u32 of a code address is the
    // carry of the low half, which the instrumented code's own addresses
    // change (as they change the pair: see code_address_sgprs).
    let sdst = |i: usize| match prog.insts[i].inst.operand(0) {
        Some(inlay_isa::Operand::Sgpr { first, .. }) => Some(first),
        _ => None,
    };
    let code_carry = match point {
        Point::After(i) => {
            prog.insts[i].inst.mnemonic() == "s_add_u32"
                && sdst(i).is_some_and(|d| avoid_s.contains(&d))
        }
        Point::Before(i) => {
            prog.insts[i].inst.mnemonic() == "s_addc_u32"
                && sdst(i).is_some_and(|d| avoid_s.contains(&d))
        }
        _ => false,
    };
    let res = &an.resources;
    let live_s: Vec<u16> = (0..res.sgprs_usable as u16)
        .filter(|&s| live.active.has_sgpr(s) && !avoid_s.contains(&s))
        .collect();
    let live_v: Vec<u16> = (0..res.vgprs_allocated as u16)
        .filter(|&v| live.active.has_vgpr(v))
        .collect();
    let live_a: Vec<u16> = (0..res.agprs_allocated as u16)
        .filter(|&v| live.active.has_agpr(v))
        .collect();
    let has_addr =
        matches!(point, Point::Before(_) | Point::After(_)) && has_address(&prog.insts[at].inst);
    let launch = |rng: &mut Rng| {
        let d = rng.below(3) as u8;
        match rng.below(5) {
            0 => LaunchValue::GridSize(d),
            1 => LaunchValue::WorkgroupSize(d),
            2 => LaunchValue::WorkgroupId(d),
            3 => LaunchValue::WorkitemId(d),
            _ if explicit_args >= 4 => {
                LaunchValue::KernargDword(4 * rng.below(explicit_args as usize / 4) as u32)
            }
            _ => LaunchValue::WorkgroupId(d),
        }
    };
    let reg32 = |rng: &mut Rng| -> Option<Register> {
        match rng.below(4) {
            0 => rng
                .pick(&live_s)
                .map(|s| Register::new(RegFile::Sgpr, s, 1)),
            1 => rng
                .pick(&live_a)
                .map(|a| Register::new(RegFile::Agpr, a, 1)),
            _ => rng
                .pick(&live_v)
                .map(|v| Register::new(RegFile::Vgpr, v, 1)),
        }
    };
    let value32 = |rng: &mut Rng| -> Value {
        match rng.below(6) {
            0 => Value::Launch(launch(rng)),
            1 => Value::Const(rng.next() as u32),
            2 if live.active.contains(inlay_instrument::regs::SCC) && !code_carry => {
                Value::Reg(Register::new(RegFile::Scc, 0, 1))
            }
            3 if live.active.contains(inlay_instrument::regs::M0) => {
                Value::Reg(Register::new(RegFile::M0, 0, 1))
            }
            _ => reg32(rng).map_or(Value::Launch(launch(rng)), Value::Reg),
        }
    };
    let (hook, kind, value, once) = match rng.below(6) {
        _ if address => ("obs_value64", 2, Value::Address, false),
        0 => ("obs_value", 1, value32(rng), false),
        1 => {
            // 64-bit values: pairs, EXEC, VCC, addresses.
            let pairs_s: Vec<u16> = live_s
                .iter()
                .copied()
                .filter(|s| s % 2 == 0 && live_s.contains(&(s + 1)))
                .collect();
            let pairs_v: Vec<u16> = live_v
                .iter()
                .copied()
                .filter(|v| live_v.contains(&(v + 1)))
                .collect();
            let v = match rng.below(5) {
                0 if has_addr => Value::Address,
                1 => Value::Reg(Register::new(RegFile::Exec, 0, 2)),
                2 if live.active.any_in(inlay_instrument::regs::VCC, 2) => {
                    Value::Reg(Register::new(RegFile::Vcc, 0, 2))
                }
                3 => rng.pick(&pairs_s).map_or(Value::Address, |s| {
                    Value::Reg(Register::new(RegFile::Sgpr, s, 2))
                }),
                _ => rng.pick(&pairs_v).map_or(Value::Address, |v| {
                    Value::Reg(Register::new(RegFile::Vgpr, v, 2))
                }),
            };
            let v = if v == Value::Address && !has_addr {
                Value::Reg(Register::new(RegFile::Exec, 0, 2))
            } else {
                v
            };
            ("obs_value64", 2, v, false)
        }
        2 => ("obs_once", 3, value32(rng), true),
        3 => {
            let r = match rng.below(3) {
                0 => rng
                    .pick(&live_s)
                    .map(|s| Register::new(RegFile::Sgpr, s, 1)),
                _ => rng
                    .pick(&live_v)
                    .map(|v| Register::new(RegFile::Vgpr, v, 1)),
            };
            match r {
                Some(r) => ("obs_ref", 4, Value::Ref(r), false),
                None => ("obs_value", 1, value32(rng), false),
            }
        }
        _ => ("obs_heavy", 5, value32(rng), false),
    };
    Chosen {
        id,
        point,
        hook,
        kind,
        value,
        once,
    }
}

fn arg_of(v: Value) -> Arg {
    match v {
        Value::Reg(r) => Arg::Value(r),
        Value::Ref(r) => Arg::Reference(r),
        Value::Launch(l) => Arg::Launch(l),
        Value::Const(c) => Arg::Const32(c),
        Value::Address => Arg::Address,
    }
}

/// What the hook test module's `obs_heavy` records for `value` (called with `id`).
fn heavy_reference(id: u32, value: u32) -> u64 {
    let mut buf = [0u32; 24];
    for (i, b) in buf.iter_mut().enumerate() {
        *b = value.wrapping_mul(2 * i as u32 + 1) ^ (value >> (i % 16));
    }
    let mut h = value;
    for i in 0..20 + (value & 7) {
        let k = (h.wrapping_add(i.wrapping_mul(7)) % 24) as usize;
        h = (h ^ buf[k]).wrapping_mul(0x9e37_79b1).wrapping_add(h >> 13);
        buf[(k + 5) % 24] = h;
    }
    let mut r: [u32; 48] =
        std::array::from_fn(|i| value.wrapping_mul(i as u32 * 2 + 1).wrapping_add(i as u32));
    for _ in 0..3 {
        for i in 0..48 {
            let a = r[(i + 1) % 48];
            r[i] ^= a.rotate_left(5).wrapping_add(r[(i + 7) % 48]);
        }
    }
    let x = r.iter().enumerate().fold(0u32, |acc, (i, &v)| {
        acc.wrapping_add(v.wrapping_mul(i as u32 + 3))
    });
    if value & 1 == 1 {
        h = h.wrapping_mul(3).wrapping_add(x);
    } else {
        h ^= x;
    }
    let _ = id; // M0 comes back as written: the low half is m - us = 0
    u64::from(h) << 32
}

/// One observation of the probe: a wave at a call's point.
#[derive(Debug, Clone)]
struct Seen {
    exec: u64,
    workgroup: [u32; 3],
    wave: u32,
    /// Per lane, the value the call must be passed there.
    values: [u64; 64],
}

/// Observations or records by (call id, workgroup, wave), in the wave's order.
type ByWave<T> = BTreeMap<(u32, [u32; 3], u32), Vec<T>>;

/// The value of `v` in `lane` of `w` (a probe hit), or None when the probe
/// cannot know it (launch values come from the launch).
fn oracle(v: Value, hit: &ProbeHit<'_>, lane: usize, inst: &Instruction) -> u64 {
    let w = hit.state;
    let reg = |r: &Register| -> u64 {
        let get = |k: u16| -> u64 {
            let n = r.first + k;
            u64::from(match r.file {
                RegFile::Sgpr => w.s[n as usize],
                RegFile::Vgpr => w.v[n as usize][lane],
                RegFile::Agpr => w.a[n as usize][lane],
                RegFile::Vcc => w.s[106 + n as usize],
                RegFile::Exec => w.s[126 + n as usize],
                RegFile::M0 => w.s[124],
                RegFile::Scc => u32::from(w.scc),
                _ => 0,
            })
        };
        (0..u16::from(r.count)).fold(0, |acc, k| acc | get(k) << (32 * k))
    };
    match v {
        Value::Reg(r) | Value::Ref(r) => reg(&r),
        Value::Address => {
            let w0 = inst.words()[0];
            let w1 = inst.words()[1];
            let vaddr = (w1 & 0xff) as usize;
            let saddr = (w1 >> 16 & 0x7f) as usize;
            let st = hit.state;
            let (base, off) = match inst.encoding() {
                Encoding::Flat => (
                    u64::from(st.v[vaddr][lane]) | u64::from(st.v[vaddr + 1][lane]) << 32,
                    i64::from(w0 & 0xfff),
                ),
                _ => {
                    let off = i64::from(((w0 & 0x1fff) << 19) as i32 >> 19);
                    if saddr == 0x7f {
                        (
                            u64::from(st.v[vaddr][lane]) | u64::from(st.v[vaddr + 1][lane]) << 32,
                            off,
                        )
                    } else {
                        (st.sreg64(saddr) + u64::from(st.v[vaddr][lane]), off)
                    }
                }
            };
            base.wrapping_add(off as u64)
        }
        Value::Const(c) => u64::from(c),
        Value::Launch(_) => 0, // checked from the launch itself
    }
}

/// Calls inlined per mode (engine's choice, forced, calls), calls
/// requested, and forced rounds refused for want of registers.
#[derive(Default)]
struct Placed {
    inlined: [usize; 3],
    calls: [usize; 3],
    refused: usize,
    /// Forced rounds with every SGPR borrowed, and the calls they inlined.
    borrowing: [usize; 2],
}

fn check_kernel(
    file: &str,
    name: &str,
    rng: &mut Rng,
    rounds: usize,
    module: &inlay_instrument::hooks::HookModule,
    stats: &mut Placed,
) -> (usize, usize) {
    let bytes = fixture(5, file);
    let co = CodeObject::parse(&bytes).unwrap();
    let md = co
        .metadata
        .as_ref()
        .and_then(|m| m.kernels.iter().find(|k| k.name == name))
        .unwrap()
        .clone();
    let an = analyse(&co, name).unwrap();
    let prog = &an.program;
    let explicit = md
        .args
        .iter()
        .filter(|a| !a.value_kind.starts_with("hidden_"))
        .map(|a| (a.offset + a.size) as u32)
        .max()
        .unwrap_or(0)
        & !3;
    let avoid_s = code_address_sgprs(prog);
    let (mut checked, mut calls_checked) = (0, 0);
    // The random rounds, then one dense round (sometimes saving every
    // clobberable register, the baseline the engine is measured against).
    for round in 0..=rounds {
        let (what, chosen, save_all) = if round < rounds {
            let chosen: Vec<Chosen> = (0..4)
                .map(|k| choose(rng, &an, 100 * round as u32 + k + 1, explicit, &avoid_s))
                .collect();
            (format!("{file} {name} round {round}"), chosen, false)
        } else {
            let (kind, chosen) = choose_dense(rng, &an, 1 << 20, explicit, &avoid_s);
            let save_all = rng.below(4) == 0;
            let what = format!(
                "{file} {name} dense round: {kind}{}",
                if save_all {
                    ", saving everything clobberable"
                } else {
                    ""
                }
            );
            (what, chosen, save_all)
        };
        let (mem, dev) = device();
        let original = dev.load(&bytes).unwrap();
        let image = original.image.unwrap();
        // The original, observed at every chosen point.
        let mut before = Vec::new();
        let mut after = Vec::new();
        for c in &chosen {
            for (addr, is_after) in probe_sites(prog, c.point) {
                if is_after { &mut after } else { &mut before }.push(image + addr);
            }
        }
        let by_site: Vec<(u64, bool, Chosen, usize)> = chosen
            .iter()
            .flat_map(|c| {
                probe_sites(prog, c.point)
                    .into_iter()
                    .map(move |(a, after)| {
                        let inst = prog.insts.iter().position(|i| i.addr == a).unwrap();
                        (image + a, after, c.clone(), inst)
                    })
            })
            .collect();
        let seen: Mutex<ByWave<Seen>> = Mutex::new(BTreeMap::new());
        let insts: Vec<Instruction> = prog.insts.iter().map(|i| i.inst).collect();
        let probe = Probe {
            before,
            after,
            see: Box::new(|hit: &ProbeHit<'_>| {
                for (addr, after, c, inst) in &by_site {
                    if *addr != hit.addr || *after != hit.after {
                        continue;
                    }
                    let exec = hit.state.exec();
                    let values = std::array::from_fn(|l| oracle(c.value, hit, l, &insts[*inst]));
                    let mut s = seen.lock().unwrap();
                    s.entry((c.id, hit.workgroup, hit.wave))
                        .or_default()
                        .push(Seen {
                            exec,
                            workgroup: hit.workgroup,
                            wave: hit.wave,
                            values,
                        });
                }
            }),
        };
        // One launch for both runs (the same buffers at the same addresses,
        // so values derived from pointers agree), its inputs put back
        // between them.
        let l = launch(&dev, &md, 7);
        let inputs = read_buffers(&dev, &l.buffers);
        let private = co
            .kernel(name)
            .unwrap()
            .descriptor
            .private_segment_fixed_size;
        let packet = harness::calls::packet(&dev, &md, &l, private);
        dev.dispatch_program(&original, name, &packet, Some(&probe))
            .unwrap_or_else(|f| panic!("{what}: original: {f}"));
        let want = read_buffers(&dev, &l.buffers);
        drop(probe);
        let seen = seen.into_inner().unwrap();

        // Calls made as the engine chooses, forced inline wherever the
        // hook's code allows it, or forced calls.
        let forced = |c: &Chosen| {
            let inlinable = module.hook(c.hook).map(|h| inline_refusal(h).is_none());
            let by_ref = matches!(c.value, Value::Ref(_));
            if inlinable == Ok(true) && !by_ref {
                Placement::Inline
            } else {
                Placement::Call
            }
        };
        let placing = |c: &Chosen, mode: usize| match mode {
            0 => Placement::Auto,
            1 => forced(c),
            _ => Placement::Call,
        };
        let mut mode = rng.below(3);
        // Forced inlining sometimes borrows every SGPR it needs.
        let borrowing = mode == 1 && rng.below(2) == 0;
        let plan_with = |mode: usize| Plan {
            calls: chosen
                .iter()
                .map(|c| HookCall {
                    point: c.point,
                    module: 0,
                    hook: c.hook.into(),
                    args: vec![
                        Arg::Const32(c.id),
                        Arg::Value(Register::new(RegFile::Exec, 0, 2)),
                        arg_of(c.value),
                    ],
                    once_per_wave: c.once,
                    placement: placing(c, mode),
                })
                .collect(),
            modules: vec![module.clone()],
            // What the packet gives the original.
            private_segment_size: Some(private),
            save_all_clobberable: save_all,
            inline_borrowing: borrowing,
            ..Plan::default()
        };
        let what = format!(
            "{what} ({})",
            ["inline where cheaper", "inlining forced", "calls forced"][mode]
        ) + if borrowing { ", SGPRs borrowed" } else { "" };
        let loaded = match instrument(&mem, &co, name, &an, &original, &plan_with(mode)) {
            // Forced inlining where the point has too few dead registers
            // is refused with the reason; the engine's choice then calls.
            Err(e) if mode == 1 && e.to_string().contains("cannot be inlined: too few") => {
                stats.refused += 1;
                mode = 0;
                instrument(&mem, &co, name, &an, &original, &plan_with(mode))
            }
            r => r,
        }
        .unwrap_or_else(|e| panic!("{what}: {e}\n{chosen:#?}"));
        stats.inlined[mode] += loaded.rw.inlined;
        if borrowing && mode == 1 {
            stats.borrowing[0] += 1;
            stats.borrowing[1] += loaded.rw.inlined;
        }
        stats.calls[mode] += chosen.len();
        for (&b, bytes) in l.buffers.iter().zip(&inputs) {
            dev.write(b, bytes).unwrap();
        }
        loaded.prepare(&dev, name, l.grid, l.wg);
        dev.dispatch_program(
            &loaded.program,
            &emit::instrumented_name(name),
            &packet,
            None,
        )
        .unwrap_or_else(|f| panic!("{what}: instrumented: {f}\n{chosen:#?}"));
        let got = read_buffers(&dev, &l.buffers);
        assert!(
            want == got,
            "{what}: the instrumented kernel's buffers differ\n{chosen:#?}"
        );

        // The hooks' records against the probe's observations.
        let cursor = dev
            .download_u32(loaded.variable("inlay_cursor"), 1)
            .unwrap()[0] as usize;
        if cursor > 4096 {
            continue; // the trace overflowed: this round checks the buffers only
        }
        let mut raw = vec![0u8; cursor * RECORD];
        dev.read(loaded.variable("inlay_trace"), &mut raw).unwrap();
        let wg = l.wg;
        let groups = [0, 1, 2].map(|d| l.grid[d].div_ceil(wg[d]));
        let mut got: ByWave<Record> = BTreeMap::new();
        for r in records(&raw, cursor) {
            let lane = r.hook_exec.trailing_zeros().min(63) as usize;
            let t = r.tid[lane];
            let flat = (t & 0x3ff) + (t >> 10 & 0x3ff) * wg[0] + (t >> 20 & 0x3ff) * wg[0] * wg[1];
            got.entry((r.id, r.block, flat / 64)).or_default().push(r);
        }
        for c in &chosen {
            let keys: Vec<_> = seen
                .keys()
                .filter(|k| k.0 == c.id)
                .chain(got.keys().filter(|k| k.0 == c.id))
                .cloned()
                .collect();
            for key in keys {
                let mut hits: Vec<&Seen> = seen
                    .get(&key)
                    .map(|v| v.iter().collect())
                    .unwrap_or_default();
                if c.point == Point::Entry {
                    hits.truncate(1); // only the first arrival is the entry
                }
                if !c.once {
                    hits.retain(|h| h.exec != 0); // a per-lane hook skips waves with no lane on
                }
                let recs = got.get(&key).map(Vec::as_slice).unwrap_or(&[]);
                assert_eq!(
                    recs.len(),
                    hits.len(),
                    "{what}: call {} ({} at {:?}) in workgroup {:?} wave {}: {} calls recorded, {} expected\n{chosen:#?}",
                    c.id, c.hook, c.point, key.1, key.2, recs.len(), hits.len()
                );
                for (r, h) in recs.iter().zip(hits) {
                    let ctx = format!(
                        "{what}: call {} ({} {:?} at {:?}), workgroup {:?} wave {}",
                        c.id, c.hook, c.value, c.point, h.workgroup, h.wave
                    );
                    assert_eq!(r.kind, c.kind, "{ctx}");
                    assert_eq!(r.point_exec, h.exec, "{ctx}: EXEC passed");
                    let want_exec = if c.once {
                        1u64 << (h.exec.trailing_zeros() % 64)
                    } else {
                        h.exec
                    };
                    let want_exec = if c.once && h.exec == 0 { 1 } else { want_exec };
                    assert_eq!(r.hook_exec, want_exec, "{ctx}: EXEC in the hook");
                    assert_eq!(r.block, h.workgroup, "{ctx}: blockIdx");
                    assert_eq!(r.grid, groups, "{ctx}: gridDim");
                    let size: [u32; 3] =
                        std::array::from_fn(|d| wg[d].min(l.grid[d] - h.workgroup[d] * wg[d]));
                    assert_eq!(r.size, size, "{ctx}: blockDim");
                    let values = &h.values;
                    for lane in (0..64).filter(|l| r.hook_exec >> l & 1 == 1) {
                        let flat = h.wave * 64 + lane as u32;
                        let tid = [
                            flat % size[0],
                            flat / size[0] % size[1],
                            flat / (size[0] * size[1]),
                        ];
                        assert_eq!(
                            r.tid[lane],
                            tid[0] | tid[1] << 10 | tid[2] << 20,
                            "{ctx}: threadIdx of lane {lane}"
                        );
                        let want = match c.value {
                            Value::Launch(LaunchValue::GridSize(d)) => {
                                u64::from(l.grid[usize::from(d)])
                            }
                            Value::Launch(LaunchValue::WorkgroupSize(d)) => {
                                u64::from(wg[usize::from(d)])
                            }
                            Value::Launch(LaunchValue::WorkgroupId(d)) => {
                                u64::from(h.workgroup[usize::from(d)])
                            }
                            Value::Launch(LaunchValue::WorkitemId(d)) => {
                                u64::from(tid[usize::from(d)])
                            }
                            Value::Launch(LaunchValue::KernargDword(o)) => {
                                u64::from(u32::from_le_bytes(
                                    l.args[o as usize..o as usize + 4].try_into().unwrap(),
                                ))
                            }
                            Value::Launch(_) => unreachable!(),
                            _ => values[lane],
                        };
                        let want = match c.kind {
                            1 | 3 | 4 => want & 0xffff_ffff,
                            5 => heavy_reference(c.id, want as u32),
                            _ => want,
                        };
                        assert_eq!(r.value[lane], want, "{ctx}: value in lane {lane}");
                    }
                    calls_checked += 1;
                }
            }
        }
        checked += 1;
    }
    (checked, calls_checked)
}

fn read_buffers(dev: &inlay_vgpu::Device, buffers: &[u64]) -> Vec<Vec<u8>> {
    buffers
        .iter()
        .map(|&b| {
            let mut v = vec![0u8; harness::BUFFER_BYTES];
            dev.read(b, &mut v).unwrap();
            v
        })
        .collect()
}

#[test]
fn random_calls_are_transparent_and_see_what_the_gpu_had() {
    let seed = std::env::var("INLAY_HOOK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x1e1a_u64);
    let rounds = std::env::var("INLAY_HOOK_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let mut rng = Rng(seed | 1);
    let module = hook_module();
    let (mut rounds_checked, mut calls) = (0, 0);
    let list = kernels(5);
    assert!(list.len() >= 20, "only {} fixture kernels", list.len());
    let mut placed = Placed::default();
    for (file, name) in &list {
        let (r, c) = check_kernel(file, name, &mut rng, rounds, &module, &mut placed);
        rounds_checked += r;
        calls += c;
    }
    eprintln!(
        "{rounds_checked} rounds over {} kernels, {calls} calls checked (seed {seed:#x}); \
         inlined/requested: engine's choice {}/{}, forced {}/{} ({} forced rounds refused for registers; \
         {} rounds borrowing every SGPR inlined {}), calls forced {}/{}",
        list.len(),
        placed.inlined[0],
        placed.calls[0],
        placed.inlined[1],
        placed.calls[1],
        placed.refused,
        placed.borrowing[0],
        placed.borrowing[1],
        placed.inlined[2],
        placed.calls[2],
    );
    // Every mode ran, and inlining happened in the first two.
    assert!(
        placed.inlined[0] > 0 && placed.inlined[1] > 0 && placed.borrowing[1] > 0,
        "nothing was inlined in some mode"
    );
    assert_eq!(placed.inlined[2], 0, "calls forced, yet some were inlined");
    assert!(
        rounds_checked >= list.len() * rounds * 9 / 10,
        "too many rounds overflowed the trace"
    );
    assert!(calls > 500, "only {calls} calls checked");
}

/// A hook that writes a register passed by reference changes what the
/// kernel computes, as predicted: `add_float(&a, 1.5)` before vector_add's
/// `v_add_f32` makes `c = (a + 1.5) + b` in the lanes that reach it.
#[test]
fn a_register_passed_by_reference_takes_the_hooks_value() {
    let bytes = fixture(5, "vector_add");
    let co = CodeObject::parse(&bytes).unwrap();
    let md = co.metadata.as_ref().unwrap().kernels[0].clone();
    let name = md.name.clone();
    let an = analyse(&co, &name).unwrap();
    let add = an
        .program
        .insts
        .iter()
        .position(|i| i.inst.mnemonic() == "v_add_f32_e32")
        .expect("v_add_f32");
    // Its first source: the element of a, loaded into it.
    let Some(inlay_isa::Operand::Vgpr { first: a, .. }) = an.program.insts[add].inst.operand(1)
    else {
        panic!("v_add_f32's first source is not a VGPR");
    };
    let (mem, dev) = device();
    let original = dev.load(&bytes).unwrap();
    let plan = Plan {
        calls: vec![HookCall {
            point: Point::Before(add),
            module: 0,
            hook: "add_float".into(),
            args: vec![
                Arg::Reference(Register::new(RegFile::Vgpr, a, 1)),
                Arg::Const32(1.5f32.to_bits()),
            ],
            once_per_wave: false,
            placement: Default::default(),
        }],
        modules: vec![hook_module()],
        ..Plan::default()
    };
    let loaded =
        instrument(&mem, &co, &name, &an, &original, &plan).unwrap_or_else(|e| panic!("{e}"));
    let n = 200u32; // 4 workgroups of 64, the last one partial
    let x: Vec<f32> = (0..n).map(|k| k as f32 * 0.25).collect();
    let y: Vec<f32> = (0..n).map(|k| 1000.0 - k as f32).collect();
    let up = |v: &[f32]| {
        dev.upload_u32(&v.iter().map(|f| f.to_bits()).collect::<Vec<_>>())
            .unwrap()
    };
    let (xa, ya, za) = (up(&x), up(&y), dev.upload_u32(&vec![0; 256]).unwrap());
    let args = inlay_vgpu::kernarg::Args::new()
        .ptr(xa)
        .ptr(ya)
        .ptr(za)
        .u32(n);
    let mut kernarg = args.as_bytes().to_vec();
    kernarg.resize(md.kernarg_segment_size.unwrap_or(0) as usize, 0);
    let l = harness::Launch {
        grid: [256, 1, 1],
        wg: [64, 1, 1],
        args: kernarg,
        buffers: vec![xa, ya, za],
    };
    let packet = harness::calls::packet(&dev, &md, &l, 0);
    loaded.prepare(&dev, &name, l.grid, l.wg);
    dev.dispatch_program(
        &loaded.program,
        &emit::instrumented_name(&name),
        &packet,
        None,
    )
    .unwrap_or_else(|f| panic!("{f}"));
    let z = dev.download_u32(za, 256).unwrap();
    for k in 0..256usize {
        let want = if (k as u32) < n {
            (x[k] + 1.5) + y[k]
        } else {
            0.0
        };
        assert_eq!(f32::from_bits(z[k]), want, "element {k}");
    }
}

/// Calls that cannot be made are refused with the kernel, the hook, the
/// point and the reason; the kernel itself is untouched (its own run still
/// computes what it computes).
#[test]
fn a_call_that_cannot_be_placed_is_refused_with_the_reason() {
    let bytes = fixture(5, "vector_add");
    let co = CodeObject::parse(&bytes).unwrap();
    let md = co.metadata.as_ref().unwrap().kernels[0].clone();
    let name = md.name.clone();
    let an = analyse(&co, &name).unwrap();
    let prog = &an.program;
    let find = |m: &str| {
        prog.insts
            .iter()
            .position(|i| i.inst.mnemonic() == m)
            .unwrap()
    };
    let (branch, endpgm, add) = (
        find("s_cbranch_execz"),
        find("s_endpgm"),
        find("v_add_f32_e32"),
    );
    let call = |point, hook: &str, args: Vec<Arg>| HookCall {
        point,
        module: 0,
        hook: hook.into(),
        args,
        once_per_wave: false,
        placement: Default::default(),
    };
    let exec = Arg::Value(Register::new(RegFile::Exec, 0, 2));
    let cases: Vec<(HookCall, &str, &str)> = vec![
        (
            call(Point::Entry, "too_big", vec![Arg::Const32(1)]),
            "at the kernel's entry",
            "bytes of private memory (at most 131072)",
        ),
        (
            call(
                Point::After(branch),
                "obs_value",
                vec![Arg::Const32(1), exec.clone(), Arg::Const32(2)],
            ),
            "after the instruction at",
            "branches",
        ),
        (
            call(
                Point::After(endpgm),
                "obs_value",
                vec![Arg::Const32(1), exec.clone(), Arg::Const32(2)],
            ),
            "after the instruction at",
            "ends the wave",
        ),
        (
            call(
                Point::Before(add),
                "obs_value64",
                vec![Arg::Const32(1), exec.clone(), Arg::Address],
            ),
            "before the instruction at",
            "no address",
        ),
        (
            call(Point::Entry, "no_such_hook", vec![]),
            "at the kernel's entry",
            "no global device function of that name",
        ),
        (
            call(Point::Entry, "obs_value", vec![Arg::Const64(0); 16]),
            "at the kernel's entry",
            "at most 31",
        ),
        (
            call(
                Point::Entry,
                "add_float",
                vec![
                    Arg::Reference(Register::new(RegFile::Scc, 0, 1)),
                    Arg::Const32(0),
                ],
            ),
            "at the kernel's entry",
            "cannot be passed by reference",
        ),
        // Inlining forced where the hook's code does not allow it: the
        // engine's own analysis says why (obs_heavy calls stir and has a
        // stack; too_big has a stack; a register by reference needs the
        // call's memory slot).
        (
            HookCall {
                placement: Placement::Inline,
                ..call(
                    Point::Entry,
                    "obs_heavy",
                    vec![Arg::Const32(1), exec.clone(), Arg::Const32(2)],
                )
            },
            "at the kernel's entry",
            "it cannot be inlined: it calls other functions",
        ),
        (
            HookCall {
                placement: Placement::Inline,
                ..call(
                    Point::Before(add),
                    "add_float",
                    vec![
                        Arg::Reference(Register::new(RegFile::Vgpr, 1, 1)),
                        Arg::Const32(0),
                    ],
                )
            },
            "before the instruction at",
            "it cannot be inlined: a register passed by reference",
        ),
    ];
    let (mem, dev) = device();
    let original = dev.load(&bytes).unwrap();
    let module = hook_module();
    for (c, point, reason) in cases {
        let plan = Plan {
            calls: vec![c.clone()],
            modules: vec![module.clone()],
            ..Plan::default()
        };
        let e = match instrument(&mem, &co, &name, &an, &original, &plan) {
            Ok(_) => panic!("{c:?} was placed"),
            Err(e) => e.to_string(),
        };
        let want_start = format!("kernel {name}: cannot call hook {} {point}", c.hook);
        assert!(
            e.starts_with(&want_start),
            "{e}\nwanted it to start with: {want_start}"
        );
        assert!(e.contains(reason), "{e}\nwanted the reason: {reason}");
    }
    // The original runs as before.
    let want = harness::run(&dev, &original, &name, &md).0;
    let again = harness::run(&dev, &original, &name, &md).0;
    assert!(want == again);
}

/// Luthier's gridDim test: a hook that stores `gridDim` in a global of its
/// module (`grid_dim` in the test module), called before the last
/// instruction of each kernel's first block, on kernels with the launch
/// shapes of the three HIP programs Luthier published it on
/// (fixtures/src/grid_shapes.hip; our kernels, their launches). The host reads the global after the
/// launch: Luthier's printed grids (32×32×1, 16×1×1, 39063×1×1), which are
/// also the grid in work-items over the workgroup size rounded up. The
/// kernels' outputs are the original's, bit for bit.
#[test]
fn griddim_in_a_hook_is_the_launchs_as_luthier_printed() {
    let bytes = fixture(5, "grid_shapes");
    let co = CodeObject::parse(&bytes).unwrap();
    let (mem, dev) = device();
    let original = dev.load(&bytes).unwrap();
    let module = hook_module();
    // (kernel, grid, workgroup, Luthier's GridDim, buffers (bytes), by-value arguments)
    type Shape = (
        &'static str,
        [u32; 3],
        [u32; 3],
        [u32; 3],
        [usize; 2],
        [u64; 2],
    );
    let n = 10_000_000u64; // complex: the element count its grid rounds up
                           // complex_double has complex_float's shape: one run of 156,252 waves
                           // is enough of the test's time (it runs on small launches elsewhere).
    let shapes: [Shape; 3] = [
        (
            "affine",
            [512, 512, 1],
            [16, 16, 1],
            [32, 32, 1],
            [512 * 512 * 4; 2],
            [512, 512],
        ),
        (
            "PTTWAC_soa_asta",
            [1024, 1, 1],
            [64, 1, 1],
            [16, 1, 1],
            [16 * 4 * 64 * 4; 2],
            [16, 0],
        ),
        (
            "complex_float",
            [10_000_128, 1, 1],
            [256, 1, 1],
            [39063, 1, 1],
            [n as usize, 0],
            [n, 0],
        ),
    ];
    for (name, grid, wg, luthier, sizes, values) in shapes {
        let md = co
            .metadata
            .as_ref()
            .unwrap()
            .kernels
            .iter()
            .find(|k| k.name == name)
            .unwrap_or_else(|| panic!("no kernel {name}"))
            .clone();
        let computed: [u32; 3] = std::array::from_fn(|d| grid[d].div_ceil(wg[d]));
        assert_eq!(
            computed, luthier,
            "{name}: the published grid is the launch's"
        );
        let an = analyse(&co, name).unwrap();
        let last = an.program.blocks[0].insts.end - 1;
        let plan = Plan {
            calls: vec![HookCall {
                point: Point::Before(last),
                module: 0,
                hook: "grid_dim".into(),
                args: vec![],
                once_per_wave: false,
                placement: Default::default(),
            }],
            modules: vec![module.clone()],
            ..Plan::default()
        };
        let loaded =
            instrument(&mem, &co, name, &an, &original, &plan).unwrap_or_else(|e| panic!("{e}"));
        // The same inputs for both runs; outputs start zeroed.
        let run = |program: &inlay_vgpu::Program, kernel: &str| {
            let mut args = inlay_vgpu::kernarg::Args::new();
            let mut buffers = Vec::new();
            for (k, &size) in sizes.iter().enumerate().filter(|(_, &s)| s > 0) {
                let data: Vec<u8> = if k == 0 && sizes[1] > 0 {
                    (0..size).map(|b| (b * 7 + b / 3) as u8).collect()
                } else {
                    vec![0; size]
                };
                let b = dev.upload(&data).unwrap();
                buffers.push(b);
                args = args.ptr(b);
            }
            args = if name.starts_with("complex") {
                args.u64(values[0])
            } else if name == "affine" {
                args.u32(values[0] as u32).u32(values[1] as u32)
            } else {
                args.u32(values[0] as u32)
            };
            let mut kernarg = args.as_bytes().to_vec();
            kernarg.resize(md.kernarg_segment_size.unwrap_or(0) as usize, 0);
            dev.dispatch(program, kernel, grid, wg, &kernarg)
                .unwrap_or_else(|f| panic!("{kernel}: {f}"));
            let out: Vec<Vec<u8>> = buffers
                .iter()
                .zip(sizes)
                .map(|(&b, size)| {
                    let mut v = vec![0u8; size];
                    dev.read(b, &mut v).unwrap();
                    dev.free(b).unwrap();
                    v
                })
                .collect();
            out
        };
        let want = run(&original, name);
        let global = loaded.variable("inlay_grid_dim");
        dev.write(global, &[0; 12]).unwrap();
        loaded.prepare(&dev, name, grid, wg);
        let got = run(&loaded.program, &emit::instrumented_name(name));
        let grid_dim: [u32; 3] = dev.download_u32(global, 3).unwrap().try_into().unwrap();
        assert_eq!(grid_dim, luthier, "{name}: gridDim seen by the hook");
        assert!(want == got, "{name}: the instrumented run's buffers differ");
        // The kernels did their work (not all zeros, or all failures).
        let out = want.last().unwrap();
        assert!(out.iter().any(|&b| b != 0), "{name}: wrote nothing");
        if name.starts_with("complex") {
            assert!(out.iter().all(|&b| b == 1), "{name}: a round trip failed");
        }
    }
}

/// `grid_size_x` (fixtures/src/hooks_test.hip) reads the dispatch packet
/// through s[4:5], its dispatch-pointer input, and clang then reuses that
/// pair for a global's address. Inlined before every instruction of
/// vector_add, which has SGPRs to spare, the address is kept in an SGPR
/// pair home; a copy renamed onto that home would have the dispatch pointer
/// set there. Every copy must store the launch's grid size, and the kernel's
/// buffers must be as the original leaves them.
#[test]
fn an_inlined_hook_reusing_an_input_pair_for_an_address_keeps_both() {
    let bytes = fixture(5, "vector_add");
    let co = CodeObject::parse(&bytes).unwrap();
    let md = co.metadata.as_ref().unwrap().kernels[0].clone();
    let name = md.name.clone();
    let (mem, dev) = device();
    let original = dev.load(&bytes).unwrap();
    let an = analyse(&co, &name).unwrap();
    let calls: Vec<HookCall> = (0..an.program.insts.len())
        .map(|i| HookCall {
            point: Point::Before(i),
            module: 0,
            hook: "grid_size_x".into(),
            args: vec![],
            once_per_wave: false,
            placement: Placement::Inline,
        })
        .collect();
    let n = calls.len();
    let plan = Plan {
        calls,
        modules: vec![hook_module()],
        ..Plan::default()
    };
    let loaded =
        instrument(&mem, &co, &name, &an, &original, &plan).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.rw.inlined, n, "every call inlined");
    let l = launch(&dev, &md, 7);
    let inputs = read_buffers(&dev, &l.buffers);
    let packet = harness::calls::packet(&dev, &md, &l, 0);
    dev.dispatch_program(&original, &name, &packet, None)
        .unwrap_or_else(|f| panic!("original: {f}"));
    let want = read_buffers(&dev, &l.buffers);
    for (&b, bytes) in l.buffers.iter().zip(&inputs) {
        dev.write(b, bytes).unwrap();
    }
    let global = loaded.variable("inlay_grid_size_x");
    dev.write(global, &[0; 4]).unwrap();
    loaded.prepare(&dev, &name, l.grid, l.wg);
    dev.dispatch_program(
        &loaded.program,
        &emit::instrumented_name(&name),
        &packet,
        None,
    )
    .unwrap_or_else(|f| panic!("instrumented: {f}"));
    assert_eq!(
        dev.download_u32(global, 1).unwrap()[0],
        l.grid[0],
        "the grid size the hook stored"
    );
    assert!(
        want == read_buffers(&dev, &l.buffers),
        "the instrumented kernel's buffers differ"
    );
}
