//! Where tools write: text lines (standard error, or a file) and JSON Lines
//! (one object per record, to a file), both as each record is made, so
//! nothing depends on the program shutting the runtime down.

use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

pub struct Output {
    text: Mutex<Option<File>>,
    json: Mutex<Option<File>>,
}

impl Output {
    /// Text to `text` (None: standard error); JSON Lines to `json`, if given.
    pub fn new(text: Option<&str>, json: Option<&str>) -> Result<Output, String> {
        let open = |p: &str| File::create(p).map_err(|e| format!("cannot create {p}: {e}"));
        Ok(Output {
            text: Mutex::new(text.map(open).transpose()?),
            json: Mutex::new(json.map(open).transpose()?),
        })
    }

    /// Standard error only.
    pub fn stderr() -> Output {
        Output {
            text: Mutex::new(None),
            json: Mutex::new(None),
        }
    }

    pub fn line(&self, s: &str) {
        let mut g = self.text.lock().unwrap_or_else(|e| e.into_inner());
        match g.as_mut() {
            Some(f) => {
                let _ = writeln!(f, "{s}");
            }
            None => eprintln!("{s}"),
        }
    }

    pub fn json(&self, v: &serde_json::Value) {
        let mut g = self.json.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = g.as_mut() {
            let _ = writeln!(f, "{v}");
        }
    }
}
