//! What runs kernel-dispatch packets. The virtual GPU implements [`Device`];
//! until it does, [`NoEmulator`] refuses every dispatch with an error that the
//! queue reports through its error callback.

use crate::status::Status;

/// A kernel-dispatch packet as the packet processor read it from the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDispatch {
    /// Address of the queue's `hsa_queue_t`.
    pub queue: u64,
    /// Packet id (the read index it was taken at).
    pub packet_id: u64,
    pub dimensions: u16,
    pub workgroup_size: [u16; 3],
    pub grid_size: [u32; 3],
    pub private_segment_size: u32,
    pub group_segment_size: u32,
    pub kernel_object: u64,
    pub kernarg_address: u64,
}

/// Why a dispatch could not run; `status` goes to the queue's error callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchError {
    pub status: Status,
    pub message: String,
}

pub trait Device: Send + Sync {
    /// Runs one dispatch to completion (the packet processor waits for it).
    fn dispatch(&self, packet: &KernelDispatch) -> Result<(), DispatchError>;
}

/// The device used until the emulator exists: every dispatch fails.
pub struct NoEmulator;

impl Device for NoEmulator {
    fn dispatch(&self, packet: &KernelDispatch) -> Result<(), DispatchError> {
        if packet.kernel_object == 0 {
            return Err(DispatchError {
                status: Status::InvalidPacketFormat,
                message: "kernel dispatch with a null kernel_object".into(),
            });
        }
        Err(DispatchError {
            status: Status::InvalidCodeObject,
            message: format!(
                "no kernel is loaded at {:#x}: code objects cannot be loaded yet",
                packet.kernel_object
            ),
        })
    }
}
