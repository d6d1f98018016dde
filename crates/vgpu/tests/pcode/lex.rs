//! Tokens of AMD's ISA pseudo-code (the language of the `PCODE` table in
//! tinygrad's `str_pcode.py`, which is text from AMD's CDNA ISA document).
//!
//! The language is C-like with hardware notation: sized literals and casts
//! (`1'1U`, `16'4`, `64'U(x)`, `32'F(x)`), bit slices (`x[31 : 0]`), typed
//! views (`S0.f32`), `<>` for "not equal", `**` for powers, and keyword
//! blocks (`if … then … elsif … else … endif`, `for i in a : b do … endfor`).

/// Kind of a sized literal or cast: unsigned, signed, float, raw bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    U,
    I,
    F,
    B,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    /// Integer literal: value, width in bits, signed.
    Int(u128, u32, bool),
    /// Float literal: value, width (32 with an `F` suffix, else 64).
    Float(f64, u32),
    /// `64'U(` and friends: width and kind (the `(` follows as its own token).
    Cast(u32, Kind),
    Punct(&'static str),
    /// End of a statement: a newline or `;`.
    End,
}

const PUNCTS: [&str; 33] = [
    "**", "<<", ">>", "<=", ">=", "==", "!=", "<>", "&&", "||", "+=", "-=", "(", ")", "[", "]",
    "{", "}", ",", ":", ".", "?", "=", "<", ">", "+", "-", "*", "/", "&", "|", "^", "~",
];

/// Splits `src` into tokens; comments (`// …`) are dropped.
pub fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'\n' || c == b';' {
            out.push(Tok::End);
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(src[s..i].to_string()));
            continue;
        }
        if c.is_ascii_digit() {
            let (tok, n) = number(&src[i..])?;
            out.push(tok);
            i += n;
            continue;
        }
        if c == b'!' && b.get(i + 1) != Some(&b'=') {
            out.push(Tok::Punct("!"));
            i += 1;
            continue;
        }
        match PUNCTS.iter().find(|p| src[i..].starts_with(**p)) {
            Some(p) => {
                out.push(Tok::Punct(p));
                i += p.len();
            }
            None => return Err(format!("unexpected character {:?} at {i}", c as char)),
        }
    }
    out.push(Tok::End);
    Ok(out)
}

/// A number starting `s`: a sized literal or cast (`N'…`), a float, or an
/// integer with C suffixes (`U`, `LL`, `ULL`). Returns the token and its length.
fn number(s: &str) -> Result<(Tok, usize), String> {
    let b = s.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if b.get(digits) == Some(&b'\'') {
        let width: u32 = s[..digits].parse().map_err(|e| format!("{e}"))?;
        let rest = &s[digits + 1..];
        let r = rest.as_bytes();
        // A cast or a type (`64'U(x)`, `declare tmp : 64'B`); `16'BF` is bf16.
        let letters = r.iter().take_while(|c| c.is_ascii_alphabetic()).count();
        if letters > 0 {
            let kind = match &rest[..letters] {
                "U" => Kind::U,
                "I" => Kind::I,
                "F" | "BF" => Kind::F,
                "B" => Kind::B,
                k => return Err(format!("unknown cast kind {k}")),
            };
            return Ok((Tok::Cast(width, kind), digits + 1 + letters));
        }
        // A sized literal: `1'1U`, `16'4`, `8'0x7f`.
        let (v, n) = int_digits(rest)?;
        let mut len = digits + 1 + n;
        let signed = match r.get(n) {
            Some(b'U') => {
                len += 1;
                false
            }
            Some(b'I') => {
                len += 1;
                true
            }
            _ => false,
        };
        return Ok((Tok::Int(v, width, signed), len));
    }
    // A float: digits '.' digits, optional F.
    if b.get(digits) == Some(&b'.') && b.get(digits + 1).is_some_and(|c| c.is_ascii_digit()) {
        let frac = b[digits + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let end = digits + 1 + frac;
        let v: f64 = s[..end].parse().map_err(|e| format!("{e}"))?;
        return Ok(if b.get(end) == Some(&b'F') {
            (Tok::Float(v, 32), end + 1)
        } else {
            (Tok::Float(v, 64), end)
        });
    }
    let (v, n) = int_digits(s)?;
    let suffix: String = s[n..]
        .chars()
        .take_while(|c| matches!(c, 'U' | 'L'))
        .collect();
    let (width, signed) = match suffix.as_str() {
        "" => (32, true),
        "U" => (32, false),
        "LL" | "L" => (64, true),
        "ULL" | "UL" => (64, false),
        x => return Err(format!("unknown integer suffix {x}")),
    };
    // C: a hexadecimal constant that does not fit `int` is unsigned.
    let signed = signed && !(s.starts_with("0x") && v > i32::MAX as u128 && width == 32);
    let width = if v > u32::MAX as u128 {
        64.max(width)
    } else {
        width
    };
    Ok((Tok::Int(v, width, signed), n + suffix.len()))
}

/// Decimal or `0x` hexadecimal digits at the start of `s`.
fn int_digits(s: &str) -> Result<(u128, usize), String> {
    if let Some(h) = s.strip_prefix("0x") {
        let n = h.bytes().take_while(|c| c.is_ascii_hexdigit()).count();
        let v = u128::from_str_radix(&h[..n], 16).map_err(|e| format!("{e}"))?;
        return Ok((v, n + 2));
    }
    let n = s.bytes().take_while(|c| c.is_ascii_digit()).count();
    let v = s[..n].parse().map_err(|e| format!("{s}: {e}"))?;
    Ok((v, n))
}
