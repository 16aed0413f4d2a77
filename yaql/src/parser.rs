//! The parser: YAQL's grammar and operator table, tightest first: `.` `?.`; indexer; unary `+ -`;
//! `=~ !~`; `* / mod`; `+ -`; comparisons and `in`; `not`; `and`; `or`; `->` (right-associative).
//! Its result, [`Expression`], is what callers parse once and evaluate many times.

use std::cell::Cell;
use std::fmt;

use super::ast::{BinOp, Flat, FlatArg, Node, Span, Sym, Tree, UnOp};
use super::errors::{ParseError, ParseErrorKind};
use super::lexer::{Lexer, Tok, P};

/// Nesting deeper than this is refused (keeps the parser's stack bounded).
pub const MAX_DEPTH: usize = 64;

/// Trees taller than this are refused (keeps printing, comparing and dropping them bounded).
pub const MAX_HEIGHT: usize = 256;

/// A parsed expression. Its `Display` is the canonical text, which parses back to the same tree.
#[derive(Debug, Clone)]
pub struct Expression {
    tree: Tree,
}

impl Expression {
    /// Parses an expression.
    pub fn parse(text: &str) -> Result<Expression, ParseError> {
        Ok(Expression { tree: parse(text)? })
    }

    /// The text it was parsed from.
    pub fn source(&self) -> &str {
        self.tree.source()
    }

    /// The syntax tree's root.
    pub fn root(&self) -> Node<'_> {
        self.tree.root()
    }
}

impl PartialEq for Expression {
    /// Same syntax tree (positions and spelling aside).
    fn eq(&self, other: &Self) -> bool {
        self.root() == other.root()
    }
}

impl fmt::Display for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.root().fmt(f)
    }
}

struct Parser<'t> {
    text: &'t str,
    lexer: Lexer<'t>,
    depth: usize,
    tree: Tree,
    /// Arguments of the calls being parsed, innermost last, moved into the tree as each closes.
    pending: Vec<FlatArg>,
}

type Id = u32;

/// Parse results inside the parser (the error boxed: keeps results small on the hot path).
type PR<T> = Result<T, Box<ParseError>>;

/// Parses `text` into a syntax tree.
pub fn parse(text: &str) -> Result<Tree, ParseError> {
    if u32::try_from(text.len()).is_err() {
        return Err(ParseError {
            kind: ParseErrorKind::Grammar,
            message: "expression too long".into(),
            expr: String::new(),
            pos: 0,
        });
    }
    let mut p = Parser {
        text,
        lexer: Lexer::new(text),
        depth: 0,
        tree: Tree::new(text),
        pending: PENDING.with(Cell::take),
    };
    let parsed = p.parse();
    p.pending.clear();
    PENDING.with(|c| c.set(p.pending));
    parsed.map_err(|e| *e)?;
    Ok(p.tree)
}

thread_local! {
    /// The argument stack of the last parse on this thread, kept for the next (no allocation
    /// per expression).
    static PENDING: Cell<Vec<FlatArg>> = const { Cell::new(Vec::new()) };
}

impl<'t> Parser<'t> {
    fn parse(&mut self) -> PR<()> {
        self.lexer.advance()?;
        let root = self.expr()?;
        if self.lexer.tok != Tok::End {
            return Err(self.error("unexpected token after the end of the expression"));
        }
        self.tree.set_root(root);
        Ok(())
    }

    fn peek(&self) -> &Tok<'t> {
        &self.lexer.tok
    }

    fn pos(&self) -> usize {
        self.lexer.pos
    }

    fn bump(&mut self) -> PR<()> {
        if self.lexer.tok != Tok::End {
            self.lexer.advance()?;
        }
        Ok(())
    }

    fn is(&self, p: P) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == p)
    }

    /// A grammar error, unless the text has a lexical error further on: that one is reported,
    /// as when the whole text is split into tokens first.
    fn grammar(&mut self, e: ParseError) -> Box<ParseError> {
        loop {
            match self.lexer.advance() {
                Err(lexical) => return lexical,
                Ok(()) if self.lexer.tok == Tok::End => return Box::new(e),
                Ok(()) => {}
            }
        }
    }

    #[cold]
    fn error(&mut self, message: &str) -> Box<ParseError> {
        let found = match self.peek() {
            Tok::End => "end of expression".to_string(),
            Tok::Decoded => format!("Str({:?})", self.lexer.decoded),
            t => format!("{t:?}"),
        };
        let e = ParseError {
            kind: ParseErrorKind::Grammar,
            message: format!("{message} (found {found})"),
            expr: self.text.to_string(),
            pos: self.pos(),
        };
        self.grammar(e)
    }

    /// Stores a node, refusing trees taller than [`MAX_HEIGHT`] (long operator chains included).
    #[inline(always)]
    fn node(&mut self, kind: Flat, pos: usize) -> PR<Id> {
        let (id, depth) = self.tree.push(kind, pos);
        if depth as usize > MAX_HEIGHT {
            let e = ParseError {
                kind: ParseErrorKind::Grammar,
                message: format!(
                    "expression too deep: more than {MAX_HEIGHT} levels of operators and calls"
                ),
                expr: self.text.to_string(),
                pos,
            };
            return Err(self.grammar(e));
        }
        Ok(id)
    }

    fn enter(&mut self) -> PR<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("expression nested too deeply"));
        }
        Ok(())
    }

    fn expr(&mut self) -> PR<Id> {
        self.enter()?;
        let r = self.then();
        self.depth -= 1;
        r
    }

    fn then(&mut self) -> PR<Id> {
        let left = self.binary(LEVEL_OR)?;
        if self.is(P::Arrow) {
            let pos = self.pos();
            self.bump()?;
            self.enter()?;
            let right = self.then();
            self.depth -= 1;
            return self.node(Flat::Binary(BinOp::Then, left, right?), pos);
        }
        Ok(left)
    }

    /// Binary operators of `min` and tighter, left-associative; `not` is a prefix at its level.
    fn binary(&mut self, min: u8) -> PR<Id> {
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
            self.bump()?;
            let right = self.binary(level + 1)?;
            left = self.node(Flat::Binary(op, left, right), pos)?;
        }
    }

    /// `not x`, where `x` holds comparisons and tighter operators (and further `not`s).
    fn not(&mut self) -> PR<Id> {
        let pos = self.pos();
        self.bump()?;
        self.enter()?;
        let inner = self.binary(LEVEL_NOT);
        self.depth -= 1;
        self.node(Flat::Unary(UnOp::Not, inner?), pos)
    }

    fn unary(&mut self) -> PR<Id> {
        let op = match self.peek() {
            Tok::Op(P::Minus) => UnOp::Minus,
            Tok::Op(P::Plus) => UnOp::Plus,
            Tok::Op(P::Not) => return self.not(),
            _ => return self.postfix(),
        };
        let pos = self.pos();
        self.bump()?;
        self.enter()?;
        let inner = self.unary();
        self.depth -= 1;
        self.node(Flat::Unary(op, inner?), pos)
    }

    /// A name the current token borrows from the source, as a tree string.
    fn sym(&self, s: &str) -> Sym {
        let start = s.as_ptr() as usize - self.text.as_ptr() as usize;
        self.tree.source_sym(start, s.len())
    }

    fn postfix(&mut self) -> PR<Id> {
        let mut node = self.primary()?;
        loop {
            let pos = self.pos();
            match self.peek() {
                Tok::Op(P::Dot | P::SafeDot) => {
                    let safe = self.is(P::SafeDot);
                    self.bump()?;
                    if let Tok::Func(name) = *self.peek() {
                        let name = self.sym(name);
                        self.bump()?;
                        let args = self.args(P::RParen)?;
                        node = self.node(
                            Flat::Method {
                                recv: node,
                                name,
                                args,
                                safe,
                            },
                            pos,
                        )?;
                    } else {
                        let rhs = self.primary()?;
                        node = self.node(
                            Flat::Member {
                                recv: node,
                                rhs,
                                safe,
                            },
                            pos,
                        )?;
                    }
                }
                Tok::Op(P::LBrack) => {
                    self.bump()?;
                    let args = self.args(P::RBrack)?;
                    node = self.node(Flat::Index(node, args), pos)?;
                }
                Tok::Op(P::LParen) => {
                    self.bump()?;
                    let args = self.args(P::RParen)?;
                    node = self.node(Flat::Invoke(node, args), pos)?;
                }
                _ => return Ok(node),
            }
        }
    }

    fn primary(&mut self) -> PR<Id> {
        let pos = self.pos();
        let kind = match *self.peek() {
            Tok::Int(i) => Flat::Int(i),
            Tok::Float(x) => Flat::Float(x),
            Tok::Word(w) => Flat::Word(self.sym(w)),
            Tok::Var(v) => Flat::Var(self.sym(v)),
            Tok::True => Flat::Bool(true),
            Tok::False => Flat::Bool(false),
            Tok::Null => Flat::Null,
            Tok::Str(s) => Flat::Str(self.sym(s)),
            Tok::Decoded => Flat::Str(self.tree.intern(&self.lexer.decoded)),
            Tok::Func(name) => {
                let name = self.sym(name);
                self.bump()?;
                let args = self.args(P::RParen)?;
                return self.node(Flat::Call(name, args), pos);
            }
            Tok::Op(P::LParen) => {
                self.bump()?;
                let inner = self.expr()?;
                if !self.is(P::RParen) {
                    return Err(self.error("expected `)`"));
                }
                self.bump()?;
                return self.node(Flat::Paren(inner), pos);
            }
            Tok::Op(P::LBrack) => {
                self.bump()?;
                let args = self.args(P::RBrack)?;
                return self.node(Flat::List(args), pos);
            }
            Tok::Op(P::LBrace) => {
                self.bump()?;
                let args = self.args(P::RBrace)?;
                return self.node(Flat::Dict(args), pos);
            }
            _ => return Err(self.error("expected a value")),
        };
        self.bump()?;
        self.node(kind, pos)
    }

    /// Parses arguments up to and including `close`: positional ones (some possibly skipped),
    /// then `key => value` ones; no trailing comma.
    fn args(&mut self, close: P) -> PR<Span> {
        let mark = self.pending.len();
        if self.is(close) {
            self.bump()?;
            return Ok(self.tree.push_args(std::iter::empty()));
        }
        self.enter()?;
        let mut seen_map = false;
        loop {
            if self.is(P::Comma) {
                if seen_map {
                    return Err(self.error("positional argument after a named one"));
                }
                self.pending.push(FlatArg::Skip);
            } else {
                let e = self.expr()?;
                if self.is(P::FatArrow) {
                    self.bump()?;
                    let v = self.expr()?;
                    self.pending.push(FlatArg::Map(e, v));
                    seen_map = true;
                } else {
                    if seen_map {
                        return Err(self.error("positional argument after a named one"));
                    }
                    self.pending.push(FlatArg::Pos(e));
                }
            }
            if self.is(P::Comma) {
                self.bump()?;
                if self.is(close) {
                    return Err(self.error("trailing comma"));
                }
            } else if self.is(close) {
                self.bump()?;
                break;
            } else {
                return Err(self.error(&format!("expected `,` or `{}`", close.text())));
            }
        }
        self.depth -= 1;
        let span = self.tree.push_args(self.pending.drain(mark..));
        Ok(span)
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
