//! Values on the wire: result rows in text or binary format, and parameter
//! values from Bind messages.

use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::ScalarValue;
use pgwire::api::Type;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::messages::data::DataRow;
use tessera_sql::SqlType;
use tessera_sql::error::{SqlError, code};
use tessera_sql::values::text::{TextStyle, write_cell_in};
use tessera_sql::values::tz::Zone;

pub fn pg_type(ty: SqlType) -> Type {
    if let SqlType::Enum(oid) = ty {
        let labels = tessera_sql::values::user_types::enum_type(oid).map(|t| t.labels.clone()).unwrap_or_default();
        return Type::new(ty.name(), oid, postgres_types::Kind::Enum(labels), "public".into());
    }
    Type::from_oid(ty.oid()).unwrap_or(Type::TEXT)
}

/// Row description for a result schema.
pub fn fields(schema: &datafusion::arrow::datatypes::Schema, formats: &dyn Fn(usize) -> FieldFormat) -> Vec<FieldInfo> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let ty = SqlType::of_field(f);
            FieldInfo::new(f.name().clone(), None, None, pg_type(ty), formats(i)).with_type_modifier(ty.typmod())
        })
        .collect()
}

/// Encodes the rows of a batch.
pub fn encode_batch(
    batch: &RecordBatch,
    binary: &[bool],
    types: &[SqlType],
    style: TextStyle,
    out: &mut Vec<DataRow>,
) -> Result<(), SqlError> {
    let mut text = String::new();
    for r in 0..batch.num_rows() {
        let mut buf = BytesMut::with_capacity(64);
        write_cells(batch, r, binary, types, style, &mut text, &mut buf)?;
        out.push(DataRow::new(buf, batch.num_columns() as i16));
    }
    Ok(())
}

/// Writes the rows of a batch as complete DataRow messages (type byte,
/// length, column count, cells): what pgwire's `DataRow` encodes to, without
/// a message object per row.
pub fn write_data_rows(
    batch: &RecordBatch,
    binary: &[bool],
    types: &[SqlType],
    style: TextStyle,
    out: &mut BytesMut,
) -> Result<(), SqlError> {
    let mut text = String::new();
    for r in 0..batch.num_rows() {
        out.put_u8(b'D');
        let start = out.len();
        out.put_i32(0);
        out.put_i16(batch.num_columns() as i16);
        write_cells(batch, r, binary, types, style, &mut text, out)?;
        let len = (out.len() - start) as i32;
        out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

/// The cells of row `r`, each as its length (-1 for NULL) and its bytes.
fn write_cells(
    batch: &RecordBatch,
    r: usize,
    binary: &[bool],
    types: &[SqlType],
    style: TextStyle,
    text: &mut String,
    buf: &mut BytesMut,
) -> Result<(), SqlError> {
    for (ci, col) in batch.columns().iter().enumerate() {
        if col.is_null(r) || col.data_type() == &DataType::Null {
            buf.put_i32(-1);
            continue;
        }
        let start = buf.len();
        buf.put_i32(0);
        if binary.get(ci).copied().unwrap_or(false) {
            tessera_sql::values::pg_binary::write_value(buf, col, r, types.get(ci).copied())?;
        } else {
            text.clear();
            write_cell_in(text, col, r, style);
            match types.get(ci) {
                Some(ty @ SqlType::Char(_)) => buf.put_slice(tessera_sql::values::text::pad_char(text, *ty).as_bytes()),
                _ => buf.put_slice(text.as_bytes()),
            }
        }
        let len = (buf.len() - start - 4) as i32;
        buf[start..start + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

fn bad_param(i: usize, ty: &Type) -> SqlError {
    SqlError::new(
        code::INVALID_PARAMETER_VALUE,
        format!("invalid binary value for parameter ${} of type {}", i + 1, ty.name()),
    )
}

/// Decodes a Bind parameter sent as `ty` (the client's declared type, or the
/// one Tessera inferred) into a value of the Arrow type the plan expects.
pub fn decode_param(
    i: usize,
    raw: Option<&[u8]>,
    binary: bool,
    ty: &Type,
    want: Option<&DataType>,
    zone: Zone,
) -> Result<ScalarValue, SqlError> {
    let Some(raw) = raw else {
        return Ok(match want {
            Some(dt) => ScalarValue::try_from(dt).unwrap_or(ScalarValue::Null),
            None => ScalarValue::Utf8(None),
        });
    };
    let value = if binary {
        tessera_sql::values::pg_binary::read_value(ty.oid(), raw).map_err(|e| match e {
            tessera_sql::values::pg_binary::ReadError::Malformed => bad_param(i, ty),
            tessera_sql::values::pg_binary::ReadError::UnknownType => {
                SqlError::unsupported(format!("binary parameters of type {}", ty.name()))
            }
        })?
    } else {
        let s = std::str::from_utf8(raw)
            .map_err(|_| SqlError::new(code::INVALID_TEXT, format!("parameter ${} is not valid UTF-8", i + 1)))?;
        match want {
            Some(DataType::Boolean) => match tessera_sql::exec::copy::parse_bool(s) {
                Some(b) => ScalarValue::Boolean(Some(b)),
                None => {
                    return Err(SqlError::new(
                        code::INVALID_TEXT,
                        format!("invalid input syntax for type boolean: \"{s}\""),
                    ));
                }
            },
            // Integers, the most common parameters, parse directly (the cast
            // below goes through Arrow arrays); anything unusual still takes
            // the cast, which reports PostgreSQL's error.
            Some(DataType::Int64) if let Ok(v) = s.trim().parse::<i64>() => return Ok(ScalarValue::Int64(Some(v))),
            Some(DataType::Int32) if let Ok(v) = s.trim().parse::<i32>() => return Ok(ScalarValue::Int32(Some(v))),
            Some(DataType::Int16) if let Ok(v) = s.trim().parse::<i16>() => return Ok(ScalarValue::Int16(Some(v))),
            Some(DataType::Binary) => ScalarValue::Binary(Some(tessera_sql::values::text::parse_bytea(s)?)),
            // An array's text form: '{1,2,NULL}'.
            Some(want @ DataType::List(_)) => return tessera_sql::values::array_types::scalar_from_text(s, want, zone),
            // pgjdbc sends dates as "2024-02-29 +00"; PostgreSQL ignores the zone.
            Some(DataType::Date32) => ScalarValue::Utf8(Some(
                tessera_sql::values::dates::canonical_date(s)
                    .unwrap_or_else(|| s.split_whitespace().next().unwrap_or(s).to_string()),
            )),
            // Every form PostgreSQL reads (BC years, ±infinity); for a
            // timestamptz without an offset, a wall time of the session's zone.
            Some(DataType::Timestamp(TimeUnit::Microsecond, tz)) => {
                let micros = tessera_sql::values::timestamp_in::read(s, tz.is_some(), zone)?;
                return Ok(ScalarValue::TimestampMicrosecond(Some(micros), tz.clone()));
            }
            _ => ScalarValue::Utf8(Some(s.to_string())),
        }
    };
    match want {
        Some(dt) if &value.data_type() != dt => value.cast_to(dt).map_err(|_| {
            SqlError::new(code::INVALID_TEXT, format!("invalid input syntax for parameter ${}: \"{value}\"", i + 1))
        }),
        _ => Ok(value),
    }
}
