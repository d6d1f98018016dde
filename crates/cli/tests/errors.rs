//! Every command fails the same way: on every kind of bad input, each of
//! `inspect` (text, `--json`, `--list`), `disasm` (text, `--json`) and
//! `extract` says what is wrong and where on standard error (`inlay: ...`,
//! naming the file), and exits with 1; whatever it could still read is
//! reported, and nothing damaged is written.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;

/// The commands, each as arguments before the input path.
const COMMANDS: &[&[&str]] = &[
    &["inspect"],
    &["inspect", "--json"],
    &["inspect", "--list"],
    &["disasm"],
    &["disasm", "--json"],
    &["extract", "-o", "OUT"],
];

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("inlay-errors-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(args: &[&str], input: &Path, out_dir: &Path) -> Output {
    let mut cmd = inlay();
    for a in args {
        cmd.arg(if *a == "OUT" {
            out_dir.as_os_str()
        } else {
            a.as_ref()
        });
    }
    cmd.arg(input).output().expect("run inlay")
}

/// Fails unless `out` is a failure that says `must` (and names the input).
fn assert_fails(what: &str, args: &[&str], input: &Path, out: &Output, must: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown = format!(
        "{what}: `inlay {} {}` exited {:?}\nstderr: {stderr}",
        args.join(" "),
        input.display(),
        out.status.code()
    );
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(!stderr.contains("panicked"), "{shown}");
    let file_name = input.file_name().unwrap().to_string_lossy();
    for line in stderr.lines() {
        assert!(line.starts_with("inlay: "), "{shown}");
    }
    assert!(
        stderr.contains(&*file_name) && stderr.contains(must),
        "{shown}\nexpected it to name {file_name} and say {must:?}"
    );
}

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(root().join("fixtures").join(path)).unwrap()
}

/// Inputs no command can read anything from, and what the error must say.
#[test]
fn unreadable_inputs_fail_every_command() {
    let scratch = Scratch::new("unreadable");
    let out_dir = scratch.0.join("out");
    let mut random = vec![0u8; 4096];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for b in &mut random {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let directory = scratch.0.join("a-directory");
    std::fs::create_dir_all(&directory).unwrap();
    let cases: Vec<(&str, PathBuf, &str)> = vec![
        (
            "a missing file",
            scratch.0.join("no-such-file"),
            "No such file",
        ),
        ("a directory", directory, "is a directory"),
        (
            "an empty file",
            scratch.file("empty", b""),
            "not a code object",
        ),
        (
            "random bytes",
            scratch.file("random", &random),
            "not a code object",
        ),
        (
            "an ELF header alone",
            scratch.file("header", &fixture("gfx90a/v5/vector_add.hsaco")[..64]),
            "extends past end",
        ),
    ];
    for (what, input, must) in &cases {
        for args in COMMANDS {
            let out = run(args, input, &out_dir);
            assert_fails(what, args, input, &out, must);
            assert!(
                out.stdout.is_empty() || args.contains(&"--json"),
                "{what}: {args:?} printed a report"
            );
        }
    }
    // Nothing was extracted from any of them.
    assert!(std::fs::read_dir(&out_dir).map_or(true, |mut d| d.next().is_none()));
}

/// Damaged inputs: truncated or corrupt code objects alone and inside a
/// bundle. Each command reports the damage and fails; `extract` writes no
/// damaged code object; `inspect --json` still prints a document saying
/// where the damage is.
#[test]
fn damaged_inputs_fail_every_command_and_nothing_damaged_is_written() {
    let scratch = Scratch::new("damaged");
    let code_object = fixture("gfx90a/v5/vector_add.hsaco");
    let mut corrupt = code_object.clone();
    // e_shoff (bytes 40..48) far past the end of the file.
    corrupt[40..48].copy_from_slice(&0x7fff_0000u64.to_le_bytes());
    let bundle = fixture("bundle/vector_add.bundle");
    // Cut inside the last entry: the bundle header promises more than is there.
    let cut_bundle = &bundle[..bundle.len() - 100];
    let cases: Vec<(&str, PathBuf, &str)> = vec![
        (
            "a truncated code object",
            scratch.file("truncated.hsaco", &code_object[..code_object.len() / 2]),
            "past end",
        ),
        (
            "a corrupt section table",
            scratch.file("corrupt.hsaco", &corrupt),
            "section header",
        ),
        (
            "a truncated bundle",
            scratch.file("cut.bundle", cut_bundle),
            "cut.bundle",
        ),
    ];
    for (what, input, must) in &cases {
        for args in COMMANDS {
            let out_dir = scratch.0.join(format!("out-{}", args.join("")));
            let out = run(args, input, &out_dir);
            assert_fails(what, args, input, &out, must);
            if args == &["inspect", "--json"] {
                let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
                    .unwrap_or_else(|e| panic!("{what}: inspect --json is not JSON: {e}"));
                let said = doc["errors"].as_array().is_some_and(|e| !e.is_empty())
                    || doc["entries"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|e| e["error"].is_string());
                assert!(
                    said,
                    "{what}: the JSON document does not say what is damaged:\n{doc}"
                );
            }
            // Whatever extract wrote is a whole code object that parses.
            for file in std::fs::read_dir(&out_dir).into_iter().flatten() {
                let bytes = std::fs::read(file.unwrap().path()).unwrap();
                assert!(
                    inlay_codeobj::CodeObject::parse(&bytes).is_ok(),
                    "{what}: extract wrote a damaged code object"
                );
            }
        }
    }
}

/// `--kernel` naming no kernel is an error for every command that takes it,
/// in a code object and in a host binary's handle table alike.
#[test]
fn a_kernel_that_is_not_there_is_an_error() {
    for input in [
        root().join("fixtures/gfx90a/v5/vector_add.hsaco"),
        root().join("fixtures/host/vector_add_host"),
    ] {
        for args in [
            &["inspect", "--kernel", "no_such_kernel"][..],
            &["inspect", "--json", "--kernel", "no_such_kernel"],
            &["disasm", "--kernel", "no_such_kernel"],
            &["disasm", "--json", "--kernel", "no_such_kernel"],
        ] {
            let out = run(args, &input, Path::new("."));
            assert_fails(
                "--kernel no_such_kernel",
                args,
                &input,
                &out,
                "no_such_kernel",
            );
        }
        // The same commands with a kernel that is there succeed.
        for args in [&["inspect", "--kernel"][..], &["disasm", "--kernel"]] {
            let out = inlay()
                .args(args)
                .arg("vector_add")
                .arg(&input)
                .output()
                .unwrap();
            assert!(
                out.status.success() && !out.stdout.is_empty(),
                "{args:?} {}: {}",
                input.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Several files: a bad one is reported in its turn and the others are
/// still listed, in order; the exit code says something failed.
#[test]
fn disasm_lists_the_good_files_around_a_bad_one() {
    let scratch = Scratch::new("several");
    let good = root().join("fixtures/gfx90a/v5/vector_add.hsaco");
    let bad = scratch.file("bad.hsaco", b"not a code object");
    let out = inlay()
        .arg("disasm")
        .args([&good, &bad, &good])
        .output()
        .unwrap();
    assert_fails(
        "a bad file among good ones",
        &["disasm"],
        &bad,
        &out,
        "not a code object",
    );
    let alone = inlay().arg("disasm").arg(&good).output().unwrap();
    assert!(alone.status.success());
    let twice = [alone.stdout.as_slice(), alone.stdout.as_slice()].concat();
    assert_eq!(out.stdout, twice, "the good files' listings, in order");
}

/// A closed pipe (`inlay ... | head`) ends a command quietly and successfully.
#[test]
fn a_closed_pipe_is_not_an_error() {
    // Far more output than a pipe holds, so writing must meet the closed end.
    let good = root().join("fixtures/gfx90a/v5/vector_add.hsaco");
    let files = vec![good; 64];
    for args in [&["disasm"][..], &["disasm", "--json"]] {
        let mut child = inlay()
            .args(args)
            .args(&files)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{args:?}: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
