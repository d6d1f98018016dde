//! `opcode-hist`: how often each opcode ran in each launch, from the same
//! counting hooks as `instr-count` (`mode=block|instruction`,
//! `count=wave|thread`), compared with the virtual GPU's own per-opcode
//! counts when counting waves.

use std::collections::BTreeMap;

use serde_json::json;

use crate::counting::{self, Counting, Executed};
use crate::instr_count::{counting as options_counting, mode_name};
use crate::{display_name, Insertions, Kernel, Launch, Outcome, Output, Tool, ToolOptions};

pub struct OpcodeHist {
    how: Counting,
}

impl OpcodeHist {
    pub fn new(options: ToolOptions<'_>) -> Result<OpcodeHist, String> {
        Ok(OpcodeHist {
            how: options_counting(options)?,
        })
    }
}

fn histogram(e: &Executed) -> BTreeMap<&'static str, u64> {
    let mut hist = BTreeMap::new();
    for &(_, op, n) in &e.per_instruction {
        if n > 0 {
            *hist.entry(op).or_default() += n;
        }
    }
    hist
}

impl Tool for OpcodeHist {
    fn name(&self) -> &str {
        "opcode-hist"
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
        let name = display_name(&launch.kernel);
        let Some((e, native)) = counting::executed(launch, o).filter(|_| o.error.is_none()) else {
            let why = o.error.as_deref().unwrap_or("not instrumented");
            out.line(&format!(
                "opcode-hist: kernel {} {name}: no histogram ({why})",
                launch.index
            ));
            out.json(&json!({
                "tool": "opcode-hist",
                "launch": launch.index,
                "kernel": launch.kernel,
                "error": why,
            }));
            return;
        };
        let hist = histogram(&e);
        let agrees = native.as_ref().map(|n| histogram(n) == hist);
        let note = match agrees {
            Some(true) => " (the virtual GPU counted the same)",
            Some(false) => " (MISMATCH with the virtual GPU's counts)",
            None => "",
        };
        out.line(&format!(
            "opcode-hist: kernel {} {name}: {} opcodes, hooks per {}{note}",
            launch.index,
            hist.len(),
            mode_name(self.how)
        ));
        let mut rows: Vec<(&str, u64)> = hist.iter().map(|(k, v)| (*k, *v)).collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        for (op, n) in &rows {
            out.line(&format!("  {n:>12}  {op}"));
        }
        out.json(&json!({
            "tool": "opcode-hist",
            "launch": launch.index,
            "kernel": launch.kernel,
            "mode": mode_name(self.how),
            "count": if self.how.lanes { "thread" } else { "wave" },
            "histogram": hist,
            "matches_native": agrees,
        }));
    }
}
