//! Compressed offload bundles (`CCOB`): a small header followed by a zlib or
//! zstd stream whose decompressed bytes are an ordinary offload bundle.
//!
//! Header layouts (little-endian), after the 4-byte magic, u16 version, u16 method:
//! - version 1: u32 uncompressed size, u64 hash (20 bytes; payload runs to the end of its stream)
//! - version 2: u32 total size, u32 uncompressed size, u64 hash (24 bytes)
//! - version 3: u64 total size, u64 uncompressed size, u64 hash (32 bytes)
//!
//! "Total size" counts the header too. The hash is the first 8 bytes of the MD5
//! of the decompressed bytes. LLVM only prints it; we check it, because zstd
//! frames written by LLVM carry no checksum and corruption would go unnoticed.

use std::io::Read;

use super::read::{slice, u16_at, u32_at, u64_at};
use crate::{Error, Result};

pub const MAGIC: &[u8; 4] = b"CCOB";

/// Decompressing never allocates more than this up front, whatever a header claims.
const MAX_PREALLOCATION: u64 = 64 << 20;

/// Larger announced sizes are refused rather than decompressed (real ones are
/// at most hundreds of MB); a small corrupt or hostile header cannot make us
/// inflate gigabytes.
pub const MAX_UNCOMPRESSED: u64 = 4 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Zlib,
    Zstd,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Zlib => "zlib",
            Method::Zstd => "zstd",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: u16,
    pub method: Method,
    /// Bytes of header before the compressed payload.
    pub header_len: u64,
    /// Header plus payload, as recorded (versions 2 and 3).
    pub total_size: Option<u64>,
    pub uncompressed_size: u64,
    pub hash: u64,
}

impl Header {
    /// Parses and checks the header at `data[0]`; error offsets count from there.
    pub fn parse(data: &[u8]) -> Result<Header> {
        if !data.starts_with(MAGIC) {
            return Err(Error::at(0, "missing CCOB magic"));
        }
        let version = u16_at(data, 4, "CCOB version")?;
        let method = match u16_at(data, 6, "CCOB compression method")? {
            0 => Method::Zlib,
            1 => Method::Zstd,
            other => {
                return Err(Error::at(
                    6,
                    format!("unknown CCOB compression method {other}"),
                ))
            }
        };
        let (header_len, total_size, uncompressed_size, hash) = match version {
            1 => (
                20,
                None,
                u32_at(data, 8, "CCOB v1 uncompressed size")?.into(),
                u64_at(data, 12, "CCOB v1 hash")?,
            ),
            2 => (
                24,
                Some(u32_at(data, 8, "CCOB v2 total size")?.into()),
                u32_at(data, 12, "CCOB v2 uncompressed size")?.into(),
                u64_at(data, 16, "CCOB v2 hash")?,
            ),
            3 => (
                32,
                Some(u64_at(data, 8, "CCOB v3 total size")?),
                u64_at(data, 16, "CCOB v3 uncompressed size")?,
                u64_at(data, 24, "CCOB v3 hash")?,
            ),
            other => {
                return Err(Error::at(
                    4,
                    format!("unknown CCOB version {other} (known: 1, 2, 3)"),
                ))
            }
        };
        if uncompressed_size > MAX_UNCOMPRESSED {
            // Only version 3's 64-bit size field (at 16) can hold such a value.
            return Err(Error::at(
                16,
                format!("CCOB announces {uncompressed_size} uncompressed bytes, more than the {MAX_UNCOMPRESSED} accepted"),
            ));
        }
        if let Some(total) = total_size {
            if total < header_len {
                return Err(Error::at(
                    8,
                    format!("CCOB total size {total} is smaller than its {header_len}-byte header"),
                ));
            }
            if total > data.len() as u64 {
                return Err(Error::at(
                    8,
                    format!(
                        "CCOB total size {total} exceeds the {} bytes available",
                        data.len()
                    ),
                ));
            }
        }
        Ok(Header {
            version,
            method,
            header_len,
            total_size,
            uncompressed_size,
            hash,
        })
    }
}

/// A decompressed CCOB: the bundle bytes and how many input bytes the CCOB used.
#[derive(Debug, Clone)]
pub struct Decompressed {
    pub header: Header,
    pub data: Vec<u8>,
    /// Header plus the compressed stream, i.e. where the next thing may start.
    pub consumed: u64,
}

/// Decompresses the CCOB at `data[0]`. `data` may extend past it (version 1
/// records no total size; its stream's own end tells where it stops).
/// Error offsets count from `data[0]`.
pub fn decompress(data: &[u8]) -> Result<Decompressed> {
    let header = Header::parse(data)?;
    let payload_end = header.total_size.unwrap_or(data.len() as u64);
    let payload = slice(
        data,
        header.header_len,
        payload_end - header.header_len,
        "CCOB payload",
    )?;
    let corrupt = |detail: String| {
        Error::at(
            header.header_len,
            format!("corrupt {} payload: {detail}", header.method.name()),
        )
    };

    let expected = header.uncompressed_size;
    let mut out = Vec::with_capacity(expected.min(MAX_PREALLOCATION) as usize);
    // Read at most one byte more than announced, so an oversized stream is caught
    // without decompressing an arbitrarily large bomb.
    let limit = expected.saturating_add(1);
    let stream_len = match header.method {
        Method::Zlib => {
            let mut decoder = flate2::bufread::ZlibDecoder::new(payload);
            decoder
                .by_ref()
                .take(limit)
                .read_to_end(&mut out)
                .map_err(|e| corrupt(e.to_string()))?;
            decoder.total_in()
        }
        Method::Zstd => {
            let frame_len = zstd::zstd_safe::find_frame_compressed_size(payload)
                .map_err(|code| corrupt(zstd::zstd_safe::get_error_name(code).to_string()))?;
            let frame = payload.get(..frame_len).unwrap_or(payload);
            let mut decoder = zstd::stream::read::Decoder::with_buffer(frame)
                .map_err(|e| corrupt(e.to_string()))?;
            decoder
                .by_ref()
                .take(limit)
                .read_to_end(&mut out)
                .map_err(|e| corrupt(e.to_string()))?;
            frame_len as u64
        }
    };
    if out.len() as u64 != expected {
        let got = if out.len() as u64 > expected {
            "more".to_string()
        } else {
            out.len().to_string()
        };
        return Err(Error::at(
            header.header_len,
            format!(
                "CCOB header announces {expected} uncompressed bytes but the payload holds {got}"
            ),
        ));
    }
    let hash = super::md5::truncated(&out);
    if hash != header.hash {
        return Err(Error::at(
            header.header_len,
            format!(
                "decompressed bytes do not match the header's hash (recorded {:#018x}, computed {hash:#018x})",
                header.hash
            ),
        ));
    }
    let consumed = header.total_size.unwrap_or(header.header_len + stream_len);
    Ok(Decompressed {
        header,
        data: out,
        consumed,
    })
}
