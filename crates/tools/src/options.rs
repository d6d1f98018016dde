//! Tool options: `KEY=VALUE` pairs given to every attached tool (or
//! `TOOL:KEY=VALUE`, to one), and which of them some tool used.
//!
//! Tools do not declare their keys: each reads the ones it knows through
//! [`ToolOptions::get`], and once every tool has read its options, any pair
//! that no tool read is an unknown option ([`Options::unused`]). One rule
//! then serves the built-in tools and tools loaded from shared libraries,
//! and a typo (`mod=instruction`) is refused instead of ignored.

use std::sync::atomic::{AtomicBool, Ordering};

/// Keys the host itself reads, whatever the tools: where text and JSON go.
pub const HOST_KEYS: [&str; 2] = ["output", "json"];

struct Entry {
    tool: Option<String>,
    key: String,
    value: String,
    used: AtomicBool,
}

/// Every option given, in order.
pub struct Options {
    entries: Vec<Entry>,
    /// Tools are being built only to check them (`inlay run`, before the
    /// program starts), not to run.
    pub checking: bool,
}

impl Options {
    /// Parses `KEY=VALUE` pairs separated by `;` (as in `INLAY_TOOL_OPTS`);
    /// a key may be `TOOL:KEY` to reach one tool only.
    pub fn parse(s: &str) -> Result<Options, String> {
        let entries = s
            .split(';')
            .filter(|p| !p.trim().is_empty())
            .map(|p| {
                let (k, v) = p
                    .split_once('=')
                    .ok_or_else(|| format!("tool option '{p}' is not KEY=VALUE"))?;
                let (tool, key) = match k.trim().split_once(':') {
                    Some((t, k)) => (Some(t.trim().to_string()), k.trim().to_string()),
                    None => (None, k.trim().to_string()),
                };
                if key.is_empty() {
                    return Err(format!("tool option '{p}' has no key"));
                }
                Ok(Entry {
                    tool,
                    key,
                    value: v.trim().to_string(),
                    used: AtomicBool::new(false),
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Options {
            entries,
            checking: false,
        })
    }

    /// The options tool `name` sees: unscoped ones and those scoped to it.
    pub fn for_tool<'a>(&'a self, name: &'a str) -> ToolOptions<'a> {
        ToolOptions { all: self, name }
    }

    /// The value the host reads for `key` (one of [`HOST_KEYS`]).
    pub fn host(&self, key: &str) -> Option<&str> {
        self.for_tool("").get(key)
    }

    /// Options given to a tool that no tool read: `Err` naming them.
    pub fn unused(&self, tools: &[String]) -> Result<(), String> {
        let unknown: Vec<String> = self
            .entries
            .iter()
            .filter(|e| !e.used.load(Ordering::Relaxed))
            .map(|e| match &e.tool {
                Some(t) => format!("{t}:{}={}", e.key, e.value),
                None => format!("{}={}", e.key, e.value),
            })
            .collect();
        let scoped_elsewhere = self
            .entries
            .iter()
            .filter_map(|e| e.tool.as_deref())
            .find(|t| !tools.iter().any(|n| n == t));
        if let Some(t) = scoped_elsewhere {
            return Err(format!(
                "tool option for {t}, which is not attached (tools: {})",
                tools.join(", ")
            ));
        }
        match unknown.as_slice() {
            [] => Ok(()),
            [one] => Err(format!(
                "unknown tool option {one}: no attached tool ({}) reads it{}",
                tools.join(", "),
                host_note()
            )),
            many => Err(format!(
                "unknown tool options {}: no attached tool ({}) reads them{}",
                many.join(", "),
                tools.join(", "),
                host_note()
            )),
        }
    }
}

fn host_note() -> String {
    format!("; every tool takes {}=PATH", HOST_KEYS.join("=PATH, "))
}

/// One tool's view of the options; reading a key marks it used.
#[derive(Clone, Copy)]
pub struct ToolOptions<'a> {
    all: &'a Options,
    name: &'a str,
}

impl<'a> ToolOptions<'a> {
    /// Options with no options at all (for tools built in code).
    pub fn none() -> ToolOptions<'static> {
        static EMPTY: Options = Options {
            entries: Vec::new(),
            checking: false,
        };
        ToolOptions {
            all: &EMPTY,
            name: "",
        }
    }

    /// The value of `key` (the last one given, if several).
    pub fn get(&self, key: &str) -> Option<&'a str> {
        let mut found = None;
        for e in &self.all.entries {
            let mine = e.tool.as_deref().is_none_or(|t| t == self.name);
            if mine && e.key == key {
                e.used.store(true, Ordering::Relaxed);
                found = Some(e.value.as_str());
            }
        }
        found
    }

    /// The value of `key` parsed by `parse`, or an error naming the tool,
    /// the option and what was expected.
    pub fn parse<T>(
        &self,
        key: &str,
        expected: &str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<Option<T>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => parse(v)
                .map(Some)
                .ok_or_else(|| format!("{}: {key}={v}: expected {expected}", self.name)),
        }
    }

    /// A yes/no option (`1`, `true`, `yes`, `0`, `false`, `no`).
    pub fn flag(&self, key: &str) -> Result<Option<bool>, String> {
        self.parse(key, "1 or 0", |v| match v {
            "1" | "true" | "yes" => Some(true),
            "0" | "false" | "no" => Some(false),
            _ => None,
        })
    }

    /// The name the tool is known by in scoped options.
    pub fn tool(&self) -> &'a str {
        self.name
    }

    /// Whether the tool is built only to check its options.
    pub fn checking(&self) -> bool {
        self.all.checking
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unread_options_are_unknown() {
        let o = Options::parse("mode=instruction; mod=instruction").unwrap();
        assert_eq!(o.for_tool("instr-count").get("mode"), Some("instruction"));
        let e = o.unused(&["instr-count".into()]).unwrap_err();
        assert!(e.contains("mod=instruction") && !e.contains("mode="), "{e}");
    }

    #[test]
    fn scoped_options_reach_one_tool() {
        let o = Options::parse("a:mode=block;mode=instruction").unwrap();
        assert_eq!(o.for_tool("a").get("mode"), Some("instruction"));
        let o = Options::parse("a:mode=block").unwrap();
        assert_eq!(o.for_tool("b").get("mode"), None);
        assert_eq!(o.for_tool("a").get("mode"), Some("block"));
        assert!(o.unused(&["a".into(), "b".into()]).is_ok());
        assert!(o
            .unused(&["b".into()])
            .unwrap_err()
            .contains("not attached"));
    }

    #[test]
    fn malformed_options_are_refused() {
        assert!(Options::parse("novalue").is_err());
        assert!(Options::parse("=x").is_err());
        assert!(Options::parse(" ; ").unwrap().unused(&[]).is_ok());
    }
}
