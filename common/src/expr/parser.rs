//! The parser: YAQL's grammar and operator table, tightest first: `.` `?.`; indexer; unary `+ -`;
//! `=~ !~`; `* / mod`; `+ -`; comparisons and `in`; `not`; `and`; `or`; `->` (right-associative).

use super::ast::{Arg, BinOp, Kind, Node, UnOp};
use super::errors::{ParseError, ParseErrorKind};
use super::lexer::{tokenize, Tok, Token};

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
    if p.peek() != &Tok::End {
        return Err(p.error("unexpected token after the end of the expression"));
    }
    Ok(node)
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        // The token list always ends with `End` and `at` never passes it.
        &self.toks[self.at.min(self.toks.len() - 1)].tok
    }

    fn pos(&self) -> usize {
        self.toks[self.at.min(self.toks.len() - 1)].pos
    }

    fn bump(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.at < self.toks.len() - 1 {
            self.at += 1;
        }
        t
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
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
        let n = Node::new(kind, pos);
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
        let left = self.or()?;
        if self.is_op("->") {
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

    fn binary_level(
        &mut self,
        ops: &[(&str, BinOp)],
        next: fn(&mut Self) -> Result<Node, ParseError>,
    ) -> Result<Node, ParseError> {
        let mut left = next(self)?;
        loop {
            let Some(op) = ops.iter().find(|(s, _)| self.is_op(s)).map(|(_, op)| *op) else {
                return Ok(left);
            };
            let pos = self.pos();
            self.bump();
            let right = next(self)?;
            left = self.node(Kind::Binary(op, Box::new(left), Box::new(right)), pos)?;
        }
    }

    fn or(&mut self) -> Result<Node, ParseError> {
        self.binary_level(&[("or", BinOp::Or)], Self::and)
    }

    fn and(&mut self) -> Result<Node, ParseError> {
        self.binary_level(&[("and", BinOp::And)], Self::not)
    }

    fn not(&mut self) -> Result<Node, ParseError> {
        if self.is_op("not") {
            let pos = self.pos();
            self.bump();
            self.enter()?;
            let inner = self.not();
            self.depth -= 1;
            return self.node(Kind::Unary(UnOp::Not, Box::new(inner?)), pos);
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Node, ParseError> {
        self.binary_level(
            &[
                (">=", BinOp::Ge),
                ("<=", BinOp::Le),
                ("!=", BinOp::Ne),
                (">", BinOp::Gt),
                ("<", BinOp::Lt),
                ("=", BinOp::Eq),
                ("in", BinOp::In),
            ],
            Self::additive,
        )
    }

    fn additive(&mut self) -> Result<Node, ParseError> {
        self.binary_level(
            &[("+", BinOp::Add), ("-", BinOp::Sub)],
            Self::multiplicative,
        )
    }

    fn multiplicative(&mut self) -> Result<Node, ParseError> {
        self.binary_level(
            &[("*", BinOp::Mul), ("/", BinOp::Div), ("mod", BinOp::Mod)],
            Self::matching,
        )
    }

    fn matching(&mut self) -> Result<Node, ParseError> {
        self.binary_level(
            &[("=~", BinOp::Match), ("!~", BinOp::NotMatch)],
            Self::unary,
        )
    }

    fn unary(&mut self) -> Result<Node, ParseError> {
        let op = if self.is_op("-") {
            Some(UnOp::Minus)
        } else if self.is_op("+") {
            Some(UnOp::Plus)
        } else if self.is_op("not") {
            return self.not();
        } else {
            None
        };
        match op {
            Some(op) => {
                let pos = self.pos();
                self.bump();
                self.enter()?;
                let inner = self.unary();
                self.depth -= 1;
                self.node(Kind::Unary(op, Box::new(inner?)), pos)
            }
            None => self.postfix(),
        }
    }

    fn postfix(&mut self) -> Result<Node, ParseError> {
        let mut node = self.primary()?;
        loop {
            let pos = self.pos();
            if self.is_op(".") || self.is_op("?.") {
                let safe = self.is_op("?.");
                self.bump();
                if let Tok::Func(name) = self.peek().clone() {
                    self.bump();
                    let args = self.args(")")?;
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
            } else if self.is_op("[") {
                self.bump();
                let args = self.args("]")?;
                node = self.node(Kind::Index(Box::new(node), args), pos)?;
            } else if self.is_op("(") {
                self.bump();
                let args = self.args(")")?;
                node = self.node(Kind::Invoke(Box::new(node), args), pos)?;
            } else {
                return Ok(node);
            }
        }
    }

    fn primary(&mut self) -> Result<Node, ParseError> {
        let pos = self.pos();
        let kind = match self.peek().clone() {
            Tok::Int(i) => Kind::Int(i),
            Tok::Float(x) => Kind::Float(x),
            Tok::Str(s) => Kind::Str(s),
            Tok::Word(w) => Kind::Word(w),
            Tok::Var(v) => Kind::Var(v),
            Tok::True => Kind::Bool(true),
            Tok::False => Kind::Bool(false),
            Tok::Null => Kind::Null,
            Tok::Func(name) => {
                self.bump();
                let args = self.args(")")?;
                return self.node(Kind::Call(name, args), pos);
            }
            Tok::Op("(") => {
                self.bump();
                let inner = self.expr()?;
                if !self.is_op(")") {
                    return Err(self.error("expected `)`"));
                }
                self.bump();
                return self.node(Kind::Paren(Box::new(inner)), pos);
            }
            Tok::Op("[") => {
                self.bump();
                let args = self.args("]")?;
                return self.node(Kind::List(args), pos);
            }
            Tok::Op("{") => {
                self.bump();
                let args = self.args("}")?;
                return self.node(Kind::Dict(args), pos);
            }
            _ => return Err(self.error("expected a value")),
        };
        self.bump();
        self.node(kind, pos)
    }

    /// Parses arguments up to and including `close`: positional ones (some possibly skipped),
    /// then `key => value` ones; no trailing comma.
    fn args(&mut self, close: &str) -> Result<Vec<Arg>, ParseError> {
        let mut args = Vec::new();
        if self.is_op(close) {
            self.bump();
            return Ok(args);
        }
        self.enter()?;
        let mut seen_map = false;
        loop {
            if self.is_op(",") {
                if seen_map {
                    return Err(self.error("positional argument after a named one"));
                }
                args.push(Arg::Skip);
            } else {
                let e = self.expr()?;
                if self.is_op("=>") {
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
            if self.is_op(",") {
                self.bump();
                if self.is_op(close) {
                    return Err(self.error("trailing comma"));
                }
            } else if self.is_op(close) {
                self.bump();
                break;
            } else {
                return Err(self.error(&format!("expected `,` or `{close}`")));
            }
        }
        self.depth -= 1;
        Ok(args)
    }
}
