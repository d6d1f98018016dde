//! What a tool asks for in one kernel: calls to its compiled hooks at
//! points, with arguments (the NVBit way: insert a call before or after an
//! instruction, then add its arguments), and the engine's built-in hooks
//! (counters and trace records, the cheapest hooks there are).
//!
//! A tool fills an [`Insertions`] once per kernel; the host merges those of
//! every tool attached into one instrumented copy of the kernel and keeps
//! it for later launches. Points, arguments and launch values are the
//! engine's ([`inlay_instrument::hooks`]).

use std::any::Any;
use std::sync::Arc;

use inlay_instrument::hooks::{Arg, HookCall, Placement, Point};
use inlay_instrument::rewrite::{LaneValue, Value};

/// One of this tool's u64 counters, zeroed before each launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Counter(pub(crate) usize);

/// One of this tool's trace buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub(crate) usize);

/// A built-in hook, with this tool's counter and trace numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    Count {
        counter: Counter,
        lanes: bool,
    },
    Add {
        counter: Counter,
        value: Value,
    },
    Record {
        trace: TraceId,
        id: u32,
        value: Value,
    },
    RecordLanes {
        trace: TraceId,
        id: u32,
        value: LaneValue,
    },
}

/// A tool's requests for one kernel.
#[derive(Default)]
pub struct Insertions {
    /// Calls to the tool's hooks (`module` is set when merged).
    pub(crate) calls: Vec<HookCall>,
    pub(crate) builtins: Vec<(usize, Builtin)>,
    pub(crate) counters: usize,
    /// Capacity in bytes of each trace.
    pub(crate) traces: Vec<u32>,
    pub(crate) kept: Option<Arc<dyn Any + Send + Sync>>,
    instructions: usize,
}

impl Insertions {
    pub(crate) fn new(instructions: usize) -> Insertions {
        Insertions {
            instructions,
            ..Insertions::default()
        }
    }

    fn check(&self, i: usize) -> Result<(), String> {
        if i < self.instructions {
            Ok(())
        } else {
            Err(format!(
                "instruction {i} does not exist (the kernel has {})",
                self.instructions
            ))
        }
    }

    /// Calls `hook` (a function of the tool's hook module) at `point` with
    /// `args`, in every lane EXEC enables there or once per wave.
    pub fn call(
        &mut self,
        point: Point,
        hook: &str,
        args: &[Arg],
        once_per_wave: bool,
    ) -> Result<(), String> {
        if let Point::Before(i) | Point::After(i) = point {
            self.check(i)?;
        }
        // (Calls in a row mostly name one hook: its name is shared.)
        let hook = match self.calls.last() {
            Some(c) if *c.hook == *hook => c.hook.clone(),
            _ => hook.into(),
        };
        self.calls.push(HookCall {
            point,
            module: 0,
            hook,
            args: args.to_vec(),
            once_per_wave,
            placement: Default::default(),
        });
        Ok(())
    }

    /// Forces the last call inserted to be inlined ([`Placement::Inline`]:
    /// an error at instrumentation when the hook's code does not allow it)
    /// or called ([`Placement::Call`]); by default the engine chooses.
    pub fn place(&mut self, placement: Placement) -> Result<(), String> {
        self.calls
            .last_mut()
            .map(|c| c.placement = placement)
            .ok_or_else(|| "no call inserted yet to place".to_string())
    }

    /// Adds an argument to the last call inserted (NVBit's style).
    pub fn add_arg(&mut self, arg: Arg) -> Result<(), String> {
        self.calls
            .last_mut()
            .map(|c| c.args.push(arg))
            .ok_or_else(|| "no call inserted yet to add an argument to".to_string())
    }

    /// A new u64 counter of this tool, zeroed before each launch.
    pub fn counter(&mut self) -> Counter {
        self.counters += 1;
        Counter(self.counters - 1)
    }

    /// Adds 1 to `counter` before instruction `i`, once per wave that gets
    /// there, or the number of lanes EXEC enables there if `lanes`.
    pub fn count(&mut self, i: usize, counter: Counter, lanes: bool) -> Result<(), String> {
        self.check(i)?;
        self.builtins.push((i, Builtin::Count { counter, lanes }));
        Ok(())
    }

    /// Adds `value` to `counter` before `i`, once per wave.
    pub fn add(&mut self, i: usize, counter: Counter, value: Value) -> Result<(), String> {
        self.check(i)?;
        self.builtins.push((i, Builtin::Add { counter, value }));
        Ok(())
    }

    /// A new trace buffer of `capacity` bytes, emptied before each launch.
    pub fn trace(&mut self, capacity: u32) -> TraceId {
        self.traces.push(capacity);
        TraceId(self.traces.len() - 1)
    }

    /// Before `i`, each wave appends a record of `value` with `id`
    /// ([`inlay_instrument::rewrite::SCALAR_RECORD`] bytes).
    pub fn record(
        &mut self,
        i: usize,
        trace: TraceId,
        id: u32,
        value: Value,
    ) -> Result<(), String> {
        self.check(i)?;
        self.builtins
            .push((i, Builtin::Record { trace, id, value }));
        Ok(())
    }

    /// Before `i`, each wave with a lane on appends a record of `value` in
    /// every lane ([`inlay_instrument::rewrite::LANE_RECORD`] bytes).
    pub fn record_lanes(
        &mut self,
        i: usize,
        trace: TraceId,
        id: u32,
        value: LaneValue,
    ) -> Result<(), String> {
        self.check(i)?;
        self.builtins
            .push((i, Builtin::RecordLanes { trace, id, value }));
        Ok(())
    }

    /// Keeps `data` with this kernel's instrumentation; every launch's
    /// [`crate::Outcome::kept`] hands it back (what the tool needs to read
    /// its counters: which counter is which instruction, and so on).
    pub fn keep<T: Any + Send + Sync>(&mut self, data: T) {
        self.kept = Some(Arc::new(data));
    }

    /// Whether nothing was asked for: no hooks, and nothing kept to read
    /// after launches (a counting tool whose counts all follow from the
    /// launch's geometry places no hook but still reads its outcome).
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.builtins.is_empty() && self.kept.is_none()
    }
}
