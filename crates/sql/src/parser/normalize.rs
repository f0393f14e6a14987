//! Statements sqlparser does not read as PostgreSQL writes them, rewritten
//! as text into forms it does read, before parsing.

/// The name of the CHECK constraint that carries a domain's NOT NULL
/// (sqlparser reads no NOT NULL in CREATE DOMAIN; `ddl::type_ddl` turns the
/// constraint back into the domain's flag).
pub const NOT_NULL_MARK: &str = "tessera.not_null";

/// PostgreSQL accepts `ON`/`OFF` for boolean COPY options (`WITH (FREEZE ON)`,
/// as pgbench sends); sqlparser wants TRUE/FALSE.
pub fn copy_options(sql: &str) -> std::borrow::Cow<'_, str> {
    let trimmed = sql.trim_start();
    if !trimmed.get(..4).is_some_and(|w| w.eq_ignore_ascii_case("copy")) {
        return std::borrow::Cow::Borrowed(sql);
    }
    let lower = sql.to_lowercase();
    let mut out = sql.to_string();
    for (opt, word, value) in
        [("freeze", "on", "TRUE"), ("freeze", "off", "FALSE"), ("header", "on", "TRUE"), ("header", "off", "FALSE")]
    {
        let pattern = format!("{opt} {word}");
        if let Some(i) = lower.find(&pattern) {
            let end = i + pattern.len();
            if lower[end..].starts_with([',', ')', ' ']) {
                out.replace_range(i..end, &format!("{} {value}", &sql[i..i + opt.len()]));
                return std::borrow::Cow::Owned(out);
            }
        }
    }
    std::borrow::Cow::Borrowed(sql)
}

/// `CREATE DOMAIN d AS t … NOT NULL …`: sqlparser reads a domain's CHECK
/// constraints but not NOT NULL, which becomes a marked CHECK here (only
/// in a statement that is one CREATE DOMAIN; quotes and parentheses are
/// respected).
pub fn create_domain(sql: &str) -> Option<String> {
    let head = sql.trim_start();
    let words: Vec<&str> = head.split_whitespace().take(2).collect();
    if words.len() < 2 || !words[0].eq_ignore_ascii_case("create") || !words[1].eq_ignore_ascii_case("domain") {
        return None;
    }
    let upper = head.to_uppercase();
    let bytes = upper.as_bytes();
    let (mut depth, mut quote, mut out, mut i, mut changed) = (0i32, None::<u8>, String::new(), 0usize, false);
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'(' => depth += 1,
            None if c == b')' => depth -= 1,
            None if depth == 0
                && upper[i..].starts_with("NOT NULL")
                && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) =>
            {
                i += "NOT NULL".len();
                changed = true;
                continue;
            }
            None => {}
        }
        let ch = head[i..].chars().next().expect("in range");
        out.push(ch);
        i += ch.len_utf8();
    }
    // At the end, after any DEFAULT, where sqlparser reads constraints.
    let end = out.trim_end().trim_end_matches(';').trim_end().len();
    out.truncate(end);
    out.push_str(&format!(" CONSTRAINT \"{NOT_NULL_MARK}\" CHECK (VALUE IS NOT NULL)"));
    changed.then_some(out)
}

/// `ALTER VIEW [IF EXISTS] v RENAME TO w`, which the SQL parser reads only
/// in its `ALTER VIEW v AS query` form, as the `ALTER TABLE` PostgreSQL
/// also accepts for a view (the statement's other forms are not built).
pub fn alter_view(sql: &str) -> Option<String> {
    let trimmed = sql.trim().trim_end_matches(';').trim_end();
    let words: Vec<&str> = trimmed.split_whitespace().collect();
    let upper: Vec<String> = words.iter().map(|w| w.to_uppercase()).collect();
    let rest = match upper.as_slice() {
        [alter, view, rest @ ..] if alter == "ALTER" && view == "VIEW" => rest,
        _ => return None,
    };
    let (if_exists, tail) = match rest {
        [i, e, tail @ ..] if i == "IF" && e == "EXISTS" => (true, tail),
        tail => (false, tail),
    };
    match tail {
        [_, rename, to, _] if rename == "RENAME" && to == "TO" => {
            let (name, new) = (words[words.len() - 4], words[words.len() - 1]);
            let exists = if if_exists { "IF EXISTS " } else { "" };
            Some(format!("ALTER TABLE {exists}{name} RENAME TO {new}"))
        }
        _ => None,
    }
}

/// `ABORT [WORK | TRANSACTION] [AND [NO] CHAIN]`, PostgreSQL's other name
/// for ROLLBACK, which sqlparser does not read (only in a statement that is
/// one ABORT).
pub fn abort(sql: &str) -> Option<String> {
    let head = sql.trim_start();
    let word = head.get(..5)?;
    let rest = &head[5..];
    let single = !rest.trim_end().trim_end_matches(';').contains(';');
    let ends_word = rest.is_empty() || rest.starts_with(|c: char| c.is_whitespace() || c == ';');
    (word.eq_ignore_ascii_case("abort") && ends_word && single).then(|| format!("ROLLBACK{rest}"))
}

/// `INTERVAL(p) '…'`: sqlparser reads the literal but drops its precision,
/// which then goes unapplied (a silent wrong answer); it is rewritten as
/// `CAST('…' AS INTERVAL(p))`, which keeps it.
pub fn interval_precision(sql: &str) -> Option<String> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::keywords::Keyword;
    use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};
    if !sql.to_ascii_lowercase().contains("interval") {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().ok()?;
    let solid: Vec<_> = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    // Byte offset of a location (1-based line and column, in characters).
    let offset = |loc: Location| -> Option<usize> {
        let line_start = if loc.line <= 1 { 0 } else { sql.match_indices('\n').nth(loc.line as usize - 2)?.0 + 1 };
        let col = (loc.column as usize).checked_sub(1)?;
        Some(sql[line_start..].char_indices().nth(col).map_or(sql.len(), |(i, _)| line_start + i))
    };
    let mut out = String::new();
    let mut copied = 0;
    for w in solid.windows(5) {
        let [kw, open, num, close, lit] = w else { continue };
        let is_interval =
            matches!(&kw.token, Token::Word(word) if word.keyword == Keyword::INTERVAL && word.quote_style.is_none());
        if !(is_interval
            && open.token == Token::LParen
            && matches!(num.token, Token::Number(..))
            && close.token == Token::RParen
            && matches!(lit.token, Token::SingleQuotedString(_)))
        {
            continue;
        }
        let (start, lit_start, end) = (offset(kw.span.start)?, offset(lit.span.start)?, offset(lit.span.end)?);
        if start < copied {
            continue;
        }
        out.push_str(&sql[copied..start]);
        out.push_str(&format!("CAST({} AS INTERVAL({}))", &sql[lit_start..end], num.token));
        copied = end;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&sql[copied..]);
    Some(out)
}

/// `BEGIN … [NOT] DEFERRABLE` and `START TRANSACTION … [NOT] DEFERRABLE`
/// (a statement of its own), whose mode sqlparser does not read: the text
/// without it, and whether it said DEFERRABLE (true) or NOT DEFERRABLE.
pub fn begin_deferrable(sql: &str) -> Option<(String, bool)> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    if !sql.to_ascii_lowercase().contains("deferrable") {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let word =
        |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let solid: Vec<usize> = (0..tokens.len()).filter(|i| !matches!(tokens[*i], Token::Whitespace(_))).collect();
    let first = &tokens[*solid.first()?];
    let starts = word(first, "begin")
        || (word(first, "start") && solid.get(1).is_some_and(|i| word(&tokens[*i], "transaction")));
    if !starts || tokens.iter().filter(|t| matches!(t, Token::SemiColon)).count() > 1 {
        return None;
    }
    let at = solid.iter().position(|i| word(&tokens[*i], "deferrable"))?;
    let not = at > 0 && word(&tokens[solid[at - 1]], "not");
    let from = if not { at - 1 } else { at };
    // The mode and the comma that joined it to the others.
    let (mut drop_from, mut drop_to) = (solid[from], solid[at]);
    if from > 0 && matches!(tokens[solid[from - 1]], Token::Comma) {
        drop_from = solid[from - 1];
    } else if let Some(next) = solid.get(at + 1).filter(|i| matches!(tokens[**i], Token::Comma)) {
        drop_to = *next;
    }
    let text: String =
        tokens.iter().enumerate().filter(|(i, _)| *i < drop_from || *i > drop_to).map(|(_, t)| t.to_string()).collect();
    Some((text, !not))
}

/// `SUBSTRING(s SIMILAR pattern ESCAPE e)`, which sqlparser does not read,
/// as its older spelling `SUBSTRING(s FROM pattern FOR e)` (the same
/// function in PostgreSQL; `values::patterns` plans it).
pub fn substring_similar(sql: &str) -> Option<String> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("substring") || !lower.contains("similar") {
        return None;
    }
    let mut tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let word =
        |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    // For each open parenthesis: whether it opened a SUBSTRING call.
    let mut opened: Vec<bool> = Vec::new();
    let mut last_solid: Option<usize> = None;
    let mut changed = false;
    for i in 0..tokens.len() {
        match &tokens[i] {
            Token::LParen => opened.push(last_solid.is_some_and(|j| word(&tokens[j], "substring"))),
            Token::RParen => {
                opened.pop();
            }
            t if opened.last() == Some(&true) && (word(t, "similar") || word(t, "escape")) => {
                let keyword = if word(t, "similar") { "FROM" } else { "FOR" };
                tokens[i] = Token::make_keyword(keyword);
                changed = true;
            }
            _ => {}
        }
        if !matches!(tokens[i], Token::Whitespace(_)) {
            last_solid = Some(i);
        }
    }
    changed.then(|| tokens.iter().map(|t| t.to_string()).collect())
}

/// `RANGE BETWEEN '1 year'::interval PRECEDING …`: sqlparser reads a
/// frame offset as a literal only, so a cast one becomes the typed literal
/// `INTERVAL '1 year'` (the same value).
pub fn frame_interval_offsets(sql: &str) -> Option<String> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    let lower = sql.to_ascii_lowercase();
    if !(lower.contains("preceding") || lower.contains("following")) || !lower.contains("::") {
        return None;
    }
    let mut tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let word =
        |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let solid: Vec<usize> = (0..tokens.len()).filter(|i| !matches!(tokens[*i], Token::Whitespace(_))).collect();
    let mut changed = false;
    for w in solid.windows(4) {
        let [lit, colons, ty, bound] = [w[0], w[1], w[2], w[3]];
        if matches!(tokens[lit], Token::SingleQuotedString(_))
            && matches!(tokens[colons], Token::DoubleColon)
            && word(&tokens[ty], "interval")
            && (word(&tokens[bound], "preceding") || word(&tokens[bound], "following"))
        {
            let Token::SingleQuotedString(text) = &tokens[lit] else { continue };
            let typed = format!("INTERVAL '{}'", text.replace('\'', "''"));
            tokens[lit] = Token::make_word(&typed, None);
            tokens[colons] = Token::make_word("", None);
            tokens[ty] = Token::make_word("", None);
            changed = true;
        }
    }
    changed.then(|| tokens.iter().map(|t| t.to_string()).collect())
}

/// `RESET TIME ZONE`, which sqlparser does not read, as `RESET timezone`
/// (a statement of its own).
pub fn reset_time_zone(sql: &str) -> Option<String> {
    let words: Vec<&str> = sql.trim().trim_end_matches(';').split_whitespace().collect();
    let matches = words.len() == 3
        && words[0].eq_ignore_ascii_case("reset")
        && words[1].eq_ignore_ascii_case("time")
        && words[2].eq_ignore_ascii_case("zone");
    matches.then(|| "RESET timezone".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_not_null_becomes_a_marked_check() {
        let sql = create_domain("create domain d as text not null check (value <> 'NOT NULL')").unwrap();
        assert_eq!(
            sql,
            "create domain d as text  check (value <> 'NOT NULL') CONSTRAINT \"tessera.not_null\" CHECK (VALUE IS NOT NULL)"
        );
        let sql = create_domain("CREATE DOMAIN d AS text NOT NULL DEFAULT 'x';").unwrap();
        assert_eq!(
            sql,
            "CREATE DOMAIN d AS text  DEFAULT 'x' CONSTRAINT \"tessera.not_null\" CHECK (VALUE IS NOT NULL)"
        );
        assert!(create_domain("create domain d as int check (value > 0)").is_none());
        assert!(create_domain("select 'create domain not null'").is_none());
    }

    #[test]
    fn alter_view_rename_reads_as_alter_table() {
        assert_eq!(alter_view("alter view v rename to w;").as_deref(), Some("ALTER TABLE v RENAME TO w"));
        assert_eq!(
            alter_view("ALTER VIEW IF EXISTS \"V\" RENAME TO w").as_deref(),
            Some("ALTER TABLE IF EXISTS \"V\" RENAME TO w")
        );
        assert_eq!(alter_view("ALTER VIEW v AS SELECT 1"), None);
        assert_eq!(alter_view("ALTER TABLE v RENAME TO w"), None);
    }

    #[test]
    fn abort_is_rollback() {
        assert_eq!(abort("ABORT").as_deref(), Some("ROLLBACK"));
        assert_eq!(abort("  abort work and chain;").as_deref(), Some("ROLLBACK work and chain;"));
        assert_eq!(abort("aborted"), None);
        assert_eq!(abort("abort; select 1"), None);
        assert_eq!(abort("select 1"), None);
    }

    #[test]
    fn interval_precision_becomes_a_cast() {
        assert_eq!(
            interval_precision("SELECT interval(2) '1 day 01:23:45.6789', 'interval(3) ''x'''").as_deref(),
            Some("SELECT CAST('1 day 01:23:45.6789' AS INTERVAL(2)), 'interval(3) ''x'''")
        );
        assert_eq!(
            interval_precision("SELECT\n  INTERVAL (0)  'it''s'").as_deref(),
            Some("SELECT\n  CAST('it''s' AS INTERVAL(0))")
        );
        assert_eq!(interval_precision("SELECT interval '1 day'"), None);
    }

    #[test]
    fn deferrable_leaves_begin() {
        let (text, on) =
            begin_deferrable("START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY, DEFERRABLE").unwrap();
        assert_eq!((text.as_str(), on), ("START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY", true));
        let (text, on) = begin_deferrable("begin not deferrable, read write").unwrap();
        assert_eq!((text.split_whitespace().collect::<Vec<_>>().join(" ").as_str(), on), ("begin read write", false));
        assert_eq!(begin_deferrable("SELECT 'deferrable'"), None);
    }

    #[test]
    fn substring_similar_reads_as_from_for() {
        assert_eq!(
            substring_similar("SELECT SUBSTRING('abcdefg' SIMILAR 'a#\"(b_d)#\"%' ESCAPE '#') AS \"bcd\"").as_deref(),
            Some("SELECT SUBSTRING('abcdefg' FROM 'a#\"(b_d)#\"%' FOR '#') AS \"bcd\"")
        );
        assert_eq!(substring_similar("SELECT 'a' SIMILAR TO 'b'"), None);
    }

    #[test]
    fn frame_offsets_cast_to_interval_become_typed_literals() {
        let out = frame_interval_offsets(
            "select sum(x) over (order by d range between '1 year'::interval preceding and '1 day'::interval following)",
        )
        .unwrap();
        assert_eq!(
            out.split_whitespace().collect::<Vec<_>>().join(" "),
            "select sum(x) over (order by d range between INTERVAL '1 year' preceding and INTERVAL '1 day' following)"
        );
        assert_eq!(frame_interval_offsets("select '1'::interval"), None);
    }
}
