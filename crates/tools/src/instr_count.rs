//! `instr-count`: instructions each launch executed, counted by hooks
//! before every instruction (`mode=instruction`) or every basic block
//! (`mode=block`, the default), per wave (`count=wave`, the default: wave
//! instructions, as the virtual GPU counts them) or per thread
//! (`count=thread`: each instruction counts the lanes EXEC enables).

use serde_json::json;

use crate::counting::{self, Counting};
use crate::{display_name, Insertions, Kernel, Launch, Outcome, Output, Tool, ToolOptions};

pub struct InstrCount {
    how: Counting,
}

/// `mode=` and `count=` options shared by the counting tools.
pub(crate) fn counting(options: ToolOptions<'_>) -> Result<Counting, String> {
    let per_block = options.parse("mode", "block or instruction", |v| match v {
        "block" => Some(true),
        "instruction" => Some(false),
        _ => None,
    })?;
    let lanes = options.parse("count", "wave or thread", |v| match v {
        "wave" => Some(false),
        "thread" => Some(true),
        _ => None,
    })?;
    Ok(Counting {
        per_block: per_block.unwrap_or(true),
        lanes: lanes.unwrap_or(false),
    })
}

pub(crate) fn mode_name(how: Counting) -> &'static str {
    if how.per_block {
        "block"
    } else {
        "instruction"
    }
}

impl InstrCount {
    pub fn new(options: ToolOptions<'_>) -> Result<InstrCount, String> {
        Ok(InstrCount {
            how: counting(options)?,
        })
    }
}

impl Tool for InstrCount {
    fn name(&self) -> &str {
        "instr-count"
    }

    fn instrument(
        &self,
        kernel: &Kernel<'_>,
        at: &mut Insertions,
        _out: &Output,
    ) -> Result<(), String> {
        counting::instrument(kernel, at, self.how)
    }

    fn after_launch(&self, launch: &Launch, o: &Outcome<'_>, out: &Output) {
        let unit = if self.how.lanes {
            "thread instructions"
        } else {
            "wave instructions"
        };
        let name = display_name(&launch.kernel);
        let Some((e, native)) = counting::executed(launch, o).filter(|_| o.error.is_none()) else {
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
        let native = native.as_ref().map(|n| n.total());
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
            "added_instructions": o.added_instructions(),
            "error": o.error,
        }));
    }
}
