//! `inlay extract`: write the code objects inside a container to files, one per code
//! object, like `clang-offload-bundler --unbundle` for every bundle at once.

use std::io::{self, Write};
use std::path::Path;

use inlay_codeobj::container::{walk, EntryKind};
use inlay_codeobj::CodeObject;

use crate::report::{Input, Problems};

/// Writes every code object in `input` whose target ID starts with `target`
/// (all when `None`) to `dir` as `NNNN-<target id>.hsaco`, and a line per file
/// written to `out`. A code object that does not parse (truncated, corrupt) is
/// not written: it is reported, like every other problem, to `problems`.
pub fn extract(
    input: &Input,
    target: Option<&str>,
    dir: &Path,
    out: &mut dyn Write,
    problems: &mut Problems,
) -> io::Result<()> {
    let name = input.name.as_str();
    if let Err(e) = std::fs::create_dir_all(dir) {
        problems.report(format!("cannot create {}: {e}", dir.display()));
        return Ok(());
    }
    let (mut matched, mut damaged) = (0usize, 0usize);
    for (index, entry) in walk(input.bytes, name).enumerate() {
        let entry = match entry {
            Ok(e) if e.kind == EntryKind::CodeObject => e,
            Ok(_) => continue,
            Err(e) => {
                problems.report(e);
                damaged += 1;
                continue;
            }
        };
        let wanted = target
            .is_none_or(|t| entry.target_id == t || entry.target_id.starts_with(&format!("{t}:")));
        if !wanted {
            continue;
        }
        matched += 1;
        if let Err(e) = CodeObject::parse(&entry.bytes) {
            problems.report(format!(
                "{}; not extracted",
                e.within(entry.location.clone())
            ));
            continue;
        }
        let file_name = format!("{index:04}-{}.hsaco", entry.target_id.replace(':', "_"));
        let path = dir.join(&file_name);
        if let Err(e) = std::fs::write(&path, &entry.bytes) {
            // The next files would fail the same way.
            problems.report(format!("cannot write {}: {e}", path.display()));
            return Ok(());
        }
        writeln!(out, "{}\t{}", path.display(), entry.location)?;
        input.release(&entry);
    }
    if matched == 0 && damaged == 0 {
        problems.report(format!(
            "{name}: no code object{} found",
            target.map_or(String::new(), |t| format!(" for {t}"))
        ));
    }
    Ok(())
}
