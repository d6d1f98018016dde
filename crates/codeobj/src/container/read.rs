//! Bounds-checked little-endian reads: every failure names the field and its offset.

use crate::{Error, Result};

/// `len` bytes at `offset`, or an error saying which field did not fit.
pub(crate) fn slice<'a>(data: &'a [u8], offset: u64, len: u64, what: &str) -> Result<&'a [u8]> {
    let end = offset.checked_add(len);
    match end {
        Some(end) if end <= data.len() as u64 => Ok(&data[offset as usize..end as usize]),
        _ => Err(Error::at(
            offset,
            format!(
                "{what} ({len} bytes) extends past the end of the data ({} bytes)",
                data.len()
            ),
        )),
    }
}

pub(crate) fn u16_at(data: &[u8], offset: u64, what: &str) -> Result<u16> {
    let b = slice(data, offset, 2, what)?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

pub(crate) fn u32_at(data: &[u8], offset: u64, what: &str) -> Result<u32> {
    let mut a = [0u8; 4];
    a.copy_from_slice(slice(data, offset, 4, what)?);
    Ok(u32::from_le_bytes(a))
}

pub(crate) fn u64_at(data: &[u8], offset: u64, what: &str) -> Result<u64> {
    let mut a = [0u8; 8];
    a.copy_from_slice(slice(data, offset, 8, what)?);
    Ok(u64::from_le_bytes(a))
}

/// Shifts an error found inside a sub-buffer so its offset counts from the outer buffer.
pub(crate) fn rebase(mut err: Error, base: u64) -> Error {
    err.offset = err.offset.map(|o| o.saturating_add(base));
    err
}
