//! What runs kernel-dispatch packets: the virtual GPU ([`VirtualGpu`]) by
//! default, or [`NoEmulator`], which refuses every dispatch.

use std::sync::Arc;

use inlay_vgpu::{CodeRegion, Fault, FaultKind, FaultReport, Memory, Packet, Stats, Watch};

use crate::status::Status;

/// A kernel-dispatch packet as the packet processor read it from the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDispatch {
    /// Address of the queue's `hsa_queue_t`.
    pub queue: u64,
    /// Address of the packet in the ring (valid until the dispatch completes).
    pub address: u64,
    /// Packet id (the read index it was taken at).
    pub packet_id: u64,
    pub dimensions: u16,
    pub workgroup_size: [u16; 3],
    pub grid_size: [u32; 3],
    pub private_segment_size: u32,
    pub group_segment_size: u32,
    pub kernel_object: u64,
    pub kernarg_address: u64,
    /// The packet's 64 bytes (the kernel's dispatch pointer shows a copy).
    pub raw: [u8; 64],
}

/// Why a dispatch did not complete: the status a queue error reports
/// (see `crate::fault` for where it goes), a one-line message, and the
/// device's report when the kernel itself faulted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchError {
    pub status: Status,
    pub message: String,
    pub report: Option<Box<FaultReport>>,
}

impl DispatchError {
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        DispatchError {
            status,
            message: message.into(),
            report: None,
        }
    }

    /// A page fault of the GPU's virtual memory (the address and its cause):
    /// what ROCr hears about as a VM fault rather than a queue error.
    pub fn memory_fault(&self) -> Option<(u64, Fault)> {
        let r = self.report.as_ref()?;
        match (&r.kind, r.address) {
            // Addresses past the 48 bits of the GPU's virtual address space
            // are aperture violations, a queue error.
            (FaultKind::Memory(f), Some(a)) if a >> 48 == 0 => Some((a, *f)),
            _ => None,
        }
    }

    /// The dispatch was stopped from outside (its queue torn down).
    pub fn stopped(&self) -> bool {
        self.report
            .as_ref()
            .is_some_and(|r| r.kind == FaultKind::Stopped)
    }
}

pub trait Device: Send + Sync {
    /// Runs one dispatch to completion (the packet processor waits for it),
    /// or until `watch` ends it; returns its native counts when the device
    /// keeps them.
    fn dispatch(
        &self,
        packet: &KernelDispatch,
        watch: Watch<'_>,
    ) -> Result<Option<Stats>, DispatchError>;

    /// Makes the kernels of code objects already placed in device memory
    /// dispatchable; returns an id for [`Device::remove_code`].
    fn add_code(&self, regions: &[CodeRegion]) -> Result<u64, String>;

    fn remove_code(&self, id: u64);
}

/// A device that runs nothing: every dispatch fails.
pub struct NoEmulator;

impl Device for NoEmulator {
    fn dispatch(
        &self,
        packet: &KernelDispatch,
        _watch: Watch<'_>,
    ) -> Result<Option<Stats>, DispatchError> {
        Err(DispatchError::new(
            Status::InvalidCodeObject,
            format!("no device runs the kernel at {:#x}", packet.kernel_object),
        ))
    }

    fn add_code(&self, _regions: &[CodeRegion]) -> Result<u64, String> {
        Ok(0)
    }

    fn remove_code(&self, _id: u64) {}
}

/// The virtual gfx90a, over the runtime's memory.
pub struct VirtualGpu {
    gpu: inlay_vgpu::Device,
}

impl VirtualGpu {
    /// `threads` host threads run workgroups (0: all cores); the kernels'
    /// interrupts (`s_sendmsg MSG_INTERRUPT`) go to `interrupt`.
    pub fn new(memory: Arc<Memory>, threads: usize, interrupt: Arc<inlay_vgpu::Interrupt>) -> Self {
        let mut gpu = inlay_vgpu::Device::with_memory(memory, threads);
        gpu.set_interrupt(interrupt);
        // As on hardware, a kernel may run as long as it likes: what ends
        // it early is its queue's teardown or a time limit (INLAY_DISPATCH_TIMEOUT).
        gpu.set_watchdog(u64::MAX);
        VirtualGpu { gpu }
    }
}

impl Device for VirtualGpu {
    fn dispatch(
        &self,
        d: &KernelDispatch,
        watch: Watch<'_>,
    ) -> Result<Option<Stats>, DispatchError> {
        let packet = Packet::from_bytes(d.raw, d.address, d.queue, d.packet_id);
        match self.gpu.dispatch_packet(&packet, watch) {
            Ok(stats) => Ok(Some(stats)),
            Err(report) => Err(DispatchError {
                status: queue_error_status(&report.kind),
                message: report.to_string(),
                report: Some(report),
            }),
        }
    }

    fn add_code(&self, regions: &[CodeRegion]) -> Result<u64, String> {
        Ok(self.gpu.register(regions.to_vec()))
    }

    fn remove_code(&self, id: u64) {
        self.gpu.unregister(id);
    }
}

/// The status a queue error reports for each way a dispatch fails, as ROCr
/// maps the hardware's (KFD's) exception codes in `AqlQueue::ExceptionHandler`
/// (amd_aql_queue.cpp): wave memory and aperture violations, illegal
/// instructions, traps and aborts as `HSA_STATUS_ERROR_EXCEPTION`, an invalid
/// or null code object (`EC_QUEUE_PACKET_DISPATCH_CODE_INVALID`). Time limits
/// and the watchdog end waves as an abort does.
fn queue_error_status(kind: &FaultKind) -> Status {
    match kind {
        FaultKind::Memory(_)
        | FaultKind::Lds { .. }
        | FaultKind::Scratch { .. }
        | FaultKind::Misaligned { .. } => Status::MemoryApertureViolation,
        FaultKind::Unimplemented | FaultKind::IllegalInstruction | FaultKind::BadJump { .. } => {
            Status::IllegalInstruction
        }
        FaultKind::Trap(_)
        | FaultKind::Watchdog { .. }
        | FaultKind::TimeLimit { .. }
        | FaultKind::Stopped
        | FaultKind::Deadlock(_) => Status::Exception,
        FaultKind::UnknownKernel { .. } => Status::InvalidCodeObject,
        FaultKind::Launch(_) => Status::InvalidPacketFormat,
    }
}
