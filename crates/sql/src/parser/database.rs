//! PostgreSQL's own `CREATE DATABASE … WITH option = value` takes no
//! parentheses and sqlparser parses neither form, so `CREATE DATABASE …
//! WITH (…)` is recognized here, before sqlparser sees the text, and turned
//! into sqlparser's `CreateDatabase` with the options in its key-value list
//! (`with_tags`), so that it travels through both protocols like any other
//! statement.

use datafusion::sql::sqlparser::ast::{ObjectName, Statement, Tag};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Word};

use crate::error::{Result, SqlError, code};

/// Recognizes `CREATE DATABASE [IF NOT EXISTS] name WITH (option = value,
/// …)`. None when `sql` is not such a statement (sqlparser then parses it as
/// usual); an error when it starts like one but does not follow the form.
pub fn parse_create_database_with(sql: &str) -> Option<Result<Statement>> {
    // Cheap refusal first: this runs before every statement is parsed.
    let head = sql.trim_start();
    if !head.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("create")) {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let tokens: Vec<Token> = tokens.into_iter().filter(|t| !matches!(t, Token::Whitespace(_))).collect();
    let kw = |i: usize, k: Keyword| matches!(tokens.get(i), Some(Token::Word(Word { keyword, .. })) if *keyword == k);
    if !(kw(0, Keyword::CREATE) && kw(1, Keyword::DATABASE)) {
        return None;
    }
    let with_at = tokens.iter().position(|t| matches!(t, Token::Word(Word { keyword: Keyword::WITH, .. })))?;
    Some(parse_options(&tokens, with_at))
}

/// The option that marks an `AlterSchema` statement as a database split
/// (sqlparser has no statement for `ALTER DATABASE … SPLIT AT`).
pub const SPLIT_AT_OPTION: &str = "tessera_split_at";

/// Recognizes `ALTER DATABASE name SPLIT AT (value)` and carries it as an
/// `AlterSchema` whose one option is [`SPLIT_AT_OPTION`] = the value's text.
pub fn parse_alter_database_split(sql: &str) -> Option<Result<Statement>> {
    let head = sql.trim_start();
    if !head.get(..5).is_some_and(|w| w.eq_ignore_ascii_case("alter")) {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let tokens: Vec<Token> =
        tokens.into_iter().filter(|t| !matches!(t, Token::Whitespace(_) | Token::EOF | Token::SemiColon)).collect();
    let word = |i: usize, w: &str| matches!(tokens.get(i), Some(Token::Word(x)) if x.value.eq_ignore_ascii_case(w));
    let split = tokens.iter().any(|t| matches!(t, Token::Word(x) if x.value.eq_ignore_ascii_case("split")));
    if !(word(0, "alter") && word(1, "database") && split) {
        return None;
    }
    let syntax = || SqlError::syntax("syntax error: expected ALTER DATABASE name SPLIT AT (value)");
    let name = match tokens.get(2) {
        Some(Token::Word(w)) => {
            if w.quote_style.is_some() {
                w.value.clone()
            } else {
                w.value.to_lowercase()
            }
        }
        _ => return Some(Err(syntax())),
    };
    if !(word(3, "split")
        && word(4, "at")
        && tokens.get(5) == Some(&Token::LParen)
        && tokens.last() == Some(&Token::RParen))
    {
        return Some(Err(syntax()));
    }
    let inner = &tokens[6..tokens.len() - 1];
    let value = match inner {
        [Token::SingleQuotedString(s)] => s.clone(),
        [Token::Number(n, _)] => n.clone(),
        [Token::Minus, Token::Number(n, _)] => format!("-{n}"),
        _ => return Some(Err(syntax())),
    };
    use datafusion::sql::sqlparser::ast::{AlterSchema, AlterSchemaOperation, Expr, Ident, SqlOption, Value};
    Some(Ok(Statement::AlterSchema(AlterSchema {
        name: ObjectName::from(vec![Ident::new(name)]),
        if_exists: false,
        operations: vec![AlterSchemaOperation::SetOptionsParens {
            options: vec![SqlOption::KeyValue {
                key: Ident::new(SPLIT_AT_OPTION),
                value: Expr::value(Value::SingleQuotedString(value)),
            }],
        }],
    })))
}

fn parse_options(tokens: &[Token], with_at: usize) -> Result<Statement> {
    let syntax = |what: &str| SqlError::syntax(format!("syntax error in CREATE DATABASE: {what}"));
    // Everything before WITH is plain CREATE DATABASE, which sqlparser parses.
    let head: String = tokens[..with_at].iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" ");
    let mut stmts = super::parse_sql(&head)?;
    let Some(Statement::CreateDatabase { with_tags, .. }) = stmts.first_mut() else {
        return Err(syntax("expected CREATE DATABASE name WITH (option = value, …)"));
    };
    let mut rest = tokens[with_at + 1..].iter();
    if rest.next() != Some(&Token::LParen) {
        return Err(syntax("expected ( after WITH"));
    }
    let mut tags = Vec::new();
    loop {
        let key = match rest.next() {
            Some(Token::Word(w)) => w.value.to_lowercase(),
            _ => return Err(syntax("expected an option name")),
        };
        if rest.next() != Some(&Token::Eq) {
            return Err(syntax(&format!("expected = after {key}")));
        }
        let value = match rest.next() {
            Some(Token::SingleQuotedString(s)) => s.clone(),
            Some(Token::Number(n, _)) => n.clone(),
            Some(Token::Word(w)) => w.value.clone(),
            _ => return Err(syntax(&format!("expected a value for {key}"))),
        };
        tags.push(Tag::new(ObjectName::from(vec![datafusion::sql::sqlparser::ast::Ident::new(key)]), value));
        match rest.next() {
            Some(Token::Comma) => continue,
            Some(Token::RParen) => break,
            _ => return Err(syntax("expected , or ) in the option list")),
        }
    }
    let trailing: Vec<&Token> = rest.filter(|t| !matches!(t, Token::EOF | Token::SemiColon)).collect();
    if let Some(t) = trailing.first() {
        return Err(SqlError::new(
            code::ACTIVE_TXN,
            format!("CREATE DATABASE cannot run with other statements (found {t} after it)"),
        ));
    }
    *with_tags = Some(tags);
    Ok(stmts.remove(0))
}
