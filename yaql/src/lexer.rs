//! The lexer: YAQL's tokens (`$name`, numbers, three kinds of strings, bare words, a function
//! name glued to its `(`, operators and punctuation).

use super::errors::{ParseError, ParseErrorKind};

/// An operator or punctuation mark.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum P {
    /// `.`
    Dot,
    /// `?.`
    SafeDot,
    /// `=~`
    Match,
    /// `!~`
    NotMatch,
    /// `>=`
    Ge,
    /// `<=`
    Le,
    /// `!=`
    Ne,
    /// `->`
    Arrow,
    /// `=>`
    FatArrow,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `>`
    Gt,
    /// `<`
    Lt,
    /// `=`
    Eq,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBrack,
    /// `]`
    RBrack,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `,`
    Comma,
    /// `mod`
    Mod,
    /// `in`
    In,
    /// `not`
    Not,
    /// `and`
    And,
    /// `or`
    Or,
}

impl P {
    /// The operator as written.
    pub fn text(self) -> &'static str {
        match self {
            P::Dot => ".",
            P::SafeDot => "?.",
            P::Match => "=~",
            P::NotMatch => "!~",
            P::Ge => ">=",
            P::Le => "<=",
            P::Ne => "!=",
            P::Arrow => "->",
            P::FatArrow => "=>",
            P::Plus => "+",
            P::Minus => "-",
            P::Star => "*",
            P::Slash => "/",
            P::Gt => ">",
            P::Lt => "<",
            P::Eq => "=",
            P::LParen => "(",
            P::RParen => ")",
            P::LBrack => "[",
            P::RBrack => "]",
            P::LBrace => "{",
            P::RBrace => "}",
            P::Comma => ",",
            P::Mod => "mod",
            P::In => "in",
            P::Not => "not",
            P::And => "and",
            P::Or => "or",
        }
    }
}

impl std::fmt::Debug for P {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.text())
    }
}

/// One token; names and strings without escapes borrow the source text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tok<'t> {
    /// `$`, `$name` or `$1` (the text after `$`).
    Var(&'t str),
    /// An integer literal.
    Int(i64),
    /// A float literal (digits, a dot, digits; no exponent).
    Float(f64),
    /// A quoted string without escapes (its text between the quotes).
    Str(&'t str),
    /// A quoted string with escapes: its decoded text is the lexer's [`Lexer::decoded`].
    Decoded,
    /// A bare word that is no keyword: a string constant or a key name.
    Word(&'t str),
    /// A function name glued to its `(` (the `(` is part of the token).
    Func(&'t str),
    /// `true`.
    True,
    /// `false`.
    False,
    /// `null`.
    Null,
    /// An operator or punctuation: `. ?. + - * / mod =~ !~ > < >= <= != = in not and or -> => ( ) [ ] { } ,`.
    Op(P),
    /// End of input.
    End,
}

/// The operator or punctuation mark at the start of `rest`, and its length.
fn symbol(rest: &[u8]) -> Option<(P, usize)> {
    let two = |p| Some((p, 2));
    let one = |p| Some((p, 1));
    let next = rest.get(1).copied();
    match (rest.first()?, next) {
        (b'?', Some(b'.')) => two(P::SafeDot),
        (b'=', Some(b'~')) => two(P::Match),
        (b'!', Some(b'~')) => two(P::NotMatch),
        (b'>', Some(b'=')) => two(P::Ge),
        (b'<', Some(b'=')) => two(P::Le),
        (b'!', Some(b'=')) => two(P::Ne),
        (b'-', Some(b'>')) => two(P::Arrow),
        (b'=', Some(b'>')) => two(P::FatArrow),
        (b'.', _) => one(P::Dot),
        (b'+', _) => one(P::Plus),
        (b'-', _) => one(P::Minus),
        (b'*', _) => one(P::Star),
        (b'/', _) => one(P::Slash),
        (b'>', _) => one(P::Gt),
        (b'<', _) => one(P::Lt),
        (b'=', _) => one(P::Eq),
        (b'(', _) => one(P::LParen),
        (b')', _) => one(P::RParen),
        (b'[', _) => one(P::LBrack),
        (b']', _) => one(P::RBrack),
        (b'{', _) => one(P::LBrace),
        (b'}', _) => one(P::RBrace),
        (b',', _) => one(P::Comma),
        _ => None,
    }
}

/// ASCII bytes that may appear in a name (letters, digits, `_`).
const NAME_BYTE: [bool; 128] = {
    let mut t = [false; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_';
        c += 1;
    }
    t
};

/// The length in bytes of the name at the start of `rest` (ASCII fast, Unicode letters too).
#[inline]
fn word_len(rest: &str) -> usize {
    let b = rest.as_bytes();
    let mut n = 0;
    while n < b.len() {
        let c = b[n];
        if c < 0x80 {
            if !NAME_BYTE[c as usize] {
                return n;
            }
            n += 1;
        } else {
            return n + rest[n..]
                .chars()
                .take_while(|c| is_word_char(*c))
                .map(char::len_utf8)
                .sum::<usize>();
        }
    }
    n
}

fn is_word_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn lex_error(text: &str, pos: usize, message: impl Into<String>) -> Box<ParseError> {
    Box::new(ParseError {
        kind: ParseErrorKind::Lexical,
        message: message.into(),
        expr: text.to_string(),
        pos,
    })
}

/// Reads tokens one at a time, on demand: the current one is [`Lexer::tok`].
pub struct Lexer<'t> {
    text: &'t str,
    i: usize,
    /// The current token ([`Tok::End`] before the first [`Lexer::advance`]).
    pub tok: Tok<'t>,
    /// Byte offset of the current token.
    pub pos: usize,
    /// The text of the current token when it is [`Tok::Decoded`].
    pub decoded: String,
}

impl<'t> Lexer<'t> {
    /// A lexer at the start of `text`.
    pub fn new(text: &'t str) -> Lexer<'t> {
        Lexer {
            text,
            i: 0,
            tok: Tok::End,
            pos: 0,
            decoded: String::new(),
        }
    }

    /// Reads the next token into [`Lexer::tok`] ([`Tok::End`] at the end, and again after it).
    pub fn advance(&mut self) -> Result<(), Box<ParseError>> {
        let bytes = self.text.as_bytes();
        let mut i = self.i;
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'\r' | b'\n') {
            i += 1;
        }
        self.pos = i;
        let len = self.read(i)?;
        self.i = i + len;
        Ok(())
    }

    /// Reads the token at `start` (no blank there) into `self.tok`, returning its length.
    fn read(&mut self, start: usize) -> Result<usize, Box<ParseError>> {
        let text = self.text;
        let bytes = text.as_bytes();
        let i = start;
        if i >= text.len() {
            self.tok = Tok::End;
            return Ok(0);
        }
        let b = bytes[i];
        if let Some((p, len)) = symbol(&bytes[i..]) {
            self.tok = Tok::Op(p);
            return Ok(len);
        }
        let rest = &text[i..];
        let c = if b < 0x80 {
            char::from(b)
        } else {
            match rest.chars().next() {
                Some(c) => c,
                None => {
                    self.tok = Tok::End;
                    return Ok(0);
                }
            }
        };
        if c == '$' {
            let name_len = word_len(&rest[1..]);
            self.tok = Tok::Var(&rest[1..1 + name_len]);
            return Ok(1 + name_len);
        }
        if c.is_ascii_digit() {
            let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            let mut len = int_len;
            let mut is_float = false;
            if bytes.get(i + len) == Some(&b'.')
                && bytes.get(i + len + 1).is_some_and(u8::is_ascii_digit)
            {
                let frac = rest[len + 1..]
                    .bytes()
                    .take_while(u8::is_ascii_digit)
                    .count();
                len += 1 + frac;
                is_float = true;
            }
            if rest[len..].chars().next().is_some_and(is_word_char) {
                return Err(lex_error(
                    text,
                    start + len,
                    "a number cannot run into a name",
                ));
            }
            let lit = &rest[..len];
            self.tok = if is_float {
                match lit.parse::<f64>() {
                    Ok(x) if x.is_finite() => Tok::Float(x),
                    _ => return Err(lex_error(text, start, "number too large")),
                }
            } else {
                Tok::Int(
                    lit.parse()
                        .map_err(|_| lex_error(text, start, "integer too large"))?,
                )
            };
            return Ok(len);
        }
        if is_word_start(c) {
            if rest.starts_with("__") {
                return Err(lex_error(text, start, "names cannot start with `__`"));
            }
            let len = word_len(rest);
            let word = &rest[..len];
            if bytes.get(i + len) == Some(&b'(') {
                self.tok = Tok::Func(word);
                return Ok(len + 1);
            }
            self.tok = match word {
                "true" => Tok::True,
                "false" => Tok::False,
                "null" => Tok::Null,
                "mod" => Tok::Op(P::Mod),
                "in" => Tok::Op(P::In),
                "not" => Tok::Op(P::Not),
                "and" => Tok::Op(P::And),
                "or" => Tok::Op(P::Or),
                w => Tok::Word(w),
            };
            return Ok(len);
        }
        if c == '\'' || c == '"' {
            let (plain, len) = quoted(text, i, c, &mut self.decoded)?;
            self.tok = match plain {
                Some(s) => Tok::Str(s),
                None => Tok::Decoded,
            };
            return Ok(len);
        }
        if c == '`' {
            let len = verbatim(text, i, &mut self.decoded)?;
            self.tok = Tok::Decoded;
            return Ok(len);
        }
        Err(lex_error(
            text,
            start,
            format!("unexpected character `{c}`"),
        ))
    }
}

/// Reads a verbatim (backtick) string starting at `start` into `out`, returning its length;
/// only "\`" is an escape.
fn verbatim(text: &str, start: usize, out: &mut String) -> Result<usize, Box<ParseError>> {
    let body = &text[start + 1..];
    out.clear();
    let mut chars = body.char_indices();
    while let Some((j, c)) = chars.next() {
        match c {
            '`' => return Ok(j + 2),
            '\\' => match chars.next() {
                Some((_, '`')) => out.push('`'),
                Some((_, other)) => {
                    out.push('\\');
                    out.push(other);
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    Err(lex_error(text, start, "unterminated string"))
}

/// Reads a quoted string (`'` or `"`) starting at `start`, decoding escapes as YAQL does: its
/// text when it has no escape, else `None` and the decoded text in `out`; and its length.
fn quoted<'t>(
    text: &'t str,
    start: usize,
    quote: char,
    out: &mut String,
) -> Result<(Option<&'t str>, usize), Box<ParseError>> {
    let body = &text[start + 1..];
    // Most strings have no escape: one copy of the slice.
    let q = quote as u8;
    if let Some(j) = body.bytes().position(|b| b == q || b == b'\\') {
        if body.as_bytes()[j] == q {
            return Ok((Some(&body[..j]), j + 2));
        }
    }
    out.clear();
    let mut chars = body.char_indices().peekable();
    while let Some((j, c)) = chars.next() {
        if c == quote {
            return Ok((None, j + 2));
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((k, e)) = chars.next() else { break };
        let simple = match e {
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let hex_len = match e {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => 0,
        };
        let after = &body[k + e.len_utf8()..];
        if hex_len > 0 {
            let digits = after
                .get(..hex_len)
                .filter(|d| d.chars().all(|c| c.is_ascii_hexdigit()));
            if let Some(ch) = digits
                .and_then(|d| u32::from_str_radix(d, 16).ok())
                .and_then(char::from_u32)
            {
                out.push(ch);
                for _ in 0..hex_len {
                    chars.next();
                }
                continue;
            }
        } else if ('0'..='7').contains(&e) {
            let extra = after
                .chars()
                .take(2)
                .take_while(|c| ('0'..='7').contains(c))
                .count();
            let digits = &body[k..k + 1 + extra];
            if let Some(ch) = u32::from_str_radix(digits, 8).ok().and_then(char::from_u32) {
                out.push(ch);
                for _ in 0..extra {
                    chars.next();
                }
                continue;
            }
        }
        // Not an escape YAQL knows: kept as written.
        out.push('\\');
        out.push(e);
    }
    Err(lex_error(text, start, "unterminated string"))
}
