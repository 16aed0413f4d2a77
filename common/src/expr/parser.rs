//! The parser: YAQL's grammar and operator table, tightest first: `.` `?.`; indexer; unary `+ -`;
//! `=~ !~`; `* / mod`; `+ -`; comparisons and `in`; `not`; `and`; `or`; `->` (right-associative).

use super::ast::{Arg, BinOp, Kind, Node, UnOp};
use super::errors::{ParseError, ParseErrorKind};
use super::lexer::{tokenize, Tok, Token, P};

/// Nesting deeper than this is refused (keeps the parser's stack bounded).
pub const MAX_DEPTH: usize = 64;

/// Trees taller than this are refused (keeps printing, comparing and dropping them bounded).
pub const MAX_HEIGHT: usize = 256;

struct Parser<'t> {
    text: &'t str,
    toks: Vec<Token>,
    at: usize,
    depth: usize,
}

/// Parses `text` into a syntax tree.
pub fn parse(text: &str) -> Result<Node, ParseError> {
    let toks = tokenize(text)?;
    let mut p = Parser {
        text,
        toks,
        at: 0,
        depth: 0,
    };
    let node = p.expr()?;
    if *p.peek() != Tok::End || p.at + 1 != p.toks.len() {
        return Err(p.error("unexpected token after the end of the expression"));
    }
    Ok(node)
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        // The token list always ends with `End` and `at` never passes it.
        &self.toks[self.at].tok
    }

    fn pos(&self) -> usize {
        self.toks[self.at].pos
    }

    fn bump(&mut self) {
        if self.at < self.toks.len() - 1 {
            self.at += 1;
        }
    }

    /// Moves the current token out (leaving `End` in its place) and advances.
    fn take(&mut self) -> Tok {
        let t = if self.at < self.toks.len() - 1 {
            std::mem::replace(&mut self.toks[self.at].tok, Tok::End)
        } else {
            Tok::End
        };
        self.bump();
        t
    }

    fn is(&self, p: P) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == p)
    }

    fn error(&self, message: &str) -> ParseError {
        let found = match self.peek() {
            Tok::End => "end of expression".to_string(),
            t => format!("{t:?}"),
        };
        ParseError {
            kind: ParseErrorKind::Grammar,
            message: format!("{message} (found {found})"),
            expr: self.text.to_string(),
            pos: self.pos(),
        }
    }

    /// Builds a node, refusing trees taller than [`MAX_HEIGHT`] (long operator chains included).
    fn node(&self, kind: Kind, pos: usize) -> Result<Node, ParseError> {
        let n = Node::new(super::ast::fold(kind), pos);
        if n.depth as usize > MAX_HEIGHT {
            return Err(ParseError {
                kind: ParseErrorKind::Grammar,
                message: format!(
                    "expression too deep: more than {MAX_HEIGHT} levels of operators and calls"
                ),
                expr: self.text.to_string(),
                pos,
            });
        }
        Ok(n)
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("expression nested too deeply"));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Node, ParseError> {
        self.enter()?;
        let r = self.then();
        self.depth -= 1;
        r
    }

    fn then(&mut self) -> Result<Node, ParseError> {
        let left = self.binary(LEVEL_OR)?;
        if self.is(P::Arrow) {
            let pos = self.pos();
            self.bump();
            self.enter()?;
            let right = self.then();
            self.depth -= 1;
            return self.node(
                Kind::Binary(BinOp::Then, Box::new(left), Box::new(right?)),
                pos,
            );
        }
        Ok(left)
    }

    /// Binary operators of `min` and tighter, left-associative; `not` is a prefix at its level.
    fn binary(&mut self, min: u8) -> Result<Node, ParseError> {
        let mut left = if min <= LEVEL_NOT && self.is(P::Not) {
            self.not()?
        } else {
            self.unary()?
        };
        loop {
            let Tok::Op(p) = self.peek() else {
                return Ok(left);
            };
            let Some((op, level)) = binop(*p) else {
                return Ok(left);
            };
            if level < min {
                return Ok(left);
            }
            let pos = self.pos();
            self.bump();
            let right = self.binary(level + 1)?;
            left = self.node(Kind::Binary(op, Box::new(left), Box::new(right)), pos)?;
        }
    }

    /// `not x`, where `x` holds comparisons and tighter operators (and further `not`s).
    fn not(&mut self) -> Result<Node, ParseError> {
        let pos = self.pos();
        self.bump();
        self.enter()?;
        let inner = self.binary(LEVEL_NOT);
        self.depth -= 1;
        self.node(Kind::Unary(UnOp::Not, Box::new(inner?)), pos)
    }

    fn unary(&mut self) -> Result<Node, ParseError> {
        let op = match self.peek() {
            Tok::Op(P::Minus) => UnOp::Minus,
            Tok::Op(P::Plus) => UnOp::Plus,
            Tok::Op(P::Not) => return self.not(),
            _ => return self.postfix(),
        };
        let pos = self.pos();
        self.bump();
        self.enter()?;
        let inner = self.unary();
        self.depth -= 1;
        self.node(Kind::Unary(op, Box::new(inner?)), pos)
    }

    fn postfix(&mut self) -> Result<Node, ParseError> {
        let mut node = self.primary()?;
        loop {
            let pos = self.pos();
            match self.peek() {
                Tok::Op(P::Dot | P::SafeDot) => {
                    let safe = self.is(P::SafeDot);
                    self.bump();
                    if let Tok::Func(_) = self.peek() {
                        let Tok::Func(name) = self.take() else {
                            unreachable!("just matched a function token")
                        };
                        let args = self.args(P::RParen)?;
                        node = self.node(
                            Kind::Method {
                                recv: Box::new(node),
                                name,
                                args,
                                safe,
                            },
                            pos,
                        )?;
                    } else {
                        let rhs = self.primary()?;
                        node = self.node(
                            Kind::Member {
                                recv: Box::new(node),
                                rhs: Box::new(rhs),
                                safe,
                            },
                            pos,
                        )?;
                    }
                }
                Tok::Op(P::LBrack) => {
                    self.bump();
                    let args = self.args(P::RBrack)?;
                    node = self.node(Kind::Index(Box::new(node), args), pos)?;
                }
                Tok::Op(P::LParen) => {
                    self.bump();
                    let args = self.args(P::RParen)?;
                    node = self.node(Kind::Invoke(Box::new(node), args), pos)?;
                }
                _ => return Ok(node),
            }
        }
    }

    fn primary(&mut self) -> Result<Node, ParseError> {
        let pos = self.pos();
        let kind = match self.peek() {
            Tok::Int(_)
            | Tok::Float(_)
            | Tok::Str(_)
            | Tok::Word(_)
            | Tok::Var(_)
            | Tok::True
            | Tok::False
            | Tok::Null => match self.take() {
                Tok::Int(i) => Kind::Int(i),
                Tok::Float(x) => Kind::Float(x),
                Tok::Str(s) => Kind::Str(s),
                Tok::Word(w) => Kind::Word(w),
                Tok::Var(v) => Kind::Var(v),
                Tok::True => Kind::Bool(true),
                Tok::False => Kind::Bool(false),
                _ => Kind::Null,
            },
            Tok::Func(_) => {
                let Tok::Func(name) = self.take() else {
                    unreachable!("just matched a function token")
                };
                let args = self.args(P::RParen)?;
                return self.node(Kind::Call(name, args), pos);
            }
            Tok::Op(P::LParen) => {
                self.bump();
                let inner = self.expr()?;
                if !self.is(P::RParen) {
                    return Err(self.error("expected `)`"));
                }
                self.bump();
                return self.node(Kind::Paren(Box::new(inner)), pos);
            }
            Tok::Op(P::LBrack) => {
                self.bump();
                let args = self.args(P::RBrack)?;
                return self.node(Kind::List(args), pos);
            }
            Tok::Op(P::LBrace) => {
                self.bump();
                let args = self.args(P::RBrace)?;
                return self.node(Kind::Dict(args), pos);
            }
            _ => return Err(self.error("expected a value")),
        };
        self.node(kind, pos)
    }

    /// Parses arguments up to and including `close`: positional ones (some possibly skipped),
    /// then `key => value` ones; no trailing comma.
    fn args(&mut self, close: P) -> Result<Vec<Arg>, ParseError> {
        let mut args = Vec::new();
        if self.is(close) {
            self.bump();
            return Ok(args);
        }
        self.enter()?;
        let mut seen_map = false;
        loop {
            if self.is(P::Comma) {
                if seen_map {
                    return Err(self.error("positional argument after a named one"));
                }
                args.push(Arg::Skip);
            } else {
                let e = self.expr()?;
                if self.is(P::FatArrow) {
                    self.bump();
                    let v = self.expr()?;
                    args.push(Arg::Map(e, v));
                    seen_map = true;
                } else {
                    if seen_map {
                        return Err(self.error("positional argument after a named one"));
                    }
                    args.push(Arg::Pos(e));
                }
            }
            if self.is(P::Comma) {
                self.bump();
                if self.is(close) {
                    return Err(self.error("trailing comma"));
                }
            } else if self.is(close) {
                self.bump();
                break;
            } else {
                return Err(self.error(&format!("expected `,` or `{}`", close.text())));
            }
        }
        self.depth -= 1;
        Ok(args)
    }
}

/// `or`, the loosest binary operator.
const LEVEL_OR: u8 = 1;
/// Where the prefix `not` sits: looser than comparisons, tighter than `and`.
const LEVEL_NOT: u8 = 3;

/// A binary operator and its level (higher binds tighter).
fn binop(p: P) -> Option<(BinOp, u8)> {
    Some(match p {
        P::Or => (BinOp::Or, LEVEL_OR),
        P::And => (BinOp::And, 2),
        P::Ge => (BinOp::Ge, 4),
        P::Le => (BinOp::Le, 4),
        P::Ne => (BinOp::Ne, 4),
        P::Gt => (BinOp::Gt, 4),
        P::Lt => (BinOp::Lt, 4),
        P::Eq => (BinOp::Eq, 4),
        P::In => (BinOp::In, 4),
        P::Plus => (BinOp::Add, 5),
        P::Minus => (BinOp::Sub, 5),
        P::Star => (BinOp::Mul, 6),
        P::Slash => (BinOp::Div, 6),
        P::Mod => (BinOp::Mod, 6),
        P::Match => (BinOp::Match, 7),
        P::NotMatch => (BinOp::NotMatch, 7),
        _ => return None,
    })
}
