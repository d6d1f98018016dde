//! Hazards at the seams of inserted code: every fixture kernel
//! instrumented with calls before every instruction (called and inlined)
//! and with built-in hooks (counting, recording) before every instruction, then the rewritten
//! code decoded and scanned in straight lines for pairs the hardware does
//! not interlock (`rewrite::hazards`, whose rules are tested against
//! AMD's tables there): none may be closer than its rule where inserted
//! code is involved. Removing the nops the rewrite added shows the scan
//! finds what they fix.

use inlay_codeobj::CodeObject;
use inlay_instrument::hooks::{Arg, HookCall, Placement, Point};
use inlay_instrument::rewrite::hazards::{self, violations};
use inlay_instrument::rewrite::{rewrite, Hook, LaneValue, Plan, Rewritten, Trace, Value};
use inlay_instrument::{analyse, Analysis};
use inlay_isa::{Decoder, Instruction, RegFile, Register};

use crate::harness::calls::hook_module;
use crate::harness::{fixture, kernels};

/// The rewritten code as a stream: (instruction, inserted by the rewrite).
fn stream(an: &Analysis, rw: &Rewritten) -> Vec<(Instruction, bool)> {
    let app: std::collections::HashSet<u64> = rw.new_offset.iter().copied().collect();
    let d = Decoder::new(an.program.target);
    let mut out = Vec::new();
    let mut at = 0;
    while at < rw.code.len() {
        let i = d.decode(&rw.code[at..]).expect("rewritten code decodes");
        out.push((i, !app.contains(&(at as u64))));
        at += i.len();
    }
    out
}

fn plans(an: &Analysis) -> Vec<(&'static str, Plan)> {
    let n = an.program.insts.len();
    let calls = |placement| {
        (0..n)
            .map(|i| HookCall {
                point: Point::Before(i),
                module: 0,
                hook: "obs_value".into(),
                args: vec![
                    Arg::Const32(i as u32),
                    Arg::Value(Register::new(RegFile::Exec, 0, 2)),
                    Arg::Const32(1),
                ],
                once_per_wave: false,
                placement,
            })
            .collect()
    };
    let call_plan = |placement| Plan {
        calls: calls(placement),
        modules: vec![hook_module()],
        ..Default::default()
    };
    vec![
        ("called", call_plan(Placement::Call)),
        ("inlined", call_plan(Placement::Auto)),
        (
            "built-in",
            Plan {
                counters: 0x1000,
                hooks: (0..n)
                    .map(|i| {
                        (
                            i,
                            Hook::CountLanes {
                                offset: 8 * (i as u32 % 64),
                            },
                        )
                    })
                    .collect(),
                ..Default::default()
            },
        ),
        (
            "recording",
            Plan {
                counters: 0x1000,
                hooks: (0..n)
                    .flat_map(|i| {
                        let trace = Trace {
                            cursor: 0,
                            records: 0x10_0000,
                            capacity: 1 << 20,
                        };
                        [
                            (
                                i,
                                Hook::Record {
                                    trace,
                                    id: i as u32,
                                    value: Value::Exec,
                                },
                            ),
                            (
                                i,
                                Hook::RecordLanes {
                                    trace,
                                    id: i as u32,
                                    value: LaneValue::Vgpr(0),
                                },
                            ),
                        ]
                    })
                    .collect(),
                ..Default::default()
            },
        ),
    ]
}

#[test]
fn no_hazard_at_inserted_seams() {
    let (mut checked, mut fixed_something) = (0, false);
    for (file, kernel) in kernels(5) {
        let bytes = fixture(5, &file);
        let co = CodeObject::parse(&bytes).unwrap();
        let an = analyse(&co, &kernel).unwrap();
        let kd = co.kernel(&kernel).unwrap().descriptor;
        for (what, plan) in plans(&an) {
            // Plans a kernel's registers cannot take are not this test's.
            let Ok(rw) = rewrite(&an, 0x7f12_3400_0000, &kd, &plan) else {
                continue;
            };
            checked += 1;
            let s = stream(&an, &rw);
            let v = violations(an.program.target, &s);
            assert!(
                v.is_empty(),
                "{file}/{kernel} ({what}): {} pairs too close, first: {:?} -> {:?} ({:?})",
                v.len(),
                s[v[0].writer].0.mnemonic(),
                s[v[0].reader].0.mnemonic(),
                v[0]
            );
            // Without the nops the rewrite added, pairs appear (in some
            // kernel): the scan sees what the padding fixes.
            let stripped: Vec<_> = s
                .iter()
                .filter(|(i, inserted)| !(*inserted && i.mnemonic() == "s_nop"))
                .copied()
                .collect();
            fixed_something |= !violations(an.program.target, &stripped).is_empty();
        }
    }
    assert!(checked >= 20, "only {checked} rewrites to check");
    assert!(fixed_something, "no rewrite needed a nop");
}

fn text(i: &Instruction) -> String {
    let mut out = String::new();
    inlay_isa::format::format(i, &mut out);
    out
}

/// Every `s_nop` the compiler put in a straight line of a kernel is
/// explained by our rules: with it removed, the scan finds a pair too
/// close ending at the instruction after it (LLVM's hazard recognizer,
/// which placed the nops, is the oracle). All three targets' fixtures.
#[test]
fn compiler_nops_are_explained() {
    let (mut nops, mut unexplained) = (0, Vec::new());
    for target in ["gfx908", "gfx90a", "gfx942"] {
        let dir = format!("{}/../../fixtures/{target}/v5", env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("fixtures")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "hsaco"))
            .collect();
        files.sort();
        for p in files {
            let bytes = std::fs::read(&p).expect("read");
            let co = CodeObject::parse(&bytes).expect("parse");
            for k in &co.kernels {
                let Ok(an) = analyse(&co, k.name) else {
                    continue;
                };
                let s: Vec<(Instruction, bool)> =
                    an.program.insts.iter().map(|i| (i.inst, true)).collect();
                let mut at = 0;
                while at < s.len() {
                    if s[at].0.mnemonic() != "s_nop" {
                        at += 1;
                        continue;
                    }
                    let end = (at..s.len())
                        .find(|&q| s[q].0.mnemonic() != "s_nop")
                        .unwrap_or(s.len());
                    let after_flow = at > 0 && !hazards::ends_history(&s[at - 1].0);
                    if end < s.len() && after_flow {
                        nops += 1;
                        let mut cut = s[..at].to_vec();
                        cut.extend_from_slice(&s[end..]);
                        let found = violations(an.program.target, &cut)
                            .iter()
                            .any(|v| v.reader == at);
                        if !found {
                            unexplained.push(format!(
                                "{target} {}/{}: {} .. {} before {}",
                                p.file_stem().unwrap().to_string_lossy(),
                                k.name,
                                text(&s[at - 1].0),
                                text(&s[at].0),
                                text(&s[end].0)
                            ));
                        }
                    }
                    at = end;
                }
            }
        }
    }
    assert!(nops >= 10, "only {nops} compiler nops seen");
    assert!(
        unexplained.is_empty(),
        "{nops} nops, unexplained:\n{}",
        unexplained.join("\n")
    );
}
