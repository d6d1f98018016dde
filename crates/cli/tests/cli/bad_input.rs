//! The commands on damaged files: a clear error or a partial report, never a panic.

use crate::common;

use common::*;

/// Truncations and single-byte corruptions of `data`, spread over the file.
fn mutations(data: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for cut in [
        0,
        3,
        16,
        63,
        64,
        200,
        data.len() / 3,
        data.len() / 2,
        data.len() - 1,
    ] {
        out.push(data[..cut.min(data.len())].to_vec());
    }
    for at in [
        4,
        5,
        18,
        32,
        40,
        48,
        58,
        60,
        62,
        data.len() / 2,
        data.len() - 8,
    ] {
        for value in [0x00, 0xFF, 0x7F] {
            let mut d = data.to_vec();
            if let Some(b) = d.get_mut(at) {
                *b = value;
                out.push(d);
            }
        }
    }
    out
}

#[test]
fn damaged_files_never_crash_the_commands() {
    let dir = std::env::temp_dir().join(format!("inlay-cli-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for path in fixtures(&["hsaco", "object", "bundle", "ccob", "host"])
        .iter()
        .step_by(12)
    {
        inputs.extend(mutations(&std::fs::read(path).unwrap()));
    }
    let regressions = root().join("fuzz/regressions");
    for sub in ["codeobj", "writer"] {
        for entry in std::fs::read_dir(regressions.join(sub)).unwrap() {
            inputs.push(std::fs::read(entry.unwrap().path()).unwrap());
        }
    }
    let file = dir.join("input");
    for (n, data) in inputs.iter().enumerate() {
        std::fs::write(&file, data).unwrap();
        for args in [
            &["inspect"][..],
            &["inspect", "--json"],
            &["disasm"],
            &["disasm", "--json"],
        ] {
            let out = inlay().args(args).arg(&file).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(out.status.code(), Some(0 | 1)) && !stderr.contains("panicked"),
                "input {n} ({} bytes), `inlay {}`: {:?}\n{stderr}",
                data.len(),
                args.join(" "),
                out.status
            );
            if out.status.code() == Some(1) {
                assert!(
                    stderr.starts_with("inlay: ") && stderr.len() > 8,
                    "an error says what: {stderr}"
                );
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
