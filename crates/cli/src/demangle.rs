//! Itanium C++ demangling for display: names are shown demangled next to the mangled ones.

#[cfg(test)]
use serde_json::Value;

/// Names demangled so far on this thread: a code object names each kernel
/// several times (both symbol tables, the descriptor, the metadata), and a
/// library's code objects for each target name the same kernels again.
/// Emptied when full, so it stays small.
const MEMO_CAPACITY: usize = 1 << 16;

thread_local! {
    static MEMO: std::cell::RefCell<std::collections::HashMap<String, Option<String>>> =
        Default::default();
}

/// The demangled form of `name`, if it is a mangled C++ name.
pub fn demangle(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    MEMO.with_borrow_mut(|memo| {
        if let Some(known) = memo.get(name) {
            return known.clone();
        }
        if memo.len() >= MEMO_CAPACITY {
            memo.clear();
        }
        let demangled = demangle_uncached(name);
        memo.insert(name.to_string(), demangled.clone());
        demangled
    })
}

fn demangle_uncached(name: &str) -> Option<String> {
    let base = name.strip_suffix(".kd").unwrap_or(name);
    let symbol = cpp_demangle::Symbol::new(base).ok()?;
    let text = symbol
        .demangle(&cpp_demangle::DemangleOptions::default())
        .ok()?;
    Some(if base.len() < name.len() {
        format!("{text}.kd")
    } else {
        text
    })
}

/// `name` followed by its demangled form in parentheses, when it has one.
pub fn with_demangled(name: &str) -> String {
    match demangle(name) {
        Some(d) => format!("{name} ({d})"),
        None => name.to_string(),
    }
}

/// Keys whose string values are symbol names.
#[cfg(test)]
const NAME_KEYS: &[&str] = &["name", "symbol", "kernel", "entry_symbol"];

/// Adds `"<key>_demangled": "..."` beside every name-like string field that is a mangled
/// C++ name, anywhere in the document: the documents' rule, applied to a
/// `Value`, which the tests of `crate::json` compare its output with.
#[cfg(test)]
pub fn annotate_json(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let additions: Vec<(String, Value)> = NAME_KEYS
                .iter()
                .filter_map(|key| {
                    let name = map.get(*key)?.as_str()?;
                    Some((format!("{key}_demangled"), Value::String(demangle(name)?)))
                })
                .collect();
            for v in map.values_mut() {
                annotate_json(v);
            }
            map.extend(additions);
        }
        Value::Array(items) => items.iter_mut().for_each(annotate_json),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_kernels_and_descriptors() {
        assert_eq!(
            demangle("_Z10vector_addPKfS0_Pfi").as_deref(),
            Some("vector_add(float const*, float const*, float*, int)")
        );
        assert_eq!(demangle("_Z3fooi.kd").as_deref(), Some("foo(int).kd"));
        assert_eq!(demangle("plain_c_kernel"), None);
    }

    #[test]
    fn annotates_nested_names() {
        let mut v = serde_json::json!({"kernels": [{"name": "_Z3fooi", "size": 4}], "name": "x"});
        annotate_json(&mut v);
        assert_eq!(v["kernels"][0]["name_demangled"], "foo(int)");
        assert!(v.get("name_demangled").is_none());
    }
}
