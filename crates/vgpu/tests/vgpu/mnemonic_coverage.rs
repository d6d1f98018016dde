//! Every mnemonic of `tests/mnemonics.txt` (the gfx90a fixtures and the
//! gfx90a code objects of Debian's librocsparse0, listed by
//! `examples/mnemonics.rs`) appears in a kernel body of a per-opcode test,
//! and so does every DPP and SDWA form the list names: coverage cannot
//! regress silently when the list grows or a test is dropped. And the list
//! holds every mnemonic of the fixtures (and of librocsparse0's code
//! objects when they are in /tmp/co90a), so it cannot fall behind them.
//!
//! The scan reads the string literals of the per-opcode test sources (the
//! kernel bodies) and looks for the mnemonic as a whole word, bare or with
//! an `_e32`, `_e64`, `_sdwa` or `_dpp` suffix. A DPP or SDWA form counts
//! when one line of a literal holds the mnemonic in that encoding and the
//! form's modifiers, in the order LLVM prints them.

use std::collections::BTreeSet;

/// The per-opcode tests: each body runs on the virtual GPU and its result
/// is compared with values computed in the test.
const SOURCES: [(&str, &str); 3] = [
    ("opcodes.rs", include_str!("opcodes.rs")),
    ("rocsparse_ops.rs", include_str!("rocsparse_ops.rs")),
    ("isa_ops.rs", include_str!("isa_ops.rs")),
];

const LIST: &str = include_str!("../mnemonics.txt");

/// Contents of the string literals of Rust source `src` (escapes `\n`,
/// `\t`, `\"`, `\\` and line continuations resolved; others kept as is).
fn string_literals(src: &str) -> Vec<String> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\'') or a lifetime ('a).
                if b.get(i + 1) == Some(&b'\\') {
                    i += 3;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                } else if b.get(i + 2) == Some(&b'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let mut j = i + 1;
                while b.get(j) == Some(&b'#') {
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(j - i - 1));
                let start = j + 1;
                let end = src[start..].find(&close).map_or(src.len(), |e| start + e);
                out.push(src[start..end].to_string());
                i = end + close.len();
            }
            b'"' => {
                let mut s = String::new();
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        match b.get(i + 1) {
                            Some(b'n') => s.push('\n'),
                            Some(b't') => s.push('\t'),
                            Some(b'"') => s.push('"'),
                            Some(b'\\') => s.push('\\'),
                            Some(b'\n') => {
                                // Line continuation: skip the newline and indentation.
                                i += 2;
                                while i < b.len() && b[i].is_ascii_whitespace() {
                                    i += 1;
                                }
                                continue;
                            }
                            Some(&c) => {
                                s.push('\\');
                                s.push(c as char);
                            }
                            None => {}
                        }
                        i += 2;
                    } else {
                        let c = src[i..].chars().next().unwrap_or(' ');
                        s.push(c);
                        i += c.len_utf8();
                    }
                }
                i += 1;
                out.push(s);
            }
            _ => i += 1,
        }
    }
    out
}

fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

fn base(word: &str) -> &str {
    for suffix in ["_e32", "_e64", "_sdwa", "_dpp"] {
        if let Some(b) = word.strip_suffix(suffix) {
            return b;
        }
    }
    word
}

/// (mnemonic, forms) of the list.
fn list() -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in LIST.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if line.starts_with(' ') {
            let last = out.last_mut().expect("a form follows its mnemonic");
            last.1.push(line.trim().to_string());
        } else {
            let name = line.split_whitespace().next().expect("mnemonic");
            out.push((name.to_string(), Vec::new()));
        }
    }
    out
}

#[test]
fn the_list_is_the_generated_one() {
    let l = list();
    let header: usize = LIST
        .lines()
        .find_map(|s| {
            s.strip_prefix("# ")?
                .strip_suffix(" mnemonics")?
                .parse()
                .ok()
        })
        .expect("a '# N mnemonics' line");
    assert_eq!(l.len(), header);
    let names: BTreeSet<&str> = l.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.len(), l.len(), "duplicate mnemonics");
    assert!(
        l.len() >= 280,
        "the list is shorter than librocsparse's 280 mnemonics"
    );
}

#[test]
fn every_listed_mnemonic_and_form_has_a_unit_test() {
    let mut lines = Vec::new();
    for (_, src) in SOURCES {
        for lit in string_literals(src) {
            lines.extend(lit.lines().map(str::to_string));
        }
    }
    let mut seen = BTreeSet::new();
    for line in &lines {
        for w in words(line) {
            seen.insert(base(w).to_string());
        }
    }
    let mut missing = Vec::new();
    for (name, forms) in list() {
        if !seen.contains(&name) {
            missing.push(name.clone());
        }
        for form in forms {
            let (enc, mods) = form.split_once(' ').expect("form");
            let sext = mods.ends_with(" sext");
            let mods = mods.trim_end_matches(" sext");
            let want = format!("{name}_{enc}");
            let found = lines.iter().any(|l| {
                words(l).any(|w| w == want) && l.contains(mods) && (!sext || l.contains("sext("))
            });
            if !found {
                missing.push(format!(
                    "{want} ... {mods}{}",
                    if sext { " (sext)" } else { "" }
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} listed mnemonics or forms have no per-opcode test:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn the_scanner_reads_kernel_bodies() {
    let src = "// \"not_me\"\nlet a = 'x'; let b = '\\''; fn f<'a>() {}\n\
               check(&d, \"v_add_f32_e64 v1, v2, v3\\n\\\n     s_nop 0\", |l| l);\n\
               let r = r#\"v_mov_b32_dpp v1, v0 row_shr:1\"#;";
    let lits = string_literals(src);
    assert_eq!(
        lits,
        vec![
            "v_add_f32_e64 v1, v2, v3\ns_nop 0".to_string(),
            "v_mov_b32_dpp v1, v0 row_shr:1".to_string()
        ]
    );
    assert_eq!(base("v_add_f32_e64"), "v_add_f32");
    assert_eq!(base("v_mov_b32_dpp"), "v_mov_b32");
}

/// Base mnemonics of the gfx90a code objects under `dir` (recursively).
fn mnemonics_under(dir: &std::path::Path, out: &mut BTreeSet<String>) -> usize {
    use inlay_codeobj::CodeObject;
    use inlay_isa::{Decoder, Instruction, Target};
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            n += mnemonics_under(&p, out);
            continue;
        }
        if p.extension().is_none_or(|x| x != "hsaco") {
            continue;
        }
        let bytes = std::fs::read(&p).expect("read");
        let co = CodeObject::parse(&bytes).expect("parse");
        let text = co.section(".text").expect(".text");
        let text = &bytes[text.offset as usize..(text.offset + text.size) as usize];
        let dec = Decoder::new(Target::Gfx90a);
        let (mut off, mut i) = (0, Instruction::default());
        while off + 4 <= text.len() {
            let Ok(len) = dec.decode_into(&text[off..], &mut i) else {
                break;
            };
            off += len;
            if let Some(op) = i.opcode() {
                out.insert(op.name().to_string());
            }
        }
        n += 1;
    }
    n
}

/// The list holds every mnemonic of the gfx90a fixtures (a fixture that
/// brings a new one must bring its test too), and of the librocsparse0
/// code objects when `inlay extract` has left them in /tmp/co90a.
#[test]
fn the_list_holds_every_mnemonic_of_the_code_objects() {
    let listed: BTreeSet<String> = list().into_iter().map(|(n, _)| n).collect();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/gfx90a");
    for (dir, required) in [(fixtures, true), ("/tmp/co90a".into(), false)] {
        let mut found = BTreeSet::new();
        let n = mnemonics_under(&dir, &mut found);
        assert!(
            n > 0 || !required,
            "no code objects under {}",
            dir.display()
        );
        let missing: Vec<&String> = found.difference(&listed).collect();
        assert!(
            missing.is_empty(),
            "{} has mnemonics tests/mnemonics.txt lacks (regenerate it with \
             examples/mnemonics.rs and add their tests): {missing:?}",
            dir.display()
        );
    }
}
