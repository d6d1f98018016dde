//! `inlay extract`: write the code objects inside a container to files, one per code
//! object, like `clang-offload-bundler --unbundle` for every bundle at once.

use std::path::Path;

use inlay_codeobj::container::{walk, EntryKind};

/// Writes every code object in `data` whose target ID starts with `target` (all when
/// `None`) to `dir` as `NNNN-<target id>.hsaco`; returns a line per file written.
pub fn extract(
    data: &[u8],
    name: &str,
    target: Option<&str>,
    dir: &Path,
) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut report = String::new();
    let mut written = 0usize;
    for (index, entry) in walk(data, name).enumerate() {
        let entry = entry.map_err(|e| e.to_string())?;
        if entry.kind != EntryKind::CodeObject {
            continue;
        }
        let wanted = target
            .is_none_or(|t| entry.target_id == t || entry.target_id.starts_with(&format!("{t}:")));
        if !wanted {
            continue;
        }
        let file_name = format!("{index:04}-{}.hsaco", entry.target_id.replace(':', "_"));
        let path = dir.join(&file_name);
        std::fs::write(&path, &entry.bytes)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        report.push_str(&format!("{}\t{}\n", path.display(), entry.location));
        written += 1;
    }
    if written == 0 {
        return Err(format!(
            "{name}: no code object{} found",
            target.map_or(String::new(), |t| format!(" for {t}"))
        ));
    }
    Ok(report)
}
