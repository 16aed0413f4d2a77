//! The syntax tree and its canonical text form (`Display`), which parses back to the same tree.

use std::fmt;

/// A node and its byte offset in the source (ignored by equality).
#[derive(Debug, Clone)]
pub struct Node {
    /// What the node is.
    pub kind: Kind,
    /// Byte offset in the source text, for error carets.
    pub pos: usize,
    /// Height of the subtree (1 for a leaf); the parser bounds it.
    pub depth: u32,
}

impl Node {
    /// A node over already built children, its height computed from theirs.
    pub fn new(kind: Kind, pos: usize) -> Node {
        let arg = |a: &Arg| match a {
            Arg::Pos(n) => n.depth,
            Arg::Map(k, v) => k.depth.max(v.depth),
            Arg::Skip => 0,
        };
        let args = |args: &[Arg]| args.iter().map(arg).max().unwrap_or(0);
        let below = match &kind {
            Kind::Paren(n) | Kind::Unary(_, n) => n.depth,
            Kind::Binary(_, l, r) => l.depth.max(r.depth),
            Kind::Member { recv, rhs, .. } => recv.depth.max(rhs.depth),
            Kind::Method { recv, args: a, .. } => recv.depth.max(args(a)),
            Kind::Index(v, a) | Kind::Invoke(v, a) => v.depth.max(args(a)),
            Kind::Call(_, a) | Kind::List(a) | Kind::Dict(a) => args(a),
            _ => 0,
        };
        Node {
            kind,
            pos,
            depth: below + 1,
        }
    }
}

impl PartialEq for Node {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
    }
}

/// Binary operators, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `=~`
    Match,
    /// `!~`
    NotMatch,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `mod`
    Mod,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `>`
    Gt,
    /// `<`
    Lt,
    /// `>=`
    Ge,
    /// `<=`
    Le,
    /// `!=`
    Ne,
    /// `=`
    Eq,
    /// `in`
    In,
    /// `and`
    And,
    /// `or`
    Or,
    /// `->`
    Then,
}

impl BinOp {
    /// The operator's text.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Match => "=~",
            BinOp::NotMatch => "!~",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "mod",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Gt => ">",
            BinOp::Lt => "<",
            BinOp::Ge => ">=",
            BinOp::Le => "<=",
            BinOp::Ne => "!=",
            BinOp::Eq => "=",
            BinOp::In => "in",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Then => "->",
        }
    }
}

/// Prefix operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `not`
    Not,
}

/// One argument of a call, an indexer or a list or dictionary literal.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A positional argument.
    Pos(Node),
    /// `key => value`: a named argument when `key` is a bare word, else a mapping rule.
    Map(Node, Node),
    /// A skipped positional argument (`f(1,,3)`).
    Skip,
}

/// Node kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A quoted string.
    Str(String),
    /// A bare word (a string constant, or a key name after `.`).
    Word(String),
    /// `$name`; `$` alone has the empty name.
    Var(String),
    /// `( expr )`
    Paren(Box<Node>),
    /// `[ args ]`
    List(Vec<Arg>),
    /// `{ args }`
    Dict(Vec<Arg>),
    /// `name(args)`
    Call(String, Vec<Arg>),
    /// `receiver.name(args)`, or `receiver?.name(args)` when `safe`.
    Method {
        /// The receiver.
        recv: Box<Node>,
        /// Method name.
        name: String,
        /// Arguments.
        args: Vec<Arg>,
        /// `?.` rather than `.`.
        safe: bool,
    },
    /// `receiver.rhs` where `rhs` is not a method call (a key when it is a bare word).
    Member {
        /// The receiver.
        recv: Box<Node>,
        /// The right side.
        rhs: Box<Node>,
        /// `?.` rather than `.`.
        safe: bool,
    },
    /// `value[args]`
    Index(Box<Node>, Vec<Arg>),
    /// `value(args)`: calling a lambda held in a value.
    Invoke(Box<Node>, Vec<Arg>),
    /// A prefix operator.
    Unary(UnOp, Box<Node>),
    /// A binary operator.
    Binary(BinOp, Box<Node>, Box<Node>),
    /// A constant folded at parse time (`[1, 2]`, `{a => 1}`, `{}`, `-1`, `2 * 60`): evaluating it
    /// borrows the value, building nothing.
    Const(serde_json::Value),
}

/// Writes a string as a single-quoted literal that lexes back to the same string.
pub fn write_quoted(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("'")?;
    for c in s.chars() {
        match c {
            '\\' => f.write_str("\\\\")?,
            '\'' => f.write_str("\\'")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x20 || c == '\u{7f}' => write!(f, "\\x{:02x}", c as u32)?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("'")
}

/// Formats a float so that it lexes back as the same float (digits, a dot, digits).
pub fn float_text(x: f64) -> String {
    let s = format!("{x}");
    if s.contains('.') || !x.is_finite() {
        s
    } else {
        format!("{s}.0")
    }
}

/// Writes a folded constant as a literal that parses (and folds) back to the same constant.
fn write_const(f: &mut fmt::Formatter<'_>, j: &serde_json::Value) -> fmt::Result {
    use serde_json::Value as J;
    match j {
        J::Null => f.write_str("null"),
        J::Bool(b) => write!(f, "{b}"),
        J::Number(n) => match n.as_i64() {
            Some(i) => write!(f, "{i}"),
            None => f.write_str(&float_text(n.as_f64().unwrap_or(0.0))),
        },
        J::String(s) => write_quoted(f, s),
        J::Array(items) => {
            f.write_str("[")?;
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_const(f, v)?;
            }
            f.write_str("]")
        }
        J::Object(m) => {
            f.write_str("{")?;
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_quoted(f, k)?;
                f.write_str(" => ")?;
                write_const(f, v)?;
            }
            f.write_str("}")
        }
    }
}

/// Folds a node whose children are all constants into a constant, where that is exact:
/// list literals, dictionary literals with string keys, `-` of a number, `not` of a constant,
/// and `+ - *` on numbers (no overflow) or `+` on strings. Anything else is left as it is.
pub fn fold(kind: Kind) -> Kind {
    use serde_json::Value as J;
    fn constant(n: &Node) -> Option<J> {
        Some(match &n.kind {
            Kind::Null => J::Null,
            Kind::Bool(b) => J::Bool(*b),
            Kind::Int(i) => J::from(*i),
            Kind::Float(x) => J::from(*x),
            Kind::Str(s) | Kind::Word(s) => J::String(s.clone()),
            Kind::Const(j) => j.clone(),
            _ => return None,
        })
    }
    fn truthy(j: &J) -> bool {
        match j {
            J::Null => false,
            J::Bool(b) => *b,
            J::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
            J::String(s) => !s.is_empty(),
            J::Array(a) => !a.is_empty(),
            J::Object(m) => !m.is_empty(),
        }
    }
    match &kind {
        Kind::List(args) => {
            let items: Option<Vec<J>> = args
                .iter()
                .map(|a| match a {
                    Arg::Pos(n) => constant(n),
                    _ => None,
                })
                .collect();
            items.map_or(kind, |v| Kind::Const(J::Array(v)))
        }
        Kind::Dict(args) => {
            let mut m = serde_json::Map::new();
            for a in args {
                let Arg::Map(k, v) = a else { return kind };
                let (Kind::Str(key) | Kind::Word(key)) = &k.kind else {
                    return kind;
                };
                let Some(v) = constant(v) else { return kind };
                m.insert(key.clone(), v);
            }
            Kind::Const(J::Object(m))
        }
        Kind::Unary(UnOp::Minus, n) => match n.kind {
            Kind::Int(i) => i.checked_neg().map_or(kind, Kind::Int),
            Kind::Float(x) => Kind::Float(-x),
            _ => kind,
        },
        Kind::Unary(UnOp::Not, n) => match constant(n) {
            Some(j) => Kind::Bool(!truthy(&j)),
            None => kind,
        },
        Kind::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), l, r) => {
            match (&l.kind, &r.kind, op) {
                (Kind::Int(a), Kind::Int(b), _) => {
                    let v = match op {
                        BinOp::Add => a.checked_add(*b),
                        BinOp::Sub => a.checked_sub(*b),
                        _ => a.checked_mul(*b),
                    };
                    v.map_or(kind, Kind::Int)
                }
                (Kind::Str(a), Kind::Str(b), BinOp::Add) => Kind::Str(format!("{a}{b}")),
                _ => kind,
            }
        }
        _ => kind,
    }
}

fn write_args(f: &mut fmt::Formatter<'_>, args: &[Arg]) -> fmt::Result {
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        match a {
            Arg::Pos(n) => write!(f, "{n}")?,
            Arg::Map(k, v) => write!(f, "{k} => {v}")?,
            Arg::Skip => {}
        }
    }
    Ok(())
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Null => f.write_str("null"),
            Kind::Bool(b) => write!(f, "{b}"),
            Kind::Int(i) => write!(f, "{i}"),
            Kind::Float(x) => f.write_str(&float_text(*x)),
            Kind::Str(s) => write_quoted(f, s),
            Kind::Word(w) => f.write_str(w),
            Kind::Var(v) => write!(f, "${v}"),
            Kind::Paren(n) => write!(f, "({n})"),
            Kind::List(args) => {
                f.write_str("[")?;
                write_args(f, args)?;
                f.write_str("]")
            }
            Kind::Dict(args) => {
                f.write_str("{")?;
                write_args(f, args)?;
                f.write_str("}")
            }
            Kind::Call(name, args) => {
                write!(f, "{name}(")?;
                write_args(f, args)?;
                f.write_str(")")
            }
            Kind::Method {
                recv,
                name,
                args,
                safe,
            } => {
                write!(f, "{recv}{}{name}(", if *safe { "?." } else { "." })?;
                write_args(f, args)?;
                f.write_str(")")
            }
            Kind::Member { recv, rhs, safe } => {
                let (recv, rhs) = (recv.to_string(), rhs.to_string());
                // `12 .5` must not read back as the float `12.5`.
                let gap = !*safe
                    && recv.ends_with(|c: char| c.is_ascii_digit())
                    && rhs.starts_with(|c: char| c.is_ascii_digit());
                let dot = if *safe { "?." } else { "." };
                write!(f, "{recv}{}{dot}{rhs}", if gap { " " } else { "" })
            }
            Kind::Index(v, args) => {
                write!(f, "{v}[")?;
                write_args(f, args)?;
                f.write_str("]")
            }
            Kind::Invoke(v, args) => {
                // A name glued to `(` would read back as a function call: keep them apart.
                let callee = v.to_string();
                let glue = if callee.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                    " "
                } else {
                    ""
                };
                write!(f, "{callee}{glue}(")?;
                write_args(f, args)?;
                f.write_str(")")
            }
            Kind::Unary(UnOp::Not, n) => write!(f, "not {n}"),
            Kind::Unary(UnOp::Plus, n) => write!(f, "+{n}"),
            Kind::Unary(UnOp::Minus, n) => write!(f, "-{n}"),
            Kind::Binary(op, l, r) => write!(f, "{l} {} {r}", op.symbol()),
            Kind::Const(j) => write_const(f, j),
        }
    }
}
