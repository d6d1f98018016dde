//! `instr-count`: instructions each launch executed, counted by hooks
//! before every instruction (`mode=instruction`) or every basic block
//! (`mode=block`, the default), per wave (`count=wave`, the default: wave
//! instructions, as the virtual GPU counts them) or per thread
//! (`count=thread`: each instruction counts the lanes EXEC enables).

use serde_json::json;

use crate::{display_name, Counting, Instrument, Launch, Outcome, Output, Tool};

pub struct InstrCount {
    how: Counting,
}

/// `mode=` and `count=` options shared by the counting tools.
pub(crate) fn counting(options: &[(String, String)], tool: &str) -> Result<Counting, String> {
    let mut how = Counting {
        per_block: true,
        lanes: false,
    };
    for (k, v) in options {
        match (k.as_str(), v.as_str()) {
            ("mode", "block") => how.per_block = true,
            ("mode", "instruction") => how.per_block = false,
            ("count", "wave") => how.lanes = false,
            ("count", "thread") => how.lanes = true,
            ("mode" | "count", _) => {
                return Err(format!(
                    "{tool}: {k}={v}: expected mode=block|instruction, count=wave|thread"
                ))
            }
            _ => {}
        }
    }
    Ok(how)
}

pub(crate) fn mode_name(how: Counting) -> &'static str {
    if how.per_block {
        "block"
    } else {
        "instruction"
    }
}

impl InstrCount {
    pub fn new(options: &[(String, String)]) -> Result<InstrCount, String> {
        Ok(InstrCount {
            how: counting(options, "instr-count")?,
        })
    }
}

impl Tool for InstrCount {
    fn name(&self) -> &'static str {
        "instr-count"
    }

    fn before_launch(&self, _launch: &Launch, _out: &Output) -> Option<Instrument> {
        Some(Instrument::Count(self.how))
    }

    fn after_launch(&self, launch: &Launch, o: &Outcome, out: &Output) {
        let unit = if self.how.lanes {
            "thread instructions"
        } else {
            "wave instructions"
        };
        let name = display_name(&launch.kernel);
        let Some(e) = &o.executed else {
            let why = o.error.as_deref().unwrap_or("not instrumented");
            out.line(&format!(
                "instr-count: kernel {} {name}: no count ({why})",
                launch.index
            ));
            out.json(&json!({
                "tool": "instr-count",
                "launch": launch.index,
                "kernel": launch.kernel,
                "error": why,
            }));
            return;
        };
        let total = e.total();
        // The virtual GPU counts wave and thread instructions itself: say
        // whether the hooks agree (they must).
        let native = o.native_executed.as_ref().map(|n| n.total());
        let check = match native {
            Some(n) if n == total => " (the virtual GPU counted the same)".to_string(),
            Some(n) => format!(" (MISMATCH: the virtual GPU counted {n})"),
            None => String::new(),
        };
        out.line(&format!(
            "instr-count: kernel {} {name}: {total} {unit}, hooks per {}{check}",
            launch.index,
            mode_name(self.how)
        ));
        out.json(&json!({
            "tool": "instr-count",
            "launch": launch.index,
            "kernel": launch.kernel,
            "mode": mode_name(self.how),
            "count": if self.how.lanes { "thread" } else { "wave" },
            "instructions": total,
            "native_instructions": native,
            "dispatch_wave_instructions": o.native.as_ref().map(|s| s.instructions),
            "added_instructions": e.added_instructions,
            "error": o.error,
        }));
    }
}
