//! Rewriting code nobody vetted: fixture kernels with random words written
//! over their code are analysed, planned, rewritten and emitted with hooks
//! of every kind (counting, adding, recording, with every kind of value)
//! before every instruction and every block. Each step may refuse with an
//! error; none may panic, and whatever is emitted must parse back.

use inlay_codeobj::CodeObject;
use inlay_instrument::rewrite::{rewrite, Hook, LaneValue, Plan, Trace, Value};
use inlay_instrument::{analyse, counting, emit};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let p = format!(
        "{}/../../fixtures/gfx90a/v5/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Whether a code object came out.
fn instrument(bytes: &[u8], kernel: &str, per_block: bool, dead_only: bool) -> bool {
    let Ok(co) = CodeObject::parse(bytes) else {
        return false;
    };
    let Ok(an) = analyse(&co, kernel) else {
        return false;
    };
    let Some(kd) = co.kernel(kernel).map(|k| k.descriptor) else {
        return false;
    };
    let launch = kd
        .decode(inlay_codeobj::target::Family::Gfx90a, false)
        .initial_sgprs();
    let prog = &an.program;
    let sites: Vec<usize> = if per_block {
        counting::plan(prog)
            .measured
            .iter()
            .map(|&b| prog.blocks[b].insts.start)
            .collect()
    } else {
        (0..prog.insts.len()).collect()
    };
    let plan = Plan {
        counters: 0x7f00_0000_0000,
        hooks: sites
            .iter()
            .enumerate()
            .map(|(n, &i)| {
                let offset = (8 * n as u32).min(1 << 19);
                // Every value kind (the rewriter may still refuse some: a
                // launch value the kernel does not receive, say).
                let value = match n % 8 {
                    0 => Value::Sgpr((n % 102) as u16),
                    1 => Value::Const(n as u32),
                    2 => Value::SgprPair((n % 51) as u16 * 2),
                    3 => Value::Exec,
                    4 => Value::Vcc,
                    5 => Value::KernArg((n % 16) as u32 * 4),
                    6 => Value::Packet((n % 16) as u32 * 4),
                    _ => Value::WorkgroupId((n % 3) as u8),
                };
                // Launch values the kernel does not receive are refused
                // (tested elsewhere); here they would stop every rewrite.
                let value = match value {
                    Value::KernArg(_) if launch.kernarg_segment_ptr.is_none() => Value::Exec,
                    Value::Packet(_) if launch.dispatch_ptr.is_none() => Value::Vcc,
                    Value::WorkgroupId(d) if launch.workgroup_id[usize::from(d)].is_none() => {
                        Value::Const(d.into())
                    }
                    v => v,
                };
                let trace = Trace {
                    cursor: offset & !7,
                    records: 0x7d00_0000_0000,
                    capacity: 1 << 20,
                };
                let h = match n % 6 {
                    0 => Hook::CountLanes { offset },
                    1 | 2 => Hook::Add { offset, value },
                    3 => Hook::Record {
                        trace,
                        id: n as u32,
                        value,
                    },
                    4 => Hook::RecordLanes {
                        trace,
                        id: n as u32,
                        value: match n % 3 {
                            0 => LaneValue::Address,
                            1 => LaneValue::Vgpr((n % 256) as u16),
                            _ => LaneValue::VgprPair((n % 128) as u16 * 2),
                        },
                    },
                    _ => Hook::Count { offset },
                };
                (i, h)
            })
            .collect(),
        dead_registers_only: dead_only,
        all_branches_long: per_block && dead_only,
        ..Plan::default()
    };
    let Ok(rw) = rewrite(&an, 0x7e00_0000_0000, &kd, &plan) else {
        return false;
    };
    let Ok(out) = emit::code_object(&co, kernel, rw) else {
        return false;
    };
    let back = CodeObject::parse(&out).expect("an emitted code object parses");
    assert!(back.kernel(&emit::instrumented_name(kernel)).is_some());
    true
}

#[test]
fn random_code_never_panics_the_rewriter() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for (file, kernel) in [
        ("vector_add", "vector_add"),
        ("device_call", "call_indirect"),
        ("prefix_scan", "scan_inclusive"),
        ("scratch", "scratch_lookup"),
    ] {
        let original = fixture(file);
        let co = CodeObject::parse(&original).expect("parse");
        let text = co.section(".text").expect(".text");
        let (start, len) = (text.offset as usize, text.size as usize);
        drop(co);
        let mut emitted = 0;
        for round in 0..250 {
            let mut bytes = original.clone();
            for _ in 0..1 + rng.next() % 6 {
                let at = start + (rng.next() as usize % (len / 4)) * 4;
                let word = rng.next() as u32;
                bytes[at..at + 4].copy_from_slice(&word.to_le_bytes());
            }
            emitted += usize::from(instrument(&bytes, kernel, round % 2 == 0, round % 4 < 2));
        }
        // Most damaged kernels still lift: the hook code was really built.
        assert!(
            emitted > 25,
            "{kernel}: only {emitted} of 250 rounds emitted a code object"
        );
    }
}

/// Code loaded anywhere: every `s_getpc_b64` the rewrite turns into moves
/// of the original address moves exactly that address, and the code after
/// it stays where the layout put it, whether the address's halves are
/// small enough for inline constants (a low load address) or not.
#[test]
fn getpc_becomes_the_original_address_at_any_load_address() {
    use inlay_isa::{Decoder, Operand};
    let value = |op: Option<Operand>| match op {
        Some(Operand::Literal(v)) => Some(v),
        Some(Operand::Inline(c @ 128..=192)) => Some(u32::from(c) - 128),
        _ => None,
    };
    let mut moved = 0;
    for load_delta in [0, 0x1000, 0x7000_0000, 0x7f12_3400_0000] {
        for (file, kernel) in crate::harness::kernels(5) {
            let bytes = crate::harness::fixture(5, &file);
            let co = CodeObject::parse(&bytes).unwrap();
            let an = analyse(&co, &kernel).unwrap();
            let kd = co.kernel(&kernel).unwrap().descriptor;
            let rw = rewrite(&an, load_delta, &kd, &Plan::default())
                .unwrap_or_else(|e| panic!("{file}/{kernel} at {load_delta:#x}: {e}"));
            let d = Decoder::new(an.program.target);
            for (i, ins) in an.program.insts.iter().enumerate() {
                if ins.inst.mnemonic() != "s_getpc_b64" {
                    continue;
                }
                let at = rw.new_offset[i] as usize;
                let lo = d.decode(&rw.code[at..]).unwrap();
                if lo.mnemonic() != "s_mov_b32" {
                    continue; // kept: a call's s_getpc_b64
                }
                let hi = d.decode(&rw.code[at + lo.len()..]).unwrap();
                let pc = load_delta + ins.addr + 4;
                assert_eq!(
                    (value(lo.operand(1)), value(hi.operand(1))),
                    (Some(pc as u32), Some((pc >> 32) as u32)),
                    "{file}/{kernel} at {load_delta:#x}: {} / {}",
                    lo.mnemonic(),
                    hi.mnemonic()
                );
                assert_eq!(
                    rw.new_offset.get(i + 1).copied(),
                    Some((at + lo.len() + hi.len()) as u64),
                    "{file}/{kernel} at {load_delta:#x}: the next instruction moved"
                );
                moved += 1;
            }
        }
    }
    assert!(
        moved > 0,
        "no fixture kernel has an s_getpc_b64 made into moves"
    );
}

/// Inserted code that stores through the scalar cache (the built-in
/// counter's `s_atomic_add_x2`) gets the scalar cache written back before
/// every `s_endpgm`, as LLVM does for a kernel with scalar stores or
/// atomics (`s_dcache_wb`; llc-19 inserts it for `S_ATOMIC_ADD_X2_IMM`);
/// code without them gets none.
#[test]
fn scalar_stores_are_written_back_before_the_end() {
    use inlay_isa::Decoder;
    let mut ends = 0;
    for (file, kernel) in crate::harness::kernels(5) {
        let bytes = crate::harness::fixture(5, &file);
        let co = CodeObject::parse(&bytes).unwrap();
        let an = analyse(&co, &kernel).unwrap();
        let kd = co.kernel(&kernel).unwrap().descriptor;
        let counting = Plan {
            counters: 0x1000,
            hooks: vec![(0, Hook::Count { offset: 0 })],
            ..Default::default()
        };
        let d = Decoder::new(an.program.target);
        for (plan, wb) in [(Plan::default(), false), (counting, true)] {
            let rw = rewrite(&an, 0x7f12_3400_0000, &kd, &plan)
                .unwrap_or_else(|e| panic!("{file}/{kernel}: {e}"));
            let mut at = 0;
            let mut before = "";
            while at < rw.code.len() {
                let i = d.decode(&rw.code[at..]).expect("rewritten code decodes");
                if i.mnemonic() == "s_endpgm" {
                    assert_eq!(
                        before == "s_dcache_wb",
                        wb,
                        "{file}/{kernel} (write-back {wb})"
                    );
                    ends += 1;
                }
                before = i.mnemonic();
                at += i.len();
            }
        }
    }
    assert!(ends >= 40, "only {ends} ends seen");
}
