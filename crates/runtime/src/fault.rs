//! Where a failed packet or faulting kernel is reported, following ROCr:
//!
//! - A page fault of the GPU's memory (a kernel or a copy touching memory no
//!   allocation holds) goes to the system event handlers
//!   (`hsa_amd_register_system_event_handler`). If none of them returns
//!   success, the process prints "Memory access fault by GPU ..." and aborts
//!   (`Runtime::VMFaultHandler`, runtime.cpp). The queue's error callback is
//!   not called for it (`AqlQueue::ExceptionHandler` suppresses
//!   `HSA_STATUS_ERROR_MEMORY_FAULT`).
//! - Every other queue error (a malformed packet, an illegal instruction, a
//!   trap, a time limit) goes to the queue's error callback; a queue created
//!   without one gets ROCr's default, which prints "Queue at ... inactivated
//!   due to async error" and aborts (`Queue::DefaultErrorHandler`, queue.cpp).
//!
//! Either way the queue processes nothing more and the packet's completion
//! signal is left alone. A kernel that faulted also gets Inlay's own report
//! on standard error (kernel, workgroup, wave, lane, PC, instruction,
//! address, nearest allocation), under ROCr's line where ROCr prints one:
//! ROCr's callbacks and handlers are only told a status and an address, and
//! a program's callback typically aborts with just that. The switches
//! `HSA_ENABLE_VM_FAULT_MESSAGE=0` and
//! `HSA_ENABLE_QUEUE_FAULT_MESSAGE=0` are honoured as ROCr honours them: the
//! first silences the message (the process still aborts), the second
//! silences the default handler entirely (no message, no abort).

use crate::device::DispatchError;
use crate::queue::Queue;
use crate::status::status_text;
use crate::{agent, Shared, SystemEvent};
use inlay_vgpu::{Fault, FaultKind};

/// ROCr's message switches, read once when the runtime starts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Messages {
    vm_fault: bool,
    queue_fault: bool,
}

impl Messages {
    pub(crate) fn from_env() -> Self {
        let on = |name| std::env::var(name).map_or(true, |v| v != "0");
        Messages {
            vm_fault: on("HSA_ENABLE_VM_FAULT_MESSAGE"),
            queue_fault: on("HSA_ENABLE_QUEUE_FAULT_MESSAGE"),
        }
    }
}

/// Packet `read` of queue `q` failed with `e` (the queue is already inactive).
pub(crate) fn queue_error(shared: &Shared, q: &Queue, read: u64, e: &DispatchError) {
    shared.log(&format!("queue {}: packet {read}: {}", q.id, e.message));
    let kernel_report = e
        .report
        .as_ref()
        .filter(|r| {
            !matches!(
                r.kind,
                FaultKind::Launch(_) | FaultKind::UnknownKernel { .. }
            )
        })
        .map(|r| r.detail());
    if let Some((address, fault)) = e.memory_fault() {
        memory_fault(
            shared,
            address,
            fault,
            kernel_report.as_deref().unwrap_or(""),
        );
        return;
    }
    if let Some(cb) = &q.on_error {
        if let Some(detail) = &kernel_report {
            eprint!("{}", indent(detail));
        }
        cb(e.status, q.addr);
        return;
    }
    if !shared.messages.queue_fault {
        return;
    }
    let text = status_text(e.status.code()).unwrap_or("unknown status");
    let detail = match &e.report {
        Some(r) => r.detail(),
        None => format!("{}\n", e.message),
    };
    eprint!(
        "Queue at {:#x} inactivated due to async error:\n\t{}\n{}",
        q.addr,
        text.trim_end_matches('\0'),
        indent(&detail)
    );
    std::process::abort();
}

/// A page fault at `address`: the system event handlers get it; unhandled,
/// the process ends as ROCr ends it. `detail` says who faulted and where.
pub(crate) fn memory_fault(shared: &Shared, address: u64, fault: Fault, detail: &str) {
    let handled = shared.report(SystemEvent::MemoryFault {
        agent: agent::GPU,
        address,
        fault,
    });
    if handled {
        eprint!("{}", indent(detail));
        return;
    }
    if shared.messages.vm_fault {
        eprint!(
            "Memory access fault by GPU node-{} on address {:#x}. \
             Reason: Page not present or supervisor privilege.\n{}",
            agent::virtual_gfx90a().node,
            address,
            indent(detail)
        );
    }
    std::process::abort();
}

/// Inlay's report lines under ROCr's, each marked as ours.
fn indent(detail: &str) -> String {
    detail.lines().map(|l| format!("inlay: {l}\n")).collect()
}
