//! Where loaded segments live: a small trait so the loader works over the
//! virtual GPU's memory or anything else that hands out addresses.

use inlay_vgpu::memory::{MemKind, Memory};

/// Device memory as the loader needs it. Addresses are device addresses.
pub trait DeviceMemory: Send + Sync {
    /// `size` zeroed bytes aligned to `align` (a power of two).
    fn allocate(&self, size: u64, align: u64) -> Result<u64, String>;
    /// Gives back an allocation made by [`DeviceMemory::allocate`].
    fn release(&self, base: u64);
    fn write(&self, addr: u64, bytes: &[u8]) -> Result<(), String>;
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String>;
}

/// Tag of loader allocations in the allocation table (not a pool id).
pub const LOADER_TAG: u64 = u64::MAX - 0x10ad;

impl DeviceMemory for Memory {
    fn allocate(&self, size: u64, align: u64) -> Result<u64, String> {
        // Runtime kind: user frees and pool queries leave code memory alone.
        self.alloc(size, align, MemKind::Runtime, LOADER_TAG)
            .map_err(|f| f.to_string())
    }
    fn release(&self, base: u64) {
        let _ = self.free(base);
    }
    fn write(&self, addr: u64, bytes: &[u8]) -> Result<(), String> {
        self.write_bytes(addr, bytes).map_err(|f| f.to_string())
    }
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        self.read_bytes(addr, out).map_err(|f| f.to_string())
    }
}
