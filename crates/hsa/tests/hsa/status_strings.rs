//! hsa_status_string must describe every status the Debian headers define.
//! The list comes from the headers themselves; a C program compiled against
//! them asks our library for each one.

use crate::common;
use std::process::Command;

const HEADERS: [&str; 4] = [
    "hsa.h",
    "hsa_ext_amd.h",
    "hsa_ext_finalize.h",
    "hsa_ext_image.h",
];

/// Every `HSA_STATUS_*` / `HSA_EXT_STATUS_*` enumerator defined in the headers.
fn header_statuses() -> Vec<String> {
    let mut names = Vec::new();
    for h in HEADERS {
        let text = std::fs::read_to_string(format!("/usr/include/hsa/{h}")).unwrap_or_default();
        for line in text.lines() {
            let t = line.trim_start();
            if (t.starts_with("HSA_STATUS_") || t.starts_with("HSA_EXT_STATUS_")) && t.contains('=')
            {
                if let Some(name) = t.split(|c: char| c.is_whitespace() || c == '=').next() {
                    names.push(name.to_string());
                }
            }
        }
    }
    names
}

#[test]
fn every_header_status_has_a_description_naming_it() {
    let Some(cc) = common::c_compiler() else {
        common::oracle_available("a C compiler (gcc)", false);
        return;
    };
    if !common::oracle_available("/usr/include/hsa headers", common::hsa_headers_present()) {
        return;
    }
    let names = header_statuses();
    assert!(
        names.len() >= 50,
        "only {} statuses found in the headers",
        names.len()
    );
    let dir = common::lib_dir("status");
    let mut src = String::from(
        "#include <stdio.h>\n#include <string.h>\n#include <hsa/hsa.h>\n#include <hsa/hsa_ext_amd.h>\n\
         #include <hsa/hsa_ext_finalize.h>\n#include <hsa/hsa_ext_image.h>\nint main(void) {\n  int bad = 0; const char *s;\n",
    );
    for n in &names {
        src.push_str(&format!(
            "  s = NULL; if (hsa_status_string((hsa_status_t){n}, &s) != HSA_STATUS_SUCCESS || !s || strncmp(s, \"{n}\", strlen(\"{n}\")) != 0) {{ printf(\"missing {n}: %s\\n\", s ? s : \"(null)\"); bad = 1; }}\n"
        ));
    }
    src.push_str("  if (!bad) puts(\"PASS\");\n  return bad;\n}\n");
    let c = dir.join("status.c");
    std::fs::write(&c, src).expect("write C source");
    let exe = dir.join("status");
    let out = Command::new(cc)
        .arg("-o")
        .arg(&exe)
        .arg(&c)
        .arg(format!("-L{}", dir.display()))
        .arg("-lhsa-runtime64")
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe)
        .env("LD_LIBRARY_PATH", &dir)
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success() && stdout.contains("PASS"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
