//! Rewriting code nobody vetted: fixture kernels with random words written
//! over their code are analysed, planned, rewritten and emitted with hooks
//! before every instruction and every block. Each step may refuse with an
//! error; none may panic, and whatever is emitted must parse back.

use inlay_codeobj::CodeObject;
use inlay_instrument::rewrite::{rewrite, Hook, Plan, Value};
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

fn instrument(bytes: &[u8], kernel: &str, per_block: bool, dead_only: bool) {
    let Ok(co) = CodeObject::parse(bytes) else {
        return;
    };
    let Ok(an) = analyse(&co, kernel) else {
        return;
    };
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
                let h = match n % 4 {
                    0 => Hook::CountLanes { offset },
                    1 => Hook::Add {
                        offset,
                        value: Value::Sgpr((n % 110) as u16),
                    },
                    2 => Hook::Add {
                        offset,
                        value: Value::Const(n as u32),
                    },
                    _ => Hook::Count { offset },
                };
                (i, h)
            })
            .collect(),
        dead_registers_only: dead_only,
        all_branches_long: per_block && dead_only,
    };
    let Some(kd) = co.kernel(kernel).map(|k| k.descriptor) else {
        return;
    };
    let Ok(rw) = rewrite(&an, 0x7e00_0000_0000, &kd, &plan) else {
        return;
    };
    if let Ok(out) = emit::code_object(&co, kernel, &rw) {
        let back = CodeObject::parse(&out).expect("an emitted code object parses");
        assert!(back.kernel(&emit::instrumented_name(kernel)).is_some());
    }
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
        for round in 0..250 {
            let mut bytes = original.clone();
            for _ in 0..1 + rng.next() % 6 {
                let at = start + (rng.next() as usize % (len / 4)) * 4;
                let word = rng.next() as u32;
                bytes[at..at + 4].copy_from_slice(&word.to_le_bytes());
            }
            instrument(&bytes, kernel, round % 2 == 0, round % 4 < 2);
        }
    }
}
