//! Simple-protocol queries carry their values as literals
//! (`UPDATE t SET v = v + 42 WHERE id = 7`), so caching plans by exact text
//! would never hit. A template lifts the literals out (`… v + $1 WHERE id =
//! $2`) and the plan is cached by the template's text; the literals become
//! the parameters of each execution.
//!
//! The lexer is deliberately small: it gives up (and the query takes the
//! general path) on anything it does not fully understand — comments,
//! escape strings, dollar quoting, backslashes, decimal or exponent numbers,
//! several statements.

use super::expr::ParamKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Literal {
    Int(i64),
    Str(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The query with `$n` for each literal, whitespace collapsed, and the
    /// literal kinds appended (the same text with a string where a number was
    /// is another template).
    pub key: String,
    /// Where the `$n` text ends inside `key`.
    pub text_len: usize,
    pub literals: Vec<Literal>,
}

impl Template {
    pub fn text(&self) -> &str {
        &self.key[..self.text_len]
    }

    pub fn kinds(&self) -> Vec<ParamKind> {
        self.literals
            .iter()
            .map(|l| match l {
                Literal::Int(_) => ParamKind::Int,
                Literal::Str(_) => ParamKind::Context,
            })
            .collect()
    }
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

pub fn templatize(sql: &str) -> Option<Template> {
    let b = sql.as_bytes();
    let mut key = String::with_capacity(sql.len() + 8);
    let mut literals = Vec::new();
    let mut i = 0;
    let mut pending_space = false;
    let push_space = |key: &mut String, pending: &mut bool| {
        if *pending && !key.is_empty() {
            key.push(' ');
        }
        *pending = false;
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                pending_space = true;
                i += 1;
            }
            b';' => {
                // Only a trailing semicolon: one statement per template.
                if sql[i + 1..].trim().is_empty() {
                    break;
                }
                return None;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => return None,
            b'/' if b.get(i + 1) == Some(&b'*') => return None,
            b'$' | b'\\' => return None,
            b'\'' => {
                // A prefix (E'…', B'…', U&'…') or a typed literal glued to a word: not ours.
                if i > 0 && (ident_char(b[i - 1]) || b[i - 1] == b'&') {
                    return None;
                }
                let mut s = String::new();
                let mut j = i + 1;
                let mut start = j;
                loop {
                    match b.get(j) {
                        None => return None,
                        Some(b'\\') => return None,
                        Some(b'\'') if b.get(j + 1) == Some(&b'\'') => {
                            s.push_str(&sql[start..=j]);
                            j += 2;
                            start = j;
                        }
                        Some(b'\'') => {
                            s.push_str(&sql[start..j]);
                            break;
                        }
                        Some(_) => j += 1,
                    }
                }
                // Adjacent literals separated by a newline concatenate in SQL.
                if sql[j + 1..].trim_start().starts_with('\'') {
                    return None;
                }
                push_space(&mut key, &mut pending_space);
                literals.push(Literal::Str(s));
                key.push('$');
                key.push_str(&literals.len().to_string());
                i = j + 1;
            }
            b'"' => {
                let end = sql[i + 1..].find('"')? + i + 1;
                push_space(&mut key, &mut pending_space);
                key.push_str(&sql[i..=end]);
                i = end + 1;
            }
            b'0'..=b'9' => {
                let mut j = i;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                // 1.5, 1e3, 0x1F, 1_000: the general path's business.
                if b.get(j).is_some_and(|c| *c == b'.' || ident_char(*c)) {
                    return None;
                }
                let v: i64 = sql[i..j].parse().ok()?;
                push_space(&mut key, &mut pending_space);
                literals.push(Literal::Int(v));
                key.push('$');
                key.push_str(&literals.len().to_string());
                i = j;
            }
            c if ident_char(c) => {
                let mut j = i;
                while j < b.len() && ident_char(b[j]) {
                    j += 1;
                }
                push_space(&mut key, &mut pending_space);
                key.push_str(&sql[i..j]);
                i = j;
            }
            b'.' if b.get(i + 1).is_some_and(|c| c.is_ascii_digit()) => return None,
            _ => {
                push_space(&mut key, &mut pending_space);
                key.push(c as char);
                i += 1;
            }
        }
    }
    if key.is_empty() {
        return None;
    }
    let text_len = key.len();
    key.push('\0');
    for l in &literals {
        key.push(if matches!(l, Literal::Int(_)) { 'i' } else { 's' });
    }
    Some(Template { key, text_len, literals })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_become_parameters() {
        let t = templatize("UPDATE pgbench_accounts SET abalance = abalance + -4321 WHERE aid = 77;").unwrap();
        assert_eq!(t.text(), "UPDATE pgbench_accounts SET abalance = abalance + -$1 WHERE aid = $2");
        assert_eq!(t.literals, vec![Literal::Int(4321), Literal::Int(77)]);
        let u = templatize("UPDATE  pgbench_accounts SET abalance = abalance + -5 WHERE aid = 8").unwrap();
        assert_eq!(t.key, u.key);
        let s = templatize("select * from t where name = 'it''s'").unwrap();
        assert_eq!(s.text(), "select * from t where name = $1");
        assert_eq!(s.literals, vec![Literal::Str("it's".into())]);
        assert_ne!(templatize("select 1 where a = '1'").unwrap().key, templatize("select 1 where a = 1").unwrap().key);
        assert_eq!(templatize("SELECT \"Weird Col\" FROM t1").unwrap().text(), "SELECT \"Weird Col\" FROM t1");
    }

    #[test]
    fn anything_unusual_is_left_to_the_general_path() {
        for sql in [
            "select 1; select 2",
            "select 1.5",
            "select 1e3",
            "select E'a\\n'",
            "select 'a\\b'",
            "select $$x$$",
            "select 1 -- comment",
            "select /* c */ 1",
            "select 99999999999999999999",
            "select 'a'\n'b'",
            "",
            "  ;",
        ] {
            assert_eq!(templatize(sql), None, "{sql}");
        }
    }
}
