//! The crate's top-level modules form layers: each imports (through a `crate::` or `super::`
//! path) only modules below it in [`LAYERS`], so no two import each other, however indirectly.
//! The files of a folder (`library/`, `json/`) count as their folder's module and may import
//! one another. The test reads the sources as text: comments and literals are left out, inline
//! modules (`mod tests { ... }`) are followed for `super::`, and names the crate root re-exports
//! (`crate::Expression`) count as their module.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// The top-level modules, bottom to top.
const LAYERS: &[&str] = &[
    "json",
    "errors",
    "limits",
    "lexer",
    "ast",
    "parser",
    "hashindex",
    "pattern",
    "value",
    "cache",
    "memo",
    "states",
    "shared",
    "registry",
    "fastpath",
    "library",
    "fuel",
    "eval",
    "engine",
];

#[test]
fn each_module_imports_only_modules_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = read_crate(&src);
    let mut faults = Vec::new();
    for m in found
        .modules
        .iter()
        .filter(|m| !LAYERS.contains(&m.as_str()))
    {
        faults.push(format!("`{m}` is a module of the crate but not in LAYERS"));
    }
    for m in LAYERS.iter().filter(|m| !found.modules.contains(**m)) {
        faults.push(format!("`{m}` is in LAYERS but no module of the crate"));
    }
    let level = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut upward: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for (from, to, at) in &found.imports {
        if let (Some(a), Some(b)) = (level(from), level(to)) {
            if b > a {
                let places = upward.entry((from, to)).or_default();
                if !places.contains(&at.as_str()) {
                    places.push(at);
                }
            }
        }
    }
    for ((from, to), places) in upward {
        let cycle = match path_between(&found.imports, to, from) {
            Some(back) => format!("; cycle: {from} -> {}", back.join(" -> ")),
            None => String::new(),
        };
        faults.push(format!(
            "`{from}` imports `{to}`, which is above it in LAYERS ({}){cycle}",
            places.join(", ")
        ));
    }
    assert!(
        faults.is_empty(),
        "the modules are not in layers:\n  {}",
        faults.join("\n  ")
    );
}

#[test]
fn the_reader_follows_paths_as_rust_resolves_them() {
    let text = r#"
        use crate::value::Value; // crate::eval in a comment
        use super::{ast::Node, errors};
        /* crate::engine::Engine in a block comment */
        const S: &str = "crate::eval::Interp";
        const C: char = '"';
        fn f<'a>(x: &'a str) -> super::limits::Limits { crate::Expression::parse(x) }
        mod tests {
            use super::*;
            use super::super::lexer::Lexer;
        }
    "#;
    let roots = BTreeMap::from([("Expression".to_string(), "parser".to_string())]);
    let mut seen: Vec<String> = imports_of(&["memo".to_string()], &clean(text), &roots, "t.rs")
        .into_iter()
        .map(|(to, _)| to)
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        ["ast", "errors", "lexer", "limits", "memo", "parser", "value"]
    );
}

/// What the sources say: the top-level modules, and each import between two of them (importing
/// module, imported module, where).
struct Crate {
    modules: BTreeSet<String>,
    imports: Vec<(String, String, String)>,
}

fn read_crate(src: &Path) -> Crate {
    let lib = clean(&std::fs::read_to_string(src.join("lib.rs")).expect("reads lib.rs"));
    let tokens = tokenize(&lib);
    let mut modules = BTreeSet::new();
    let mut roots = BTreeMap::new();
    for (i, t) in tokens.iter().enumerate() {
        let next = |k: usize| tokens.get(i + k).map_or("", |t| t.text.as_str());
        if t.text == "mod" && next(2) == ";" {
            modules.insert(next(1).to_string());
        }
        if t.text == "use" {
            // `pub use module::{A, B as C};` or `pub use module::A;`: names the root re-exports.
            let module = next(1).to_string();
            let mut k = i + 2;
            while let Some(t) = tokens.get(k).filter(|t| t.text != ";") {
                let after = tokens.get(k + 1).map_or("", |t| t.text.as_str());
                if is_ident(&t.text) && t.text != "as" && after != "as" && after != "::" {
                    roots.insert(t.text.clone(), module.clone());
                }
                k += 1;
            }
        }
    }
    let mut imports = Vec::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).expect("below src");
        let mut path: Vec<String> = rel
            .with_extension("")
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if path.last().is_some_and(|p| p == "mod") {
            path.pop();
        }
        if path == ["lib"] {
            continue;
        }
        let text = clean(&std::fs::read_to_string(&file).expect("reads a source file"));
        let shown = format!("src/{}", rel.display());
        for (to, at) in imports_of(&path, &text, &roots, &shown) {
            if to != path[0] {
                imports.push((path[0].clone(), to, at));
            }
        }
    }
    Crate { modules, imports }
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("reads a source folder") {
        let path = entry.expect("reads a folder entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The top-level modules named by the `crate::` and `super::` paths of the file of module
/// `module` (its path from the crate root), with where each path is.
fn imports_of(
    module: &[String],
    text: &str,
    roots: &BTreeMap<String, String>,
    file: &str,
) -> Vec<(String, String)> {
    let tokens = tokenize(text);
    let mut out = Vec::new();
    // Inline modules open: (name, brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    let text_at = |k: usize| tokens.get(k).map_or("", |t: &Token| t.text.as_str());
    while i < tokens.len() {
        let t = &tokens[i];
        match t.text.as_str() {
            "mod" if text_at(i + 2) == "{" => {
                depth += 1;
                inline.push((text_at(i + 1).to_string(), depth));
                i += 3;
                continue;
            }
            "{" => depth += 1,
            "}" => {
                if inline.last().is_some_and(|m| m.1 == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            "crate" | "super" if text_at(i + 1) == "::" => {
                let here: Vec<String> = module
                    .iter()
                    .cloned()
                    .chain(inline.iter().map(|m| m.0.clone()))
                    .collect();
                let mut base = if t.text == "crate" {
                    Vec::new()
                } else {
                    here[..here.len().saturating_sub(1)].to_vec()
                };
                let mut k = i + 1;
                let mut end = None;
                let mut tails = vec![Vec::new()];
                let mut segments = Vec::new();
                while text_at(k) == "::" {
                    let next = text_at(k + 1);
                    if next == "super" && segments.is_empty() {
                        base.pop();
                    } else if is_ident(next) {
                        segments.push(next.to_string());
                    } else if next == "{" {
                        // A group: the first name of each of its entries.
                        tails.clear();
                        let (mut level, mut first) = (0, true);
                        k += 1;
                        while k < tokens.len() {
                            match text_at(k) {
                                "{" => level += 1,
                                "}" if level == 1 => break,
                                "}" => level -= 1,
                                "," if level == 1 => first = true,
                                name if first && level == 1 && is_ident(name) => {
                                    if name != "self" {
                                        tails.push(vec![name.to_string()]);
                                    } else {
                                        tails.push(Vec::new());
                                    }
                                    first = false;
                                }
                                _ => first = false,
                            }
                            k += 1;
                        }
                        end = Some(k + 1);
                        break;
                    } else {
                        break;
                    }
                    k += 2;
                }
                for tail in tails {
                    let full: Vec<&String> = base.iter().chain(&segments).chain(&tail).collect();
                    let Some(first) = full.first() else { continue };
                    let to = roots.get(*first).unwrap_or(first).to_string();
                    out.push((to, format!("{file}:{}", t.line)));
                }
                i = end.unwrap_or(k);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// A path of imports from `from` to `to`, `to` included.
fn path_between(imports: &[(String, String, String)], from: &str, to: &str) -> Option<Vec<String>> {
    let mut came: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(m) = queue.pop_front() {
        if m == to {
            let mut path = vec![to.to_string()];
            let mut at = to;
            while at != from {
                at = came[at];
                path.push(at.to_string());
            }
            path.reverse();
            return Some(path);
        }
        for (a, b, _) in imports.iter().filter(|(a, ..)| a == m) {
            if b != from && !came.contains_key(b.as_str()) {
                came.insert(b, a);
                queue.push_back(b);
            }
        }
    }
    None
}

/// One token: a name or a punctuation mark (`::` is one), with its line.
struct Token {
    text: String,
    line: usize,
}

fn is_ident(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token {
                text: chars[start..i].iter().collect(),
                line,
            });
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: c.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// The text with comments, string and character literals blanked (their line breaks kept).
fn clean(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    // Skips to `end`, keeping the line breaks passed.
    let skip = |from: usize, end: &[char], escapes: bool, out: &mut String| -> usize {
        let mut i = from;
        while i < chars.len() && !chars[i..].starts_with(end) {
            if chars[i] == '\\' && escapes {
                i += 1;
            }
            if chars.get(i) == Some(&'\n') {
                out.push('\n');
            }
            i += 1;
        }
        i + end.len()
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_ident = i > 0 && ident(chars[i - 1]);
        if c == '/' && next == Some('/') {
            i = skip(i, &['\n'], false, &mut out) - 1;
        } else if c == '/' && next == Some('*') {
            // Block comments nest.
            let mut level = 0;
            while i < chars.len() {
                if chars[i..].starts_with(&['/', '*']) {
                    level += 1;
                    i += 2;
                } else if chars[i..].starts_with(&['*', '/']) {
                    level -= 1;
                    i += 2;
                    if level == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && matches!(next, Some('#' | '"'))
            && (!prev_ident || (chars[i - 1] == 'b' && (i < 2 || !ident(chars[i - 2]))))
        {
            let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
            if chars.get(i + 1 + hashes) == Some(&'"') {
                let end: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                i = skip(i + 2 + hashes, &end, false, &mut out);
                out.push_str("\"\"");
            } else {
                out.push(c);
                i += 1;
            }
        } else if c == '"' {
            i = skip(i + 1, &['"'], true, &mut out);
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            i = skip(i + 3, &['\''], false, &mut out);
            out.push_str("' '");
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}
