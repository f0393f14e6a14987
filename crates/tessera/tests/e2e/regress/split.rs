//! Splitting a file into statements and psql meta-commands as psql does: its lexical units (quotes, E'' strings,
//! dollar quotes, comments), `\;`, `COPY … FROM stdin` with its rows, and psql's variables.

use std::collections::HashMap;

use super::*;

/// A statement of a file, as psql sends it.
#[derive(Clone, Debug)]
pub(super) struct Statement {
    /// 1-based, counting the statements of its file (meta-commands not included).
    pub(super) index: usize,
    pub(super) line: usize,
    /// The text sent, without its final semicolon; `\;` joins statements into one query, as in psql.
    pub(super) text: String,
    /// The rows following a `COPY … FROM stdin`, up to its `\.`.
    pub(super) copy: Option<String>,
    /// `standard_conforming_strings` as the file had set it: how psql read the statement's strings.
    pub(super) standard_strings: bool,
}

impl Statement {
    /// Ties an expected outcome to the statement it was recorded for.
    pub(super) fn hash(&self) -> u32 {
        fnv(self.text.as_bytes()) as u32
    }
}

#[derive(Debug)]
pub(super) enum Item {
    Statement(Statement),
    /// A psql meta-command, with the statement it ends if any (`\gexec`, `\crosstabview`, …): skipped, but
    /// `\set` defines a variable.
    Meta {
        text: String,
    },
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Unit {
    /// One character of SQL.
    Code,
    /// A quoted string or identifier, or a dollar-quoted string.
    Quoted,
    Comment,
}

pub(super) fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The lexical unit at the start of `s` and its length in bytes. `before` is the text preceding `s` (E'' strings
/// and dollar quotes depend on what precedes them); `standard` is `standard_conforming_strings`, under which a
/// backslash in a '' string is an ordinary character.
pub(super) fn unit(s: &str, before: &str, standard: bool) -> (Unit, usize) {
    let mut chars = s.chars();
    let c = chars.next().expect("unit of an empty string");
    let next = chars.next();
    match c {
        '-' if next == Some('-') => (Unit::Comment, s.find('\n').unwrap_or(s.len())),
        '/' if next == Some('*') => {
            // Block comments nest.
            let (mut depth, mut i) = (0usize, 0usize);
            let b = s.as_bytes();
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        return (Unit::Comment, i);
                    }
                } else {
                    i += 1;
                }
            }
            (Unit::Comment, s.len())
        }
        '\'' => {
            // E'…' strings take backslash escapes; standard strings do not.
            let mut prev = before.chars().rev();
            let escapes = !standard || matches!(prev.next(), Some('e' | 'E')) && !prev.next().is_some_and(is_ident);
            let b = s.as_bytes();
            let mut i = 1;
            while i < b.len() {
                match b[i] {
                    b'\\' if escapes => i += 2,
                    b'\'' if b.get(i + 1) == Some(&b'\'') => i += 2,
                    b'\'' => return (Unit::Quoted, i + 1),
                    _ => i += 1,
                }
            }
            (Unit::Quoted, s.len())
        }
        '"' => {
            let b = s.as_bytes();
            let mut i = 1;
            while i < b.len() {
                match b[i] {
                    b'"' if b.get(i + 1) == Some(&b'"') => i += 2,
                    b'"' => return (Unit::Quoted, i + 1),
                    _ => i += 1,
                }
            }
            (Unit::Quoted, s.len())
        }
        '$' if !before.chars().next_back().is_some_and(is_ident) => {
            // $tag$ … $tag$, the tag an identifier not starting with a digit (or empty).
            let rest = &s[1..];
            let tag_len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let tag = &rest[..tag_len];
            if rest[tag_len..].starts_with('$') && !tag.starts_with(|c: char| c.is_ascii_digit()) {
                let delimiter = &s[..tag_len + 2];
                let body = &s[delimiter.len()..];
                let end = body.find(delimiter).map(|e| delimiter.len() * 2 + e).unwrap_or(s.len());
                (Unit::Quoted, end)
            } else {
                (Unit::Code, 1)
            }
        }
        _ => (Unit::Code, c.len_utf8()),
    }
}

/// The units of `sql`, in order.
pub(super) fn units(sql: &str, standard: bool) -> Vec<(Unit, &str)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < sql.len() {
        let (kind, len) = unit(&sql[i..], &sql[..i], standard);
        out.push((kind, &sql[i..i + len]));
        i += len;
    }
    out
}

/// Splits a file into statements and psql meta-commands, as psql reads it.
pub(super) fn split(text: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let mut buf = String::new();
    let (mut line, mut start_line, mut depth, mut index) = (1usize, 1usize, 0usize, 0usize);
    let mut i = 0;
    // psql lexes with the server's standard_conforming_strings; follow the file's SETs of it.
    let mut standard = true;
    let finish = |buf: &mut String,
                  items: &mut Vec<Item>,
                  index: &mut usize,
                  line: usize,
                  copy: Option<String>,
                  standard: &mut bool| {
        let text = buf.trim().to_string();
        buf.clear();
        if !text.is_empty() {
            *index += 1;
            let standard_strings = *standard;
            let words = code_words(&text, false, standard_strings);
            match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                ["set", "standard_conforming_strings", .., value] => *standard = !matches!(value, "off" | "false"),
                ["reset", "standard_conforming_strings" | "all"] => *standard = true,
                _ => {}
            }
            items.push(Item::Statement(Statement { index: *index, line, text, copy, standard_strings }));
        }
    };
    while i < text.len() {
        let (kind, len) = unit(&text[i..], &text[..i], standard);
        let piece = &text[i..i + len];
        if buf.trim().is_empty() {
            start_line = line;
        }
        match kind {
            // Comments are not sent: the server would ignore them anyway.
            Unit::Comment => buf.push(' '),
            Unit::Quoted => buf.push_str(piece),
            Unit::Code => match piece {
                "(" => {
                    depth += 1;
                    buf.push('(');
                }
                ")" => {
                    depth = depth.saturating_sub(1);
                    buf.push(')');
                }
                ";" if depth == 0 => {
                    let copy_from_stdin = is_copy_from_stdin(&buf, standard);
                    let mut copy = None;
                    i += 1;
                    if copy_from_stdin {
                        // The data start on the next line and end at a line `\.`.
                        let next_line = text[i..].find('\n').map(|n| i + n + 1).unwrap_or(text.len());
                        line += 1;
                        let mut data = String::new();
                        let mut at = next_line;
                        while at < text.len() {
                            let end = text[at..].find('\n').map(|n| at + n + 1).unwrap_or(text.len());
                            let row = &text[at..end];
                            line += 1;
                            at = end;
                            if row.trim_end() == "\\." {
                                break;
                            }
                            data.push_str(row);
                        }
                        copy = Some(data);
                        i = at;
                    }
                    finish(&mut buf, &mut items, &mut index, start_line, copy, &mut standard);
                    depth = 0;
                    continue;
                }
                "\\" => {
                    if text[i + 1..].starts_with(';') {
                        buf.push(';');
                        i += 2;
                        continue;
                    }
                    // A meta-command: its arguments run to the end of the line.
                    let end = text[i..].find('\n').map(|n| i + n).unwrap_or(text.len());
                    let command = text[i..end].trim_end().to_string();
                    let name = command[1..].split_whitespace().next().unwrap_or("");
                    match name {
                        // Sends the query buffer, as `;` does.
                        "g" | "gx" => finish(&mut buf, &mut items, &mut index, start_line, None, &mut standard),
                        // These send it and do more with the result than this harness can.
                        "gset" | "gexec" | "gdesc" | "crosstabview" | "watch" => {
                            let statement = buf.trim().to_string();
                            buf.clear();
                            items.push(Item::Meta { text: format!("{statement} {command}") });
                        }
                        _ => items.push(Item::Meta { text: command }),
                    }
                    depth = 0;
                    i = end;
                    continue;
                }
                _ => buf.push_str(piece),
            },
        }
        line += piece.matches('\n').count();
        i += len;
    }
    // psql sends what is left at the end of a file.
    finish(&mut buf, &mut items, &mut index, start_line, None, &mut standard);
    items
}

/// `COPY … FROM stdin`, whose rows follow it in the file.
pub(super) fn is_copy_from_stdin(sql: &str, standard: bool) -> bool {
    let words = code_words(sql, false, standard);
    words.first().is_some_and(|w| w == "copy") && words.windows(2).any(|w| w[0] == "from" && w[1] == "stdin")
}

/// The words of `sql` outside quotes and comments, lowercased; with `top_level`, only those outside parentheses.
pub(super) fn code_words(sql: &str, top_level: bool, standard: bool) -> Vec<String> {
    let mut code = String::new();
    let mut depth = 0usize;
    for (kind, piece) in units(sql, standard) {
        match (kind, piece) {
            (Unit::Code, "(") => {
                depth += 1;
                code.push(' ');
            }
            (Unit::Code, ")") => {
                depth = depth.saturating_sub(1);
                code.push(' ');
            }
            (Unit::Code, _) if depth == 0 || !top_level => code.push_str(&piece.to_lowercase()),
            _ => code.push(' '),
        }
    }
    code.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(String::from).collect()
}

/// Whether the rows of `sql` come in a defined order: an ORDER BY outside any parentheses.
pub(super) fn is_ordered(sql: &str, standard: bool) -> bool {
    code_words(sql, true, standard).windows(2).any(|w| w[0] == "order" && w[1] == "by")
}

/// psql's variables: `:name`, `:'name'` (as a literal) and `:"name"` (as an identifier), for defined names.
pub(super) fn interpolate(sql: &str, vars: &HashMap<String, String>, standard: bool) -> String {
    if vars.is_empty() || !sql.contains(':') {
        return sql.to_string();
    }
    let mut out = String::new();
    let mut i = 0;
    while i < sql.len() {
        let (kind, len) = unit(&sql[i..], &sql[..i], standard);
        let rest = &sql[i..];
        if kind == Unit::Code && rest.starts_with("::") {
            out.push_str("::");
            i += 2;
            continue;
        }
        if kind == Unit::Code && rest.starts_with(':') {
            let after = &rest[1..];
            let quote = after.chars().next().filter(|c| *c == '\'' || *c == '"');
            let name_start = usize::from(quote.is_some());
            let name_len =
                after[name_start..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(after.len());
            let name = &after[name_start..name_start + name_len];
            let closed = quote.is_none_or(|q| after[name_start + name_len..].starts_with(q));
            if let Some(value) = vars.get(name).filter(|_| !name.is_empty() && closed) {
                match quote {
                    Some('\'') => out.push_str(&format!("'{}'", value.replace('\'', "''"))),
                    Some(_) => out.push_str(&format!("\"{}\"", value.replace('"', "\"\""))),
                    None => out.push_str(value),
                }
                i += 1 + name_start * 2 + name_len;
                continue;
            }
        }
        out.push_str(&sql[i..i + len]);
        i += len;
    }
    out
}

/// psql's `\set name value…`: the value is its arguments concatenated, quoted ones unescaped and `:name` ones
/// interpolated.
pub(super) fn psql_set(args: &str, vars: &mut HashMap<String, String>) {
    let mut words = Vec::new();
    let mut chars = args.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                break;
            }
            chars.next();
            if c == '\'' {
                // psql's quoting: '' is a quote, a backslash escapes the next character.
                while let Some(c) = chars.next() {
                    match c {
                        '\'' if chars.peek() == Some(&'\'') => {
                            chars.next();
                            word.push('\'');
                        }
                        '\'' => break,
                        '\\' => match chars.next() {
                            Some('n') => word.push('\n'),
                            Some('t') => word.push('\t'),
                            Some(other) => word.push(other),
                            None => {}
                        },
                        _ => word.push(c),
                    }
                }
            } else {
                word.push(c);
            }
        }
        words.push(word);
    }
    let Some(name) = words.first().cloned() else { return };
    let value: String = words[1..]
        .iter()
        .map(|w| w.strip_prefix(':').and_then(|n| vars.get(n)).cloned().unwrap_or_else(|| w.clone()))
        .collect();
    vars.insert(name, value);
}
