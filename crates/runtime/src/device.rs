//! What runs kernel-dispatch packets: the virtual GPU ([`VirtualGpu`]) by
//! default, or [`NoEmulator`], which refuses every dispatch.

use std::sync::Arc;

use inlay_vgpu::{CodeRegion, FaultKind, Memory, Packet, Stats};

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

/// Why a dispatch did not complete; `status` goes to the queue's error
/// callback; a memory fault (its address and cause) also goes to the
/// system event handlers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchError {
    pub status: Status,
    pub message: String,
    pub fault: Option<(u64, inlay_vgpu::Fault)>,
}

impl DispatchError {
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        DispatchError {
            status,
            message: message.into(),
            fault: None,
        }
    }
}

pub trait Device: Send + Sync {
    /// Runs one dispatch to completion (the packet processor waits for it);
    /// returns its native counts when the device keeps them.
    fn dispatch(&self, packet: &KernelDispatch) -> Result<Option<Stats>, DispatchError>;

    /// Makes the kernels of code objects already placed in device memory
    /// dispatchable; returns an id for [`Device::remove_code`].
    fn add_code(&self, regions: &[CodeRegion]) -> Result<u64, String>;

    fn remove_code(&self, id: u64);
}

/// A device that runs nothing: every dispatch fails.
pub struct NoEmulator;

impl Device for NoEmulator {
    fn dispatch(&self, packet: &KernelDispatch) -> Result<Option<Stats>, DispatchError> {
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
        let gpu = inlay_vgpu::Device::with_memory(memory, threads);
        gpu.set_interrupt(interrupt);
        VirtualGpu { gpu }
    }
}

impl Device for VirtualGpu {
    fn dispatch(&self, d: &KernelDispatch) -> Result<Option<Stats>, DispatchError> {
        let packet = Packet::from_bytes(d.raw, d.address, d.queue, d.packet_id);
        match self.gpu.dispatch_packet(&packet) {
            Ok(stats) => Ok(Some(stats)),
            Err(report) => {
                let status = match &report.kind {
                    FaultKind::Memory(_)
                    | FaultKind::Lds { .. }
                    | FaultKind::Scratch { .. }
                    | FaultKind::Misaligned { .. } => Status::MemoryApertureViolation,
                    FaultKind::Unimplemented | FaultKind::BadJump { .. } => {
                        Status::IllegalInstruction
                    }
                    FaultKind::Trap(_) | FaultKind::Watchdog { .. } => Status::Exception,
                    FaultKind::Launch(_) => Status::InvalidPacketFormat,
                };
                let fault = match report.kind {
                    FaultKind::Memory(f) => Some((report.address.unwrap_or(0), f)),
                    _ => None,
                };
                Err(DispatchError {
                    status,
                    message: report.to_string(),
                    fault,
                })
            }
        }
    }

    fn add_code(&self, regions: &[CodeRegion]) -> Result<u64, String> {
        Ok(self.gpu.register(regions.to_vec()))
    }

    fn remove_code(&self, id: u64) {
        self.gpu.unregister(id);
    }
}
