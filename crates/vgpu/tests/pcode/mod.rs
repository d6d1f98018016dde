//! AMD's ISA pseudo-code as an independent oracle for instruction
//! semantics: the text ([`source`]), its tokens and syntax ([`lex`],
//! [`parse`]), values ([`value`]) and an interpreter ([`eval`]); the
//! opcodes' shapes ([`ops`]), test cases ([`cases`]) and the expected
//! state of a case ([`oracle`]).
#![allow(dead_code)]
// Lane loops index several columns with the same lane number.
#![allow(clippy::needless_range_loop)]

pub mod cases;
pub mod eval;
pub mod lex;
pub mod ops;
pub mod oracle;
pub mod parse;
pub mod source;
pub mod value;
