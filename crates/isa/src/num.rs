//! Fast number formatting into a `String` (the listing's hot path; `write!`
//! costs more than decoding).

const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// Decimal.
pub(crate) fn dec(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    push_ascii(out, &buf[i..]);
}

/// Lower-case hex without leading zeros (no `0x`).
pub(crate) fn hex(out: &mut String, v: u64) {
    let digits = (64 - v.leading_zeros()).div_ceil(4).max(1) as usize;
    hex_digits(out, v, digits, HEX_LOWER);
}

fn hex_digits(out: &mut String, v: u64, digits: usize, table: &[u8; 16]) {
    let mut buf = [0u8; 16];
    let n = digits.min(16);
    for k in 0..n {
        buf[n - 1 - k] = table[((v >> (4 * k)) & 0xF) as usize];
    }
    push_ascii(out, &buf[..n]);
}

fn push_ascii(out: &mut String, b: &[u8]) {
    // digits only, always ASCII
    if let Ok(s) = core::str::from_utf8(b) {
        out.push_str(s);
    }
}
