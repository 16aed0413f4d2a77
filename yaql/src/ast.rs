//! The syntax tree, stored flat: every node of an expression in one vector ([`Tree`]), children
//! by index, names as ranges of the source text. [`Node`], [`Kind`], [`Args`] and [`Arg`] are
//! cheap copyable views of it. The canonical text form (`Display`) parses back to the same tree.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;

use crate::json::Json as J;

/// A string of a tree: a byte range of its text (the source, then strings decoded or folded at
/// parse time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sym {
    start: u32,
    len: u32,
}

/// A range of a tree's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    len: u32,
}

/// A node as stored: children are indices into the tree.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Flat {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Sym),
    Word(Sym),
    Var(Sym),
    Paren(u32),
    List(Span),
    Dict(Span),
    Call(Sym, Span),
    Method {
        recv: u32,
        name: Sym,
        args: Span,
        safe: bool,
    },
    Member {
        recv: u32,
        rhs: u32,
        safe: bool,
    },
    Index(u32, Span),
    Invoke(u32, Span),
    Unary(UnOp, u32),
    Binary(BinOp, u32, u32),
    Const(u32),
    /// An argument of the call (or literal) whose range holds it; never a node's kind.
    Arg(FlatArg),
}

/// An argument as stored.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FlatArg {
    Pos(u32),
    Map(u32, u32),
    Skip,
}

#[derive(Debug, Clone, Copy)]
struct Stored {
    kind: Flat,
    pos: u32,
    depth: u32,
}

impl Stored {
    /// The argument an entry of an argument range holds.
    #[inline]
    fn arg(&self) -> FlatArg {
        match self.kind {
            Flat::Arg(a) => a,
            // Argument ranges hold only arguments (`Tree::push_args`).
            _ => FlatArg::Skip,
        }
    }
}

/// One word per node of a tree, made on first use: what evaluations remember about each node
/// (see `memo`).
#[derive(Debug, Default)]
pub(crate) struct Memo(OnceLock<Box<[AtomicU64]>>);

impl Clone for Memo {
    /// A copy of a tree starts with nothing remembered.
    fn clone(&self) -> Self {
        Memo::default()
    }
}

impl Memo {
    /// The word of node `id` of a tree of `len` entries.
    #[inline]
    pub(crate) fn word(&self, id: u32, len: usize) -> &AtomicU64 {
        let words = self
            .0
            .get_or_init(|| (0..len).map(|_| AtomicU64::new(0)).collect());
        &words[id as usize]
    }
}

/// The nodes of one expression and the arguments of its calls, in one vector, with the strings
/// and folded constants they use.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// The source text, then strings decoded or folded at parse time.
    text: String,
    source_len: usize,
    nodes: Vec<Stored>,
    consts: Vec<J>,
    root: u32,
    /// What evaluations remember per node (made on the first evaluation).
    memo: Memo,
}

impl Tree {
    /// An empty tree over `source` (room for the nodes of a text that long).
    pub(crate) fn new(source: &str) -> Tree {
        let mut text = String::with_capacity(source.len());
        text.push_str(source);
        Tree {
            text,
            source_len: source.len(),
            nodes: Vec::with_capacity(source.len() / 3 + 4),
            consts: Vec::new(),
            root: 0,
            memo: Memo::default(),
        }
    }

    /// The text the tree was parsed from.
    pub fn source(&self) -> &str {
        &self.text[..self.source_len]
    }

    /// The root node.
    pub fn root(&self) -> Node<'_> {
        Node {
            tree: self,
            id: self.root,
        }
    }

    pub(crate) fn set_root(&mut self, id: u32) {
        self.root = id;
    }

    /// How many entries are stored (nodes, folded ones included, and arguments).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    #[inline]
    fn str(&self, s: Sym) -> &str {
        &self.text[s.start as usize..(s.start + s.len) as usize]
    }

    /// A range of the source text as a tree string.
    pub(crate) fn source_sym(&self, start: usize, len: usize) -> Sym {
        // Both fit: the parser refuses sources longer than `u32::MAX` bytes.
        Sym {
            start: start as u32,
            len: len as u32,
        }
    }

    /// Keeps a string that is not a slice of the source (decoded or folded).
    pub(crate) fn intern(&mut self, s: &str) -> Sym {
        let start = self.text.len() as u32;
        self.text.push_str(s);
        Sym {
            start,
            len: s.len() as u32,
        }
    }

    /// Moves arguments into the tree (after the nodes so far), returning their range.
    pub(crate) fn push_args(&mut self, args: impl Iterator<Item = FlatArg>) -> Span {
        let start = self.nodes.len() as u32;
        self.nodes.extend(args.map(|a| Stored {
            kind: Flat::Arg(a),
            pos: 0,
            depth: 0,
        }));
        Span {
            start,
            len: self.nodes.len() as u32 - start,
        }
    }

    /// Stores a node (folding it when its children are constants), returning its index and height.
    #[inline(always)]
    pub(crate) fn push(&mut self, kind: Flat, pos: usize) -> (u32, u32) {
        let foldable = matches!(
            kind,
            Flat::List(_)
                | Flat::Dict(_)
                | Flat::Unary(UnOp::Minus | UnOp::Not, _)
                | Flat::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, ..)
        );
        let kind = if foldable { self.fold(kind) } else { kind };
        let d = |id: u32| self.nodes[id as usize].depth;
        let args = |s: Span| {
            self.nodes[s.start as usize..(s.start + s.len) as usize]
                .iter()
                .map(|a| match a.arg() {
                    FlatArg::Pos(n) => d(n),
                    FlatArg::Map(k, v) => d(k).max(d(v)),
                    FlatArg::Skip => 0,
                })
                .max()
                .unwrap_or(0)
        };
        let below = match kind {
            Flat::Paren(n) | Flat::Unary(_, n) => d(n),
            Flat::Binary(_, l, r) => d(l).max(d(r)),
            Flat::Member { recv, rhs, .. } => d(recv).max(d(rhs)),
            Flat::Method { recv, args: a, .. } => d(recv).max(args(a)),
            Flat::Index(v, a) | Flat::Invoke(v, a) => d(v).max(args(a)),
            Flat::Call(_, a) | Flat::List(a) | Flat::Dict(a) => args(a),
            _ => 0,
        };
        let id = self.nodes.len() as u32;
        self.nodes.push(Stored {
            kind,
            // The parser refuses sources longer than `u32::MAX` bytes.
            pos: pos as u32,
            depth: below + 1,
        });
        (id, below + 1)
    }

    #[inline]
    fn flat_args(&self, s: Span) -> &[Stored] {
        &self.nodes[s.start as usize..(s.start + s.len) as usize]
    }

    /// The constant a stored node stands for, when it is one.
    fn constant(&self, id: u32) -> Option<J> {
        Some(match self.nodes[id as usize].kind {
            Flat::Null => J::Null,
            Flat::Bool(b) => J::Bool(b),
            Flat::Int(i) => J::from(i),
            Flat::Float(x) => J::from(x),
            Flat::Str(s) | Flat::Word(s) => J::String(self.str(s).into()),
            Flat::Const(c) => self.consts[c as usize].clone(),
            _ => return None,
        })
    }

    fn push_const(&mut self, j: J) -> Flat {
        self.consts.push(j);
        Flat::Const(self.consts.len() as u32 - 1)
    }

    /// Folds a node whose children are all constants into a constant, where that is exact:
    /// list literals, dictionary literals with string keys, `-` of a number, `not` of a constant,
    /// and `+ - *` on integers (no overflow) or `+` on strings. Anything else is left as it is.
    #[inline(never)]
    fn fold(&mut self, kind: Flat) -> Flat {
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
        match kind {
            Flat::List(s) => {
                let items: Option<Vec<J>> = self
                    .flat_args(s)
                    .iter()
                    .map(|a| match a.arg() {
                        FlatArg::Pos(n) => self.constant(n),
                        _ => None,
                    })
                    .collect();
                items.map_or(kind, |v| self.push_const(J::Array(v.into())))
            }
            Flat::Dict(s) => {
                let mut m = Vec::new();
                for a in self.flat_args(s) {
                    let FlatArg::Map(k, v) = a.arg() else {
                        return kind;
                    };
                    let (Flat::Str(key) | Flat::Word(key)) = self.nodes[k as usize].kind else {
                        return kind;
                    };
                    let Some(v) = self.constant(v) else {
                        return kind;
                    };
                    m.push((crate::json::Key::from(self.str(key)), v));
                }
                self.push_const(J::object(m))
            }
            Flat::Unary(UnOp::Minus, n) => match self.nodes[n as usize].kind {
                Flat::Int(i) => i.checked_neg().map_or(kind, Flat::Int),
                Flat::Float(x) => Flat::Float(-x),
                _ => kind,
            },
            Flat::Unary(UnOp::Not, n) => match self.constant(n) {
                Some(j) => Flat::Bool(!truthy(&j)),
                None => kind,
            },
            Flat::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), l, r) => {
                match (self.nodes[l as usize].kind, self.nodes[r as usize].kind, op) {
                    (Flat::Int(a), Flat::Int(b), _) => {
                        let v = match op {
                            BinOp::Add => a.checked_add(b),
                            BinOp::Sub => a.checked_sub(b),
                            _ => a.checked_mul(b),
                        };
                        v.map_or(kind, Flat::Int)
                    }
                    (Flat::Str(a), Flat::Str(b), BinOp::Add) => {
                        let joined = format!("{}{}", self.str(a), self.str(b));
                        Flat::Str(self.intern(&joined))
                    }
                    _ => kind,
                }
            }
            _ => kind,
        }
    }
}

/// The bit of [`Node::bit`] for the node at address `addr` (see [`Node::addr`]).
#[inline]
pub(crate) fn bit_of(addr: usize) -> u64 {
    1 << ((addr / std::mem::size_of::<Stored>()) % 64)
}

/// A node of a tree: a copyable view (the tree and an index).
#[derive(Clone, Copy)]
pub struct Node<'t> {
    tree: &'t Tree,
    id: u32,
}

impl<'t> Node<'t> {
    #[inline]
    fn stored(self) -> &'t Stored {
        &self.tree.nodes[self.id as usize]
    }

    #[inline]
    fn at(self, id: u32) -> Node<'t> {
        Node {
            tree: self.tree,
            id,
        }
    }

    #[inline]
    fn args(self, s: Span) -> Args<'t> {
        Args {
            tree: self.tree,
            items: self.tree.flat_args(s),
        }
    }

    /// What the node is.
    #[inline(always)]
    pub fn kind(self) -> Kind<'t> {
        let t = self.tree;
        match self.stored().kind {
            Flat::Null => Kind::Null,
            Flat::Bool(b) => Kind::Bool(b),
            Flat::Int(i) => Kind::Int(i),
            Flat::Float(x) => Kind::Float(x),
            Flat::Str(s) => Kind::Str(t.str(s)),
            Flat::Word(s) => Kind::Word(t.str(s)),
            Flat::Var(s) => Kind::Var(t.str(s)),
            Flat::Paren(n) => Kind::Paren(self.at(n)),
            Flat::List(a) => Kind::List(self.args(a)),
            Flat::Dict(a) => Kind::Dict(self.args(a)),
            Flat::Call(name, a) => Kind::Call(t.str(name), self.args(a)),
            Flat::Method {
                recv,
                name,
                args,
                safe,
            } => Kind::Method {
                recv: self.at(recv),
                name: t.str(name),
                args: self.args(args),
                safe,
            },
            Flat::Member { recv, rhs, safe } => Kind::Member {
                recv: self.at(recv),
                rhs: self.at(rhs),
                safe,
            },
            Flat::Index(v, a) => Kind::Index(self.at(v), self.args(a)),
            Flat::Invoke(v, a) => Kind::Invoke(self.at(v), self.args(a)),
            Flat::Unary(op, n) => Kind::Unary(op, self.at(n)),
            Flat::Binary(op, l, r) => Kind::Binary(op, self.at(l), self.at(r)),
            Flat::Const(c) => Kind::Const(&t.consts[c as usize]),
            // Node indices never point at an argument entry.
            Flat::Arg(_) => Kind::Null,
        }
    }

    /// Byte offset in the source text, for error carets.
    #[inline]
    pub fn pos(self) -> usize {
        self.stored().pos as usize
    }

    /// Height of the subtree (1 for a leaf); the parser bounds it.
    pub fn depth(self) -> u32 {
        self.stored().depth
    }

    /// A number naming this node while its tree lives (the address of its stored form): the key
    /// under which values computed for it are kept.
    #[inline]
    pub fn addr(self) -> usize {
        self.stored() as *const Stored as usize
    }

    /// The word evaluations remember about this node in (see `memo`).
    #[inline]
    pub(crate) fn memo(self) -> &'t std::sync::atomic::AtomicU64 {
        self.tree.memo.word(self.id, self.tree.nodes.len())
    }

    /// A bit standing for this node among the first 64 of its tree (several nodes share one in
    /// larger trees): sets of nodes as one word, for a first test.
    #[inline]
    pub(crate) fn bit(self) -> u64 {
        bit_of(self.addr())
    }

    /// Whether `self` and `other` are the same node of the same tree.
    pub fn same(self, other: Node<'_>) -> bool {
        self.addr() == other.addr()
    }
}

impl PartialEq for Node<'_> {
    /// Same subtree (positions aside).
    fn eq(&self, other: &Self) -> bool {
        self.kind() == other.kind()
    }
}

impl fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("kind", &self.kind())
            .field("pos", &self.pos())
            .finish()
    }
}

/// The arguments of a call, an indexer or a list or dictionary literal: a copyable view.
#[derive(Clone, Copy)]
pub struct Args<'t> {
    tree: &'t Tree,
    items: &'t [Stored],
}

impl<'t> Args<'t> {
    /// How many arguments (skipped ones included).
    pub fn len(self) -> usize {
        self.items.len()
    }

    /// True when there are none.
    pub fn is_empty(self) -> bool {
        self.items.is_empty()
    }

    #[inline]
    fn view(self, a: FlatArg) -> Arg<'t> {
        let at = |id| Node {
            tree: self.tree,
            id,
        };
        match a {
            FlatArg::Pos(n) => Arg::Pos(at(n)),
            FlatArg::Map(k, v) => Arg::Map(at(k), at(v)),
            FlatArg::Skip => Arg::Skip,
        }
    }

    /// The `i`th argument.
    #[inline]
    pub fn get(self, i: usize) -> Option<Arg<'t>> {
        self.items.get(i).map(|a| self.view(a.arg()))
    }

    /// The arguments in order.
    pub fn iter(self) -> ArgsIter<'t> {
        ArgsIter {
            tree: self.tree,
            items: self.items.iter(),
        }
    }

    /// The first argument.
    pub fn first(self) -> Option<Arg<'t>> {
        self.get(0)
    }

    /// The arguments from the `n`th on.
    pub fn skip(self, n: usize) -> Args<'t> {
        Args {
            tree: self.tree,
            items: self.items.get(n..).unwrap_or(&[]),
        }
    }

    /// The only argument, when there is exactly one and it is positional.
    #[inline]
    pub fn one(self) -> Option<Node<'t>> {
        match self.items {
            [a] => match a.arg() {
                FlatArg::Pos(n) => Some(Node {
                    tree: self.tree,
                    id: n,
                }),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The arguments of an [`Args`], in order.
#[derive(Clone)]
pub struct ArgsIter<'t> {
    tree: &'t Tree,
    items: std::slice::Iter<'t, Stored>,
}

impl<'t> ArgsIter<'t> {
    fn view(&self, a: FlatArg) -> Arg<'t> {
        Args {
            tree: self.tree,
            items: &[],
        }
        .view(a)
    }
}

impl<'t> Iterator for ArgsIter<'t> {
    type Item = Arg<'t>;

    fn next(&mut self) -> Option<Arg<'t>> {
        let a = self.items.next()?.arg();
        Some(self.view(a))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
}

impl DoubleEndedIterator for ArgsIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let a = self.items.next_back()?.arg();
        Some(self.view(a))
    }
}

impl ExactSizeIterator for ArgsIter<'_> {}

impl<'t> IntoIterator for Args<'t> {
    type Item = Arg<'t>;
    type IntoIter = ArgsIter<'t>;

    fn into_iter(self) -> ArgsIter<'t> {
        self.iter()
    }
}

impl PartialEq for Args<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl fmt::Debug for Args<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
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
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg<'t> {
    /// A positional argument.
    Pos(Node<'t>),
    /// `key => value`: a named argument when `key` is a bare word, else a mapping rule.
    Map(Node<'t>, Node<'t>),
    /// A skipped positional argument (`f(1,,3)`).
    Skip,
}

/// Node kinds, as read from the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind<'t> {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A quoted string.
    Str(&'t str),
    /// A bare word (a string constant, or a key name after `.`).
    Word(&'t str),
    /// `$name`; `$` alone has the empty name.
    Var(&'t str),
    /// `( expr )`
    Paren(Node<'t>),
    /// `[ args ]`
    List(Args<'t>),
    /// `{ args }`
    Dict(Args<'t>),
    /// `name(args)`
    Call(&'t str, Args<'t>),
    /// `receiver.name(args)`, or `receiver?.name(args)` when `safe`.
    Method {
        /// The receiver.
        recv: Node<'t>,
        /// Method name.
        name: &'t str,
        /// Arguments.
        args: Args<'t>,
        /// `?.` rather than `.`.
        safe: bool,
    },
    /// `receiver.rhs` where `rhs` is not a method call (a key when it is a bare word).
    Member {
        /// The receiver.
        recv: Node<'t>,
        /// The right side.
        rhs: Node<'t>,
        /// `?.` rather than `.`.
        safe: bool,
    },
    /// `value[args]`
    Index(Node<'t>, Args<'t>),
    /// `value(args)`: calling a lambda held in a value.
    Invoke(Node<'t>, Args<'t>),
    /// A prefix operator.
    Unary(UnOp, Node<'t>),
    /// A binary operator.
    Binary(BinOp, Node<'t>, Node<'t>),
    /// A constant folded at parse time (`[1, 2]`, `{a => 1}`, `{}`, `-1`, `2 * 60`): evaluating it
    /// borrows the value, building nothing.
    Const(&'t J),
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
fn write_const(f: &mut fmt::Formatter<'_>, j: &J) -> fmt::Result {
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

fn write_args(f: &mut fmt::Formatter<'_>, args: Args<'_>) -> fmt::Result {
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

impl fmt::Display for Node<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            Kind::Null => f.write_str("null"),
            Kind::Bool(b) => write!(f, "{b}"),
            Kind::Int(i) => write!(f, "{i}"),
            Kind::Float(x) => f.write_str(&float_text(x)),
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
                write!(f, "{recv}{}{name}(", if safe { "?." } else { "." })?;
                write_args(f, args)?;
                f.write_str(")")
            }
            Kind::Member { recv, rhs, safe } => {
                let (recv, rhs) = (recv.to_string(), rhs.to_string());
                // `12 .5` must not read back as the float `12.5`.
                let gap = !safe
                    && recv.ends_with(|c: char| c.is_ascii_digit())
                    && rhs.starts_with(|c: char| c.is_ascii_digit());
                let dot = if safe { "?." } else { "." };
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
