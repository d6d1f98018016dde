//! Kernel arguments: a builder for the explicit ones, and the hidden ones
//! filled from the metadata's argument list as HIP / ROCr would.

use inlay_codeobj::metadata::KernelArg;

/// Explicit arguments, each placed at its natural alignment (as clang lays them out).
#[derive(Clone, Debug, Default)]
pub struct Args {
    bytes: Vec<u8>,
}

impl Args {
    pub fn new() -> Self {
        Self::default()
    }
    fn push(mut self, data: &[u8], align: usize) -> Self {
        while !self.bytes.len().is_multiple_of(align) {
            self.bytes.push(0);
        }
        self.bytes.extend_from_slice(data);
        self
    }
    pub fn u8(self, v: u8) -> Self {
        self.push(&[v], 1)
    }
    pub fn u16(self, v: u16) -> Self {
        self.push(&v.to_le_bytes(), 2)
    }
    pub fn u32(self, v: u32) -> Self {
        self.push(&v.to_le_bytes(), 4)
    }
    pub fn i32(self, v: i32) -> Self {
        self.push(&v.to_le_bytes(), 4)
    }
    pub fn f32(self, v: f32) -> Self {
        self.push(&v.to_le_bytes(), 4)
    }
    pub fn u64(self, v: u64) -> Self {
        self.push(&v.to_le_bytes(), 8)
    }
    pub fn f64(self, v: f64) -> Self {
        self.push(&v.to_le_bytes(), 8)
    }
    /// A device pointer.
    pub fn ptr(self, v: u64) -> Self {
        self.u64(v)
    }
    /// Raw bytes at an alignment (structs, vectors).
    pub fn bytes(self, data: &[u8], align: usize) -> Self {
        self.push(data, align.max(1))
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// What hidden arguments are made of for one dispatch.
pub struct Hidden {
    pub grid: [u32; 3],
    pub wg_size: [u32; 3],
    pub queue_ptr: u64,
}

/// Writes every hidden argument the metadata lists into `kernarg`; arguments
/// that do not fit are skipped (the buffer is sized from the descriptor).
pub fn fill_hidden(args: &[KernelArg], h: &Hidden, kernarg: &mut [u8]) {
    let dims = if h.grid[2] > 1 {
        3
    } else if h.grid[1] > 1 {
        2
    } else {
        1
    };
    for a in args {
        let d = match a.value_kind.as_bytes().last() {
            Some(b'x') => 0,
            Some(b'y') => 1,
            Some(b'z') => 2,
            _ => 0,
        };
        let v: u64 = match a.value_kind.as_str() {
            // Whole workgroups only, as ROCclr writes it (rocvirtual.cpp:
            // global size / local size); the partial one is in the remainder,
            // and HIP's gridDim adds one when that is not zero.
            "hidden_block_count_x" | "hidden_block_count_y" | "hidden_block_count_z" => {
                (h.grid[d] / h.wg_size[d].max(1)) as u64
            }
            "hidden_group_size_x" | "hidden_group_size_y" | "hidden_group_size_z" => {
                h.wg_size[d] as u64
            }
            "hidden_remainder_x" | "hidden_remainder_y" | "hidden_remainder_z" => {
                (h.grid[d] % h.wg_size[d].max(1)) as u64
            }
            "hidden_grid_dims" => dims,
            "hidden_queue_ptr" => h.queue_ptr,
            // Global offsets, printf/hostcall buffers, default queue, completion
            // action, multigrid sync, heap, dynamic LDS size, apertures: zero.
            k if k.starts_with("hidden_") => 0,
            _ => continue,
        };
        let (off, size) = (a.offset as usize, a.size as usize);
        if let Some(slot) = kernarg.get_mut(off..off.saturating_add(size)) {
            let b = v.to_le_bytes();
            let n = size.min(8);
            slot[..n].copy_from_slice(&b[..n]);
        }
    }
}
