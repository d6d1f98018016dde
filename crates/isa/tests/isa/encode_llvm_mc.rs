//! Oracle: build one instance of every opcode in the tables (per target and
//! encoding, with each opcode's operand form), print it with our formatter,
//! assemble all of them with one `llvm-mc-19 --show-encoding` call per target,
//! and require identical bytes. Also checks encode(decode(x)) == x on them.
use crate::support;

use std::io::Write;
use std::process::{Command, Stdio};

use inlay_isa::tables::TargetTables;
use inlay_isa::{encode, format::to_string, Builder, Decoder, Encoding, Instruction, Target};
use support::forms::{forms, operands_for, ENCODINGS};

fn check_target(target: Target) -> (usize, usize, Vec<String>) {
    let tables = TargetTables::of(target);
    let b = Builder::new(target);
    let mut built: Vec<(String, Instruction)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for enc in ENCODINGS {
        for op in 0..1024u32 {
            let d = tables.lookup(enc, op);
            if d == 0 {
                continue;
            }
            let desc = inlay_isa::tables::desc(d);
            if !seen.insert((enc, desc.mnemonic)) {
                continue;
            }
            let Some(ops) = operands_for(desc.slots()) else {
                continue;
            };
            if let Ok(i) = b.build(enc, desc.mnemonic, &ops) {
                built.push((to_string(&i), i));
            }
        }
    }
    // Round trip through the decoder.
    let dec = Decoder::new(target);
    for (text, i) in &built {
        let bytes = encode(i);
        assert_eq!(
            dec.decode(&bytes).ok().as_ref(),
            Some(i),
            "decode(encode) for {text}"
        );
    }
    let mut child = Command::new("llvm-mc-19")
        .args([
            "-triple=amdgcn-amd-amdhsa",
            &format!("-mcpu={}", target.name()),
            "-show-encoding",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run llvm-mc-19");
    // Forms LLVM prints without their suffix (v_nop, v_clrexcp in VOP3 and
    // SDWA) read back as VOP1: ask the assembler for the form explicitly.
    let input: String = built
        .iter()
        .map(|(_, i)| format!("{}\n", assembler_text(i)))
        .collect();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let rejected: std::collections::HashSet<usize> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("<stdin>:"))
        .filter(|l| l.contains("error"))
        .filter_map(|l| l.split(':').next()?.parse::<usize>().ok())
        .collect();
    let encodings: Vec<Vec<u8>> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split("encoding: [").nth(1))
        .map(|e| {
            e.trim_end_matches(']')
                .split(',')
                .filter_map(|x| u8::from_str_radix(x.trim().trim_start_matches("0x"), 16).ok())
                .collect()
        })
        .collect();
    let accepted: Vec<&(String, Instruction)> = built
        .iter()
        .enumerate()
        .filter(|(n, _)| !rejected.contains(&(n + 1)))
        .map(|(_, x)| x)
        .collect();
    assert_eq!(
        accepted.len(),
        encodings.len(),
        "could not pair llvm-mc output with input"
    );
    let mut mismatches = Vec::new();
    for ((text, i), theirs) in accepted.iter().zip(&encodings) {
        if encode(i) != *theirs {
            mismatches.push(format!(
                "{}: {text}: ours {:02x?} llvm {:02x?}",
                target.name(),
                encode(i),
                theirs
            ));
        }
    }
    let rej: Vec<String> = built
        .iter()
        .enumerate()
        .filter(|(n, _)| rejected.contains(&(n + 1)))
        .map(|(_, (t, _))| t.clone())
        .collect();
    eprintln!(
        "{}: {} built, {} assembled by llvm-mc, {} rejected, e.g. {:?}",
        target.name(),
        built.len(),
        accepted.len(),
        rej.len(),
        &rej[..rej.len().min(8)]
    );
    (built.len(), accepted.len(), mismatches)
}

#[test]
fn every_opcode_encodes_like_llvm_mc() {
    if !support::have_tool("llvm-mc-19") {
        return;
    }
    let mut all = Vec::new();
    for t in [Target::Gfx908, Target::Gfx90a, Target::Gfx942] {
        let (built, accepted, mism) = check_target(t);
        assert!(built > 1000, "{}: only {built} opcodes built", t.name());
        assert!(
            accepted * 100 >= built * 90,
            "{}: llvm-mc accepted only {accepted} of {built}",
            t.name()
        );
        all.extend(mism);
    }
    assert!(
        all.is_empty(),
        "{} mismatches:\n{}",
        all.len(),
        all[..all.len().min(30)].join("\n")
    );
}

/// Text llvm-mc should read back as exactly this instruction.
fn assembler_text(i: &Instruction) -> String {
    let t = to_string(i);
    let m = i.mnemonic();
    if i.encoding() == Encoding::Vop3 && !m.ends_with("_e64") && t.starts_with(m) {
        format!("{m}_e64{}", &t[m.len()..])
    } else if i.encoding() == Encoding::Vop1Sdwa && i.slots().is_empty() {
        // v_nop/v_clrexcp print bare in SDWA form; ask for that form
        format!("{m}_sdwa")
    } else {
        t
    }
}

/// Runs llvm-mc-19 with `args` on `input`; returns (stdout, stderr).
fn llvm_mc(target: Target, args: &[&str], input: String) -> (String, String) {
    let mut child = Command::new("llvm-mc-19")
        .args([
            "-triple=amdgcn-amd-amdhsa",
            &format!("-mcpu={}", target.name()),
        ])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run llvm-mc-19");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Assembles one instruction per line: per line, the bytes or the error.
fn assemble(target: Target, lines: &[String]) -> Vec<Result<Vec<u8>, String>> {
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let (stdout, stderr) = llvm_mc(target, &["-show-encoding"], input);
    let mut errors = std::collections::HashMap::new();
    for l in stderr.lines() {
        let Some(rest) = l.strip_prefix("<stdin>:") else {
            continue;
        };
        let mut it = rest.splitn(3, ':');
        let (Some(line), Some(_col), Some(msg)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if let (Ok(n), Some(m)) = (line.parse::<usize>(), msg.trim().strip_prefix("error: ")) {
            errors.entry(n).or_insert_with(|| m.to_string());
        }
    }
    let mut encodings = stdout
        .lines()
        .filter_map(|l| l.split("encoding: [").nth(1))
        .map(|e| {
            e.trim_end_matches(']')
                .split(',')
                .filter_map(|x| u8::from_str_radix(x.trim().trim_start_matches("0x"), 16).ok())
                .collect::<Vec<u8>>()
        });
    (1..=lines.len())
        .map(|n| match errors.get(&n) {
            Some(e) => Err(e.clone()),
            None => encodings.next().ok_or_else(|| "no output".to_string()),
        })
        .collect()
}

/// Disassembles each byte sequence alone: per case, LLVM's text or `None`
/// when it finds no valid instruction there.
fn disassemble(target: Target, cases: &[Vec<u8>]) -> Vec<Option<String>> {
    let marker = |n: usize| 0x100 + (n as u32 % 0xFE00);
    let mut input = String::new();
    for (n, bytes) in cases.iter().enumerate() {
        let mut fed = bytes.clone();
        fed.extend_from_slice(&[0, 0, 0x80, 0xbf]); // s_nop 0: padding
        let line: Vec<String> = fed.iter().map(|b| format!("0x{b:02x}")).collect();
        input.push_str(&line.join(","));
        input.push('\n');
        let m = marker(n);
        input.push_str(&format!("0x{:02x},0x{:02x},0x80,0xbf\n", m & 0xFF, m >> 8));
    }
    let (stdout, stderr) = llvm_mc(target, &["--disassemble"], input);
    let bad: std::collections::HashSet<usize> = stderr
        .lines()
        .filter(|l| l.contains("invalid instruction encoding"))
        .filter_map(|l| {
            let mut it = l.strip_prefix("<stdin>:")?.split(':');
            let line = it.next()?.parse().ok()?;
            (it.next()? == "1").then_some(line)
        })
        .collect();
    let mut lines = stdout.lines().skip(1).map(str::trim);
    (0..cases.len())
        .map(|n| {
            let end = format!("s_nop 0x{:x}", marker(n));
            let mut first = None;
            for l in lines.by_ref() {
                if l == end {
                    break;
                }
                first = first.or(Some(l.to_string()));
            }
            if bad.contains(&(2 * n + 1)) {
                None
            } else {
                first
            }
        })
        .collect()
}

/// Two ds_swizzle_b32 that differ at most in a bitmask-mode offset that
/// moves every lane the same way.
fn same_swizzle(a: &Instruction, b: &Instruction) -> bool {
    let (wa, wb) = (a.words(), b.words());
    let lanes = |w: u32| -> Option<Vec<u32>> {
        let off = w & 0xFFFF;
        (off & 0x8000 == 0).then(|| {
            let (and, or, xor) = (off & 0x1F, off >> 5 & 0x1F, off >> 10 & 0x1F);
            (0..32).map(|l| ((l & and) | or) ^ xor).collect()
        })
    };
    a.mnemonic() == "ds_swizzle_b32"
        && b.mnemonic() == "ds_swizzle_b32"
        && wa.len() == wb.len()
        && wa[0] >> 16 == wb[0] >> 16
        && wa[1..] == wb[1..]
        && lanes(wa[0]).is_some_and(|l| Some(l) == lanes(wb[0]))
}

/// The forms oracle on one target: (forms, encoded by llvm-mc, rejections by
/// reason, failures).
/// Refusals by llvm-mc: (reason, count, an example text).
type Refusals = Vec<(String, usize, String)>;

fn check_forms(target: Target) -> (usize, usize, Refusals, Vec<String>) {
    let forms = forms(target);
    let valid: Vec<&(Vec<u8>, Instruction)> = forms.iter().filter(|(_, i)| i.is_valid()).collect();
    let mut failures = Vec::new();
    // 1. Assembler: our text of every valid form encodes to our bytes.
    let texts: Vec<String> = valid.iter().map(|(_, i)| assembler_text(i)).collect();
    let results = assemble(target, &texts);
    let mut by_reason: std::collections::BTreeMap<String, (usize, String)> = Default::default();
    let mut encoded = 0;
    let mut aliases = 0;
    let dec = Decoder::new(target);
    for ((bytes, i), (text, r)) in valid.iter().zip(texts.iter().zip(&results)) {
        match r {
            Ok(theirs) => {
                encoded += 1;
                // Some texts stand for several encodings (an odd SGPR pair prints
                // aligned, a literal equal to a constant prints as the constant):
                // LLVM then picks one, which must read back as the same text,
                // or for ds_swizzle be the same lane permutation (LLVM prints
                // and=0x1f,or=7 as BITMASK_PERM "pp111" but assembles that
                // as and=0x18,or=7, which it prints as BROADCAST,8,7).
                let alias = dec
                    .decode(theirs)
                    .ok()
                    .filter(|j| j.is_valid() && j.len() == theirs.len())
                    .is_some_and(|j| to_string(&j) == to_string(i) || same_swizzle(i, &j));
                if alias && theirs != bytes {
                    aliases += 1;
                } else if encode(i) != *theirs || bytes != theirs {
                    failures.push(format!(
                        "{} encode {text}: ours {:02x?} llvm-mc {:02x?}",
                        target.name(),
                        encode(i),
                        theirs
                    ));
                }
            }
            Err(reason) => {
                let e = by_reason.entry(reason.clone()).or_insert((0, text.clone()));
                e.0 += 1;
            }
        }
    }
    // 2. Disassembler: every form (valid or not) reads the same in LLVM.
    let bytes: Vec<Vec<u8>> = forms.iter().map(|(b, _)| b.clone()).collect();
    for ((b, i), theirs) in forms.iter().zip(disassemble(target, &bytes)) {
        let ours = i.is_valid().then(|| to_string(i));
        // LLVM annotates some operands it considers invalid with comments.
        if theirs.as_deref().is_some_and(|t| t.contains("/*")) {
            continue;
        }
        if ours != theirs {
            failures.push(format!(
                "{} decode {:02x?}: ours {ours:?} llvm-mc {theirs:?}",
                target.name(),
                b
            ));
        }
    }
    let reasons = by_reason.into_iter().map(|(r, (n, e))| (r, n, e)).collect();
    eprintln!(
        "{}: {} forms decode as valid, {} as invalid (llvm-mc --disassemble agrees but for the \
         known differences); {encoded} assembled by llvm-mc, {aliases} of them to another \
         encoding that reads back as the same text",
        target.name(),
        valid.len(),
        forms.len() - valid.len(),
    );
    (forms.len(), encoded, reasons, failures)
}

/// Differences from llvm-mc-19 that remain, each with its reason and the
/// number of forms it covers over the three targets (a ceiling: the test fails
/// if one grows or anything else differs). Each is a gap in our model, listed
/// in the issue-3 closing note.
const KNOWN: [(&str, &[&str], usize); 1] = [
    (
        "image atomics with dmask 0xf on a 32-bit atomic (not valid: the assembler refuses it) get five data registers in LLVM; with tfe LLVM adds no status register",
        &["image_atomic_"],
        25,
    ),
];

/// Why llvm-mc-19's assembler refuses some forms whose words its own
/// disassembler prints exactly as we do (part 2 checks that text): the
/// assembler is stricter than the decoder. Every refusal must carry one of
/// these messages; a new message fails the test until it is understood.
const REFUSALS: [&str; 24] = [
    // operand rules the assembler enforces and the decoder does not
    "invalid operand for instruction",
    "not a valid operand.",
    "invalid operand (violates constant bus restrictions)",
    "literal operands are not supported",
    "inline constants are not allowed for this operand",
    "source operand must be either a VGPR or an inline constant",
    "'null' operand is not supported on this GPU",
    "invalid or unsupported register size",
    "source 2 operand must not partially overlap with dst",
    "e64 variant of this instruction is not supported",
    "sdwa variant of this instruction is not supported",
    "DP ALU dpp only supports row_newbcast",
    "invalid op_sel operand",
    // immediates the decoder prints in full but the assembler bounds
    "expected a 12-bit unsigned offset",
    "expected a 20-bit unsigned offset",
    "invalid immediate: only 4-bit values are legal",
    "invalid exp target",
    "invalid interpolation slot",
    "out of bounds interpolation attribute number",
    // image and buffer data sizes and modifiers checked only when assembling
    "image data size does not match dmask",
    "image data size does not match dmask and tfe",
    "invalid atomic image dmask",
    "invalid image_gather dmask: only one bit must be set",
    "TFE modifier has no meaning for store instructions",
];

#[test]
fn every_operand_form_encodes_and_decodes_like_llvm_mc() {
    if !support::have_tool("llvm-mc-19") {
        return;
    }
    let mut all = Vec::new();
    for t in [Target::Gfx908, Target::Gfx90a, Target::Gfx942] {
        let (n, _, reasons, failures) = check_forms(t);
        for (reason, count, example) in &reasons {
            eprintln!("  llvm-mc refuses {count}: {reason} (e.g. `{example}`)");
            assert!(
                REFUSALS.contains(&reason.as_str()),
                "{}: llvm-mc refuses {count} forms for a reason not yet understood: {reason} (e.g. `{example}`)",
                t.name()
            );
        }
        assert!(n > 20_000, "{}: only {n} forms", t.name());
        all.extend(failures);
    }
    let mut known = [0usize; KNOWN.len()];
    all.retain(|f| {
        let text = f.split_once(": ours").map_or(f.as_str(), |x| x.1);
        let enc_text = f.split(" encode ").nth(1).unwrap_or("");
        match KNOWN.iter().position(|(_, names, _)| {
            names
                .iter()
                .any(|n| text.contains(&format!("\"{n}")) || enc_text.starts_with(n))
        }) {
            Some(k) => {
                known[k] += 1;
                false
            }
            None => true,
        }
    });
    for ((reason, _, ceiling), n) in KNOWN.iter().zip(known) {
        eprintln!("known difference, {n} forms: {reason}");
        assert!(n <= *ceiling, "{n} forms (more than {ceiling}): {reason}");
    }
    let show = if std::env::var("SHOW_ALL").is_ok() {
        all.len()
    } else {
        40
    };
    assert!(
        all.is_empty(),
        "{} differences from llvm-mc-19:\n{}",
        all.len(),
        all[..all.len().min(show)].join("\n")
    );
}
