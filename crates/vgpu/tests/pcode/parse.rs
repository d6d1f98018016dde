//! The pseudo-code's syntax tree and a recursive-descent parser for it.
//! Operator precedence is C's, with `**` binding tighter than `*`.

use super::lex::{lex, Kind, Tok};

#[derive(Clone, Debug)]
pub enum Expr {
    Int(u128, u32, bool),
    Float(f64, u32),
    Var(String),
    /// `e.name`: a typed view (`.u32`, `.f64`, `.i24`) or a field (`.IEEE`).
    Field(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    /// `e[hi : lo]` (a reversed range `[0 : 31]` reverses the bits).
    Slice(Box<Expr>, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
    Cast(u32, Kind, Box<Expr>),
    /// `{ hi, …, lo }`.
    Concat(Vec<Expr>),
    Unary(&'static str, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Debug)]
pub enum Stmt {
    /// `a = b = … = value`, or `a += value` / `a -= value` (one target).
    Assign(Vec<Expr>, &'static str, Expr),
    /// `if`/`elsif` arms, then the `else` body.
    If(Vec<(Expr, Vec<Stmt>)>, Vec<Stmt>),
    For(String, Expr, Expr, Vec<Stmt>),
    Break,
    Declare(String, u32, Kind),
    Expr(Expr),
}

pub fn parse(src: &str) -> Result<Vec<Stmt>, String> {
    let toks = lex(src)?;
    let mut p = Parser { t: toks, i: 0 };
    let body = p.block(&[])?;
    if p.i < p.t.len() {
        return Err(format!("unexpected {:?}", p.t[p.i]));
    }
    Ok(body)
}

struct Parser {
    t: Vec<Tok>,
    i: usize,
}

const BINARY: [&[&str]; 10] = [
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!=", "<>"],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/"],
];

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }
    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(q)) if q == w)
    }
    fn expect(&mut self, p: &str) -> Result<(), String> {
        if self.is_punct(p) || self.is_word(p) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected {p}, found {:?}", self.peek()))
        }
    }
    fn skip_ends(&mut self) {
        while matches!(self.peek(), Some(Tok::End)) {
            self.i += 1;
        }
    }

    /// Statements up to (not including) one of the words `until`, or the end.
    fn block(&mut self, until: &[&str]) -> Result<Vec<Stmt>, String> {
        let mut out = Vec::new();
        loop {
            self.skip_ends();
            match self.peek() {
                None => return Ok(out),
                Some(Tok::Ident(w)) if until.contains(&w.as_str()) => return Ok(out),
                _ => out.push(self.stmt()?),
            }
        }
    }

    fn stmt(&mut self) -> Result<Stmt, String> {
        if self.is_word("if") {
            self.i += 1;
            let mut arms = vec![(self.expr()?, Vec::new())];
            self.expect("then")?;
            arms[0].1 = self.block(&["elsif", "else", "endif"])?;
            let mut otherwise = Vec::new();
            loop {
                if self.is_word("elsif") {
                    self.i += 1;
                    let c = self.expr()?;
                    self.expect("then")?;
                    arms.push((c, self.block(&["elsif", "else", "endif"])?));
                } else if self.is_word("else") {
                    self.i += 1;
                    otherwise = self.block(&["endif"])?;
                } else {
                    self.expect("endif")?;
                    return Ok(Stmt::If(arms, otherwise));
                }
            }
        }
        if self.is_word("for") {
            self.i += 1;
            let Some(Tok::Ident(var)) = self.peek().cloned() else {
                return Err("for without a variable".into());
            };
            self.i += 1;
            self.expect("in")?;
            let from = self.expr()?;
            self.expect(":")?;
            let to = self.expr()?;
            self.expect("do")?;
            let body = self.block(&["endfor"])?;
            self.expect("endfor")?;
            return Ok(Stmt::For(var, from, to, body));
        }
        if self.is_word("break") {
            self.i += 1;
            return Ok(Stmt::Break);
        }
        if self.is_word("declare") {
            self.i += 1;
            let Some(Tok::Ident(name)) = self.peek().cloned() else {
                return Err("declare without a name".into());
            };
            self.i += 1;
            self.expect(":")?;
            // `64'B` lexes as a sized literal with no digits after the quote
            // only when written `64'B;`: accept both shapes.
            let (w, k) = match self.peek().cloned() {
                Some(Tok::Cast(w, k)) => (w, k),
                Some(Tok::Int(_, w, s)) => (w, if s { Kind::I } else { Kind::U }),
                t => return Err(format!("declare {name}: type {t:?}")),
            };
            self.i += 1;
            return Ok(Stmt::Declare(name, w, k));
        }
        let first = self.expr()?;
        let mut targets = vec![first];
        loop {
            if self.is_punct("=") {
                self.i += 1;
                targets.push(self.expr()?);
            } else if self.is_punct("+=") || self.is_punct("-=") {
                let op = if self.is_punct("+=") { "+=" } else { "-=" };
                self.i += 1;
                let v = self.expr()?;
                return Ok(Stmt::Assign(targets, op, v));
            } else {
                break;
            }
        }
        if targets.len() == 1 {
            return Ok(Stmt::Expr(targets.pop().unwrap_or(Expr::Int(0, 1, false))));
        }
        let value = targets.pop().unwrap_or(Expr::Int(0, 1, false));
        Ok(Stmt::Assign(targets, "=", value))
    }

    pub fn expr(&mut self) -> Result<Expr, String> {
        let c = self.binary(0)?;
        if self.is_punct("?") {
            self.i += 1;
            let a = self.expr()?;
            self.expect(":")?;
            let b = self.expr()?;
            return Ok(Expr::Ternary(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }

    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        if level == BINARY.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Some(Tok::Punct(p)) if BINARY[level].contains(p) => *p,
                _ => return Ok(lhs),
            };
            self.i += 1;
            let rhs = self.binary(level + 1)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
    }

    fn unary(&mut self) -> Result<Expr, String> {
        for op in ["-", "+", "!", "~"] {
            if self.is_punct(op) {
                self.i += 1;
                let e = self.unary()?;
                return Ok(Expr::Unary(op, Box::new(e)));
            }
        }
        let base = self.postfix()?;
        if self.is_punct("**") {
            self.i += 1;
            let e = self.unary()?;
            return Ok(Expr::Binary("**", Box::new(base), Box::new(e)));
        }
        Ok(base)
    }

    fn postfix(&mut self) -> Result<Expr, String> {
        let mut e = self.primary()?;
        loop {
            if self.is_punct(".") {
                self.i += 1;
                let Some(Tok::Ident(f)) = self.peek().cloned() else {
                    return Err(format!("expected a field, found {:?}", self.peek()));
                };
                self.i += 1;
                e = Expr::Field(Box::new(e), f);
            } else if self.is_punct("[") {
                self.i += 1;
                let a = self.expr()?;
                if self.is_punct(":") {
                    self.i += 1;
                    let b = self.expr()?;
                    self.expect("]")?;
                    e = Expr::Slice(Box::new(e), Box::new(a), Box::new(b));
                } else {
                    self.expect("]")?;
                    e = Expr::Index(Box::new(e), Box::new(a));
                }
            } else {
                return Ok(e);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        let t = self.peek().cloned().ok_or("unexpected end")?;
        self.i += 1;
        match t {
            Tok::Int(v, w, s) => Ok(Expr::Int(v, w, s)),
            Tok::Float(v, w) => Ok(Expr::Float(v, w)),
            Tok::Cast(w, k) => {
                self.expect("(")?;
                let e = self.expr()?;
                self.expect(")")?;
                Ok(Expr::Cast(w, k, Box::new(e)))
            }
            Tok::Punct("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Punct("{") => {
                let mut parts = vec![self.expr()?];
                while self.is_punct(",") {
                    self.i += 1;
                    parts.push(self.expr()?);
                }
                self.expect("}")?;
                Ok(Expr::Concat(parts))
            }
            Tok::Ident(name) => {
                if self.is_punct("(") {
                    self.i += 1;
                    let mut args = Vec::new();
                    if !self.is_punct(")") {
                        args.push(self.expr()?);
                        while self.is_punct(",") {
                            self.i += 1;
                            args.push(self.expr()?);
                        }
                    }
                    self.expect(")")?;
                    return Ok(Expr::Call(name, args));
                }
                Ok(Expr::Var(name))
            }
            t => Err(format!("unexpected {t:?}")),
        }
    }
}
