//! COPY … FROM STDIN and COPY … TO STDOUT, in text, CSV and binary formats.
//!
//! COPY FROM collects the client's data, then parses it into columns,
//! converts each column to its type (an error names the line and column),
//! applies the same checks as INSERT and writes the rows in the statement's
//! transaction. Long loads log their progress.

use std::borrow::Cow;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BinaryArray, BooleanArray, RecordBatch, StringArray, new_null_array};
use datafusion::sql::sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Statement,
};

use crate::error::{Result, SqlError, code};
use crate::exec::dml::{allocate_rowids, check_rows, encode_rows, target_table};
use crate::parser::normalize;
use crate::scope::output::{CopyIn, Format};
use crate::session::{Output, Session};
use crate::storage::catalog::TableDef;
use crate::storage::row_waits::Interrupted;
use crate::values::types::SqlType;

fn format_of(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> Result<Format> {
    let mut f = Format::text();
    let mut delim = None;
    let mut null = None;
    for o in options {
        match o {
            CopyOption::Format(name) => match name.value.to_lowercase().as_str() {
                "csv" => f.csv = true,
                "text" => f.csv = false,
                "binary" => f.binary = true,
                other => {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("COPY format \"{other}\" not recognized"),
                    ));
                }
            },
            CopyOption::Delimiter(c) => delim = Some(*c),
            CopyOption::Null(s) => null = Some(s.clone()),
            CopyOption::Header(h) => f.header = *h,
            CopyOption::Quote(c) => f.quote = *c,
            CopyOption::Escape(c) => f.escape = *c,
            CopyOption::Freeze(_) | CopyOption::Encoding(_) => {}
            other => return Err(SqlError::unsupported(format!("the COPY option {other}"))),
        }
    }
    for o in legacy {
        match o {
            CopyLegacyOption::Csv(opts) => {
                f.csv = true;
                for c in opts {
                    match c {
                        CopyLegacyCsvOption::Header => f.header = true,
                        CopyLegacyCsvOption::Quote(q) => f.quote = *q,
                        CopyLegacyCsvOption::Escape(e) => f.escape = *e,
                        _ => {}
                    }
                }
            }
            CopyLegacyOption::Delimiter(c) => delim = Some(*c),
            CopyLegacyOption::Null(s) => null = Some(s.clone()),
            CopyLegacyOption::Header => f.header = true,
            CopyLegacyOption::Binary => f.binary = true,
            other => return Err(SqlError::unsupported(format!("the COPY option {other}"))),
        }
    }
    if f.csv {
        f.delimiter = delim.unwrap_or(',');
        f.null = null.unwrap_or_default();
    } else {
        f.delimiter = delim.unwrap_or('\t');
        f.null = null.unwrap_or_else(|| "\\N".into());
        if f.header {
            // PostgreSQL 15 accepts HEADER for text format too.
        }
    }
    Ok(f)
}

pub async fn start(
    session: &mut Session,
    source: CopySource,
    to: bool,
    target: CopyTarget,
    options: Vec<CopyOption>,
    legacy: Vec<CopyLegacyOption>,
) -> Result<Output> {
    let format = format_of(&options, &legacy)?;
    match (&target, to) {
        (CopyTarget::Stdin, false) | (CopyTarget::Stdout, true) => {}
        _ => {
            return Err(SqlError::unsupported(
                "COPY to or from a server file or program (use COPY … FROM STDIN / TO STDOUT, or psql's \\copy)",
            ));
        }
    }
    if to {
        let query = match source {
            CopySource::Query(q) => Statement::Query(q),
            CopySource::Table { table_name, columns } => {
                let def = target_table(session, &table_name)?;
                let cols: Vec<String> = if columns.is_empty() {
                    def.columns.iter().map(|c| format!("\"{}\"", c.name)).collect()
                } else {
                    columns.iter().map(|c| format!("\"{}\"", normalize(&c.value, c.quote_style))).collect()
                };
                crate::plan::parse_sql(&format!("SELECT {} FROM \"{}\"", cols.join(", "), def.name))?
                    .pop()
                    .expect("statement")
            }
        };
        let plan = session.plan_query(query, &[]).await?;
        let Output::Rows { schema, batches, .. } = session.collect(plan).await? else {
            return Err(SqlError::internal("COPY query returned no rows"));
        };
        if format.binary {
            return binary_out(&schema, &batches);
        }
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        let mut rows = 0;
        let mut data = Vec::new();
        if format.header {
            let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
            let line: Vec<String> = names.iter().map(|n| quote_field(n, &format)).collect();
            data.extend_from_slice(line.join(&format.delimiter.to_string()).as_bytes());
            data.push(b'\n');
        }
        let mut cell = String::new();
        let style = session.text_style();
        let types: Vec<crate::values::types::SqlType> =
            schema.fields().iter().map(|f| crate::values::types::SqlType::of_field(f)).collect();
        for b in &batches {
            for r in 0..b.num_rows() {
                for (ci, col) in b.columns().iter().enumerate() {
                    if ci > 0 {
                        data.extend_from_slice(format.delimiter.to_string().as_bytes());
                    }
                    match crate::values::text::format_cell_in(col, r, style) {
                        None => data.extend_from_slice(format.null.as_bytes()),
                        Some(v) => {
                            cell.clear();
                            cell.push_str(&crate::values::text::pad_char(&v, types[ci]));
                            data.extend_from_slice(quote_field(&cell, &format).as_bytes());
                        }
                    }
                }
                data.push(b'\n');
                chunks.push(std::mem::take(&mut data));
                rows += 1;
            }
        }
        if !data.is_empty() {
            chunks.push(data);
        }
        return Ok(Output::CopyOut { chunks, columns: schema.fields().len(), rows, binary: false });
    }
    let CopySource::Table { table_name, columns } = source else {
        return Err(SqlError::syntax("COPY FROM needs a table"));
    };
    let def = target_table(session, &table_name)?;
    let cols: Vec<usize> = if columns.is_empty() {
        (0..def.columns.len()).collect()
    } else {
        columns
            .iter()
            .map(|c| {
                let n = normalize(&c.value, c.quote_style);
                def.column_index(&n).ok_or_else(|| {
                    SqlError::new(
                        code::UNDEFINED_COLUMN,
                        format!("column \"{n}\" of relation \"{}\" does not exist", def.name),
                    )
                })
            })
            .collect::<Result<_>>()?
    };
    let (autocommit, savepoint) = session.statement_state();
    Ok(Output::CopyIn(Box::new(CopyIn { def, columns: cols, format, data: Vec::new(), autocommit, savepoint })))
}

/// COPY … TO STDOUT (FORMAT binary): one chunk per row, the header with
/// the first (the wire layer counts chunks as rows, and adds the trailer).
fn binary_out(schema: &datafusion::arrow::datatypes::Schema, batches: &[RecordBatch]) -> Result<Output> {
    let types: Vec<SqlType> = schema.fields().iter().map(|f| SqlType::of_field(f)).collect();
    let mut chunks = Vec::new();
    let mut rows = 0;
    for b in batches {
        for r in 0..b.num_rows() {
            let tuple = crate::values::copy_binary::tuple(b, r, &types)?;
            chunks.push(if rows == 0 { [crate::values::copy_binary::header(), tuple].concat() } else { tuple });
            rows += 1;
        }
    }
    if chunks.is_empty() {
        chunks.push(crate::values::copy_binary::header());
    }
    Ok(Output::CopyOut { chunks, columns: schema.fields().len(), rows, binary: true })
}

fn quote_field(v: &str, f: &Format) -> String {
    if f.csv {
        let needs = v.is_empty() && !f.null.is_empty()
            || v.contains(f.delimiter)
            || v.contains(f.quote)
            || v.contains('\n')
            || v.contains('\r')
            || v == f.null;
        if needs {
            let q = f.quote.to_string();
            let escaped = v.replace(&q, &format!("{}{}", f.escape, f.quote));
            format!("{q}{escaped}{q}")
        } else {
            v.to_string()
        }
    } else {
        let mut out = String::with_capacity(v.len());
        for ch in v.chars() {
            match ch {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c == f.delimiter => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
        out
    }
}

/// One parsed line: its number and fields (None = NULL). Text-format fields
/// borrow from the data unless they had escapes to undo.
type Line<'a> = (usize, Vec<Option<Cow<'a, str>>>);

/// The lines of text-format COPY data, parsed one at a time, so a large
/// load never holds more than one batch of parsed lines.
struct TextLines<'a> {
    data: &'a str,
    format: &'a Format,
    /// Byte offset of the next line.
    pos: usize,
    /// Number of the next line (1-based).
    number: usize,
}

impl<'a> TextLines<'a> {
    fn new(data: &'a str, format: &'a Format) -> Self {
        TextLines { data, format, pos: 0, number: 1 }
    }
}

impl<'a> Iterator for TextLines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        loop {
            // The data's final newline ends the last line; nothing follows it.
            if self.pos >= self.data.len() {
                return None;
            }
            let rest = &self.data[self.pos..];
            let (raw, advance) = match rest.find('\n') {
                Some(i) => (&rest[..i], i + 1),
                None => (rest, rest.len()),
            };
            self.pos += advance;
            let number = self.number;
            self.number += 1;
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            if raw == "\\." {
                self.pos = self.data.len();
                return None;
            }
            if number == 1 && self.format.header {
                continue;
            }
            let fields = split_unescaped(raw, self.format.delimiter)
                .map(|part| if part == self.format.null { None } else { Some(unescape(part)) })
                .collect();
            return Some((number, fields));
        }
    }
}

#[cfg(test)]
fn parse_text<'a>(data: &'a str, f: &'a Format) -> Result<Vec<Line<'a>>> {
    Ok(TextLines::new(data, f).collect())
}

/// Splits on the delimiter; a backslash escapes the character after it
/// (which `unescape` then decodes), so an escaped delimiter does not split.
fn split_unescaped(s: &str, delim: char) -> impl Iterator<Item = &str> {
    let mut rest = Some(s);
    std::iter::from_fn(move || {
        let s = rest?;
        let mut chars = s.char_indices();
        while let Some((i, c)) = chars.next() {
            if c == '\\' {
                chars.next();
            } else if c == delim {
                rest = Some(&s[i + c.len_utf8()..]);
                return Some(&s[..i]);
            }
        }
        rest = None;
        Some(s)
    })
}

fn unescape(s: &str) -> Cow<'_, str> {
    if !s.contains('\\') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('v') => out.push('\u{b}'),
            Some(d) if d.is_digit(8) => {
                let mut v = d.to_digit(8).unwrap();
                for _ in 0..2 {
                    match chars.peek() {
                        Some(x) if x.is_digit(8) => {
                            v = v * 8 + x.to_digit(8).unwrap();
                            chars.next();
                        }
                        _ => break,
                    }
                }
                out.push(char::from_u32(v).unwrap_or('?'));
            }
            Some(o) => out.push(o),
            None => {}
        }
    }
    Cow::Owned(out)
}

fn parse_csv(data: &str, f: &Format) -> Result<Vec<Line<'static>>> {
    let mut lines = Vec::new();
    let mut fields: Vec<Option<Cow<'static, str>>> = Vec::new();
    let mut cur = String::new();
    let mut quoted_field = false;
    let mut in_quotes = false;
    let mut line_no = 1;
    let mut start_line = 1;
    let mut chars = data.chars().peekable();
    let mut any = false;
    let finish_field = |cur: &mut String, quoted: &mut bool, fields: &mut Vec<Option<Cow<'static, str>>>| {
        let v = std::mem::take(cur);
        if !*quoted && v == f.null {
            fields.push(None);
        } else {
            fields.push(Some(Cow::Owned(v)));
        }
        *quoted = false;
    };
    while let Some(c) = chars.next() {
        any = true;
        if in_quotes {
            if c == f.escape && chars.peek() == Some(&f.quote) && f.escape != f.quote {
                cur.push(chars.next().unwrap());
            } else if c == f.quote {
                if f.escape == f.quote && chars.peek() == Some(&f.quote) {
                    cur.push(chars.next().unwrap());
                } else {
                    in_quotes = false;
                }
            } else {
                if c == '\n' {
                    line_no += 1;
                }
                cur.push(c);
            }
            continue;
        }
        if c == f.quote {
            in_quotes = true;
            quoted_field = true;
        } else if c == f.delimiter {
            finish_field(&mut cur, &mut quoted_field, &mut fields);
        } else if c == '\n' || c == '\r' {
            if c == '\r' && chars.peek() == Some(&'\n') {
                chars.next();
            }
            if fields.is_empty() && cur == "\\." && !quoted_field {
                cur.clear();
                break;
            }
            finish_field(&mut cur, &mut quoted_field, &mut fields);
            lines.push((start_line, std::mem::take(&mut fields)));
            line_no += 1;
            start_line = line_no;
            any = false;
        } else {
            cur.push(c);
        }
    }
    if in_quotes {
        return Err(SqlError::new(code::BAD_COPY_FORMAT, format!("unterminated CSV quoted field (line {start_line})")));
    }
    if any && !(fields.is_empty() && cur == "\\.") {
        finish_field(&mut cur, &mut quoted_field, &mut fields);
        lines.push((start_line, fields));
    }
    if f.header && !lines.is_empty() {
        lines.remove(0);
    }
    Ok(lines)
}

const BATCH_ROWS: usize = 50_000;

pub async fn finish(session: &mut Session, copy: CopyIn) -> Result<Output> {
    let CopyIn { def, columns, format, data, autocommit, .. } = copy;
    let (data, text) = if format.binary {
        (data, String::new())
    } else {
        let text = String::from_utf8(data)
            .map_err(|e| SqlError::new(code::INVALID_TEXT, format!("COPY data is not valid UTF-8: {e}")))?;
        (Vec::new(), text)
    };
    let binary = if format.binary { Some(crate::values::copy_binary::tuples(&data, columns.len())?) } else { None };
    let table = session.catalog().engine_table(&def)?;
    let load = Load { def: &def, table: &table, columns: &columns, started: std::time::Instant::now() };
    // Outside a transaction block, `tessera.copy_commit_rows` commits the
    // load in parts: a COPY larger than one transaction may be goes in,
    // and a failure keeps the parts committed before it.
    let every = if autocommit { session.info.settings.lock().hot().copy_commit_rows as usize } else { 0 };
    let batch_rows = if every > 0 { BATCH_ROWS.min(every) } else { BATCH_ROWS };
    let (mut done, mut uncommitted) = (0usize, 0usize);
    let mut loaded = async |session: &mut Session, n: usize| -> Result<()> {
        done += n;
        uncommitted += n;
        if every > 0 && uncommitted >= every {
            commit_part(session).await?;
            uncommitted = 0;
        }
        Ok(())
    };
    if let Some(tuples) = binary {
        for (k, chunk) in tuples.chunks(batch_rows).enumerate() {
            let first = k * batch_rows + 1;
            let n = load.binary_batch(session, chunk, first).await?;
            loaded(session, n).await?;
        }
    } else if format.csv {
        // Quoted CSV fields may span lines: parsed whole, loaded in batches.
        let lines = parse_csv(&text, &format)?;
        for chunk in lines.chunks(batch_rows) {
            let n = load.batch(session, chunk).await?;
            loaded(session, n).await?;
        }
    } else {
        let mut lines = TextLines::new(&text, &format);
        let mut chunk = Vec::with_capacity(batch_rows.min(text.len() / 8 + 1));
        loop {
            chunk.extend(lines.by_ref().take(batch_rows));
            if chunk.is_empty() {
                break;
            }
            let n = load.batch(session, &chunk).await?;
            loaded(session, n).await?;
            chunk.clear();
        }
    }
    Ok(Output::Command(format!("COPY {done}")))
}

/// Commits what a COPY (outside a transaction block) has loaded so far and
/// begins the transaction its next rows go to.
async fn commit_part(session: &mut Session) -> Result<()> {
    let txn = session.txn.lock().take();
    if let Some(txn) = txn {
        txn.commit().await?;
    }
    session.ensure_txn()?;
    let deadline = session.statement_deadline();
    if let Some(t) = session.txn.lock().as_mut() {
        t.set_wait_deadline(deadline);
    }
    Ok(())
}

/// What every batch of one COPY FROM shares.
struct Load<'a> {
    def: &'a Arc<TableDef>,
    table: &'a crate::storage::partition::StoredTable,
    /// Target columns (indexes into the table's columns).
    columns: &'a [usize],
    started: std::time::Instant,
}

impl Load<'_> {
    /// Converts, checks and inserts one batch of lines; returns how many.
    async fn batch(&self, session: &mut Session, chunk: &[Line<'_>]) -> Result<usize> {
        let def = self.def;
        for (line, fields) in chunk {
            if fields.len() != self.columns.len() {
                let what = if fields.len() > self.columns.len() {
                    "extra data after last expected column"
                } else {
                    "missing data for column"
                };
                return Err(SqlError::new(code::BAD_COPY_FORMAT, format!("{what} (COPY {}, line {line})", def.name)));
            }
        }
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(def.columns.len());
        for (ci, col) in def.columns.iter().enumerate() {
            let Some(pos) = self.columns.iter().position(|c| *c == ci) else {
                arrays.push(new_null_array(&col.ty.arrow_type(), chunk.len()));
                continue;
            };
            let values: Vec<Option<&str>> = chunk.iter().map(|(_, fs)| fs[pos].as_deref()).collect();
            arrays.push(convert(col.ty, &col.name, &values, session.text_style()).map_err(|(row, e)| {
                let (line, _) = &chunk[row];
                let v = values[row].unwrap_or("");
                SqlError::new(
                    e.code,
                    format!("{} (COPY {}, line {line}, column {}: \"{v}\")", e.message, def.name, col.name),
                )
            })?);
        }
        let lines: Vec<usize> = chunk.iter().map(|(n, _)| *n).collect();
        self.write(session, arrays, &lines).await
    }

    /// Converts, checks and inserts one batch of binary tuples (the first
    /// is row `first` of the data); returns how many.
    async fn binary_batch(
        &self,
        session: &mut Session,
        chunk: &[crate::values::copy_binary::Tuple<'_>],
        first: usize,
    ) -> Result<usize> {
        let def = self.def;
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(def.columns.len());
        for (ci, col) in def.columns.iter().enumerate() {
            let Some(pos) = self.columns.iter().position(|c| *c == ci) else {
                arrays.push(new_null_array(&col.ty.arrow_type(), chunk.len()));
                continue;
            };
            let values = chunk.iter().map(|t| t[pos]);
            arrays.push(crate::values::copy_binary::column(col.ty, &col.name, values, session.zone()).map_err(
                |(row, e)| {
                    SqlError::new(
                        e.code,
                        format!("{} (COPY {}, row {}, column {})", e.message, def.name, first + row, col.name),
                    )
                },
            )?);
        }
        let lines: Vec<usize> = (first..first + chunk.len()).collect();
        self.write(session, arrays, &lines).await
    }

    /// Fills defaults, checks and inserts converted rows (`lines`: each
    /// row's line or row number, for errors); returns how many.
    async fn write(&self, session: &mut Session, mut arrays: Vec<ArrayRef>, lines: &[usize]) -> Result<usize> {
        let def = self.def;
        let n = lines.len();
        // Columns left out of the list take their defaults.
        let missing: Vec<usize> = (0..def.columns.len()).filter(|c| !self.columns.contains(c)).collect();
        for ci in missing {
            if def.columns[ci].default.is_some() {
                let needed = vec![true; n];
                arrays[ci] = crate::exec::dml::default_values_pub(session, def, ci, n, &needed).await?;
            }
        }
        let batch = RecordBatch::try_new(def.arrow_schema(), arrays)?;
        let batch = check_rows(session, def, batch).await?;
        let rowids = allocate_rowids(session, def, n)?;
        let rows = encode_rows(def, &batch, rowids.as_deref())?;
        // Progress survives the waits for rows' holders: the row at `next`
        // is inserted again after a wait (a wait changed nothing).
        let mut next = 0;
        crate::storage::row_waits::write_waiting(&session.txn, |txn| {
            // A bulk load may span partitions (committed one by one).
            txn.allow_multi_partition_writes();
            while let Some(row) = rows.get(next) {
                txn.insert(self.table, row.clone()).map_err(|e| {
                    Interrupted::from(e).map_failed(|mut err| {
                        err.message = format!("{} (COPY {}, line {})", err.message, def.name, lines[next]);
                        err
                    })
                })?;
                next += 1;
            }
            Ok(())
        })
        .await?;
        let last_line = lines.last().copied().unwrap_or(0);
        if last_line > BATCH_ROWS || n == BATCH_ROWS {
            tracing::info!(table = %def.name, through_line = last_line, elapsed_ms = self.started.elapsed().as_millis() as u64, "COPY progress");
        }
        Ok(n)
    }
}

/// Converts text fields to a column; on failure returns the failing row.
fn convert(
    ty: SqlType,
    column: &str,
    values: &[Option<&str>],
    style: crate::values::text::TextStyle,
) -> std::result::Result<ArrayRef, (usize, SqlError)> {
    match ty {
        SqlType::Bool => {
            let mut out = Vec::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                out.push(match v {
                    None => None,
                    Some(s) => Some(parse_bool(s).ok_or_else(|| {
                        (
                            i,
                            SqlError::new(
                                code::INVALID_TEXT,
                                format!("invalid input syntax for type boolean: \"{s}\""),
                            ),
                        )
                    })?),
                });
            }
            Ok(std::sync::Arc::new(BooleanArray::from(out)))
        }
        SqlType::Bytea => {
            let mut out = Vec::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                out.push(match v {
                    None => None,
                    Some(s) => Some(crate::values::text::parse_bytea(s).map_err(|e| (i, e))?),
                });
            }
            Ok(std::sync::Arc::new(BinaryArray::from_iter(out)))
        }
        _ => {
            let strings: ArrayRef = std::sync::Arc::new(StringArray::from(values.to_vec()));
            match crate::values::assign::cast_to_styled(&strings, ty, column, style) {
                Ok(a) => Ok(a),
                Err(_) => {
                    // Find the offending value to name its line.
                    for (i, v) in values.iter().enumerate() {
                        let one: ArrayRef = std::sync::Arc::new(StringArray::from(vec![*v]));
                        if crate::values::assign::cast_to_styled(&one, ty, column, style).is_err() {
                            let s = v.unwrap_or("");
                            return Err((
                                i,
                                SqlError::new(
                                    code::INVALID_TEXT,
                                    format!("invalid input syntax for type {}: \"{s}\"", ty.name()),
                                ),
                            ));
                        }
                    }
                    Err((0, SqlError::new(code::INVALID_TEXT, format!("invalid input for type {}", ty.name()))))
                }
            }
        }
    }
}

pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_lowercase().as_str() {
        "t" | "true" | "y" | "yes" | "on" | "1" => Some(true),
        "f" | "false" | "n" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_and_csv() {
        let f = Format::text();
        let lines = parse_text("1\ta\\tb\n2\t\\N\n\\.\n", &f).unwrap();
        assert_eq!(lines, vec![(1, vec![Some("1".into()), Some("a\tb".into())]), (2, vec![Some("2".into()), None])]);
        let owned = |fields: &[Option<&str>]| fields.iter().map(|f| f.map(|s| Cow::Owned(s.to_string()))).collect();
        // An escaped delimiter does not split; CRLF, an empty line in the
        // middle, a header, no final newline; "\." ends the data.
        let h = Format { header: true, ..f.clone() };
        let lines = parse_text("a\tb\r\nx\\\ty\t1\n\nlast\t\\N", &h).unwrap();
        assert_eq!(
            lines,
            vec![(2, owned(&[Some("x\ty"), Some("1")])), (3, owned(&[Some("")])), (4, owned(&[Some("last"), None]))]
        );
        assert!(matches!(&lines[2].1[0], Some(Cow::Borrowed(_))), "plain fields borrow from the data");
        let lines = parse_text("1\n\\.\n2\n", &f).unwrap();
        assert_eq!(lines, vec![(1, owned(&[Some("1")]))]);
        assert_eq!(parse_text("", &f).unwrap(), vec![]);
        let f = Format { csv: true, delimiter: ',', null: "".into(), header: true, ..f };
        let lines = parse_csv("id,name\n1,\"x, \"\"y\"\"\"\n2,\n", &f).unwrap();
        assert_eq!(
            lines,
            vec![(2, vec![Some("1".into()), Some("x, \"y\"".into())]), (3, vec![Some("2".into()), None])]
        );
    }
}
