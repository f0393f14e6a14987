//! Values stored into a column: cast to its type as PostgreSQL's
//! assignment casts them (INSERT, UPDATE, COPY, ALTER TABLE … ADD COLUMN).
//!
//! Text of timestamptz and interval values is read as PostgreSQL reads it
//! (`tz`, `intervals`), numbers become integers by rounding (`int_casts`),
//! floats become numerics through their significant digits
//! (`float_arith`), and a numeric wider than Decimal128 (unconstrained, or
//! more than 38 digits) goes through `numeric_ops`: exact, or refused.

use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::FormatOptions;

use crate::error::{Result, SqlError, code};
use crate::values::types::SqlType;

/// Casts a source column to the column's type, failing (not nulling) on
/// values that do not convert (interval text read in IntervalStyle
/// `postgres`; see [`cast_to_styled`]).
pub(crate) fn cast_to(array: &ArrayRef, ty: SqlType, column: &str, zone: crate::values::tz::Zone) -> Result<ArrayRef> {
    cast_to_styled(array, ty, column, zone.into())
}

/// [`cast_to`] in a session's settings: its time zone, and its
/// IntervalStyle, which decides how `-1 2:03:04` reads (`sql_standard`
/// applies the leading minus to every field).
pub(crate) fn cast_to_styled(
    array: &ArrayRef,
    ty: SqlType,
    column: &str,
    style: crate::values::text::TextStyle,
) -> Result<ArrayRef> {
    let zone = style.zone;
    let target = ty.arrow_type();
    if array.data_type() == &target {
        return Ok(array.clone());
    }
    if matches!(ty, SqlType::Array { .. }) {
        return crate::values::array_types::to_array_type(array, ty, column, zone);
    }
    // NaN and infinities in text: numeric(p, s) holds NaN, not infinities.
    if let (DataType::Decimal128(p, s), DataType::Utf8) = (&target, array.data_type()) {
        let texts = array.as_any().downcast_ref::<datafusion::arrow::array::StringArray>().expect("text");
        if texts.iter().flatten().any(|t| crate::values::numeric_special::Special::parse(t).is_some()) {
            let mut cells = Vec::with_capacity(array.len());
            for (i, t) in texts.iter().enumerate() {
                cells.push(match t.and_then(crate::values::numeric_special::Special::parse) {
                    Some(crate::values::numeric_special::Special::NaN) => datafusion::common::ScalarValue::Decimal128(
                        Some(crate::values::numeric_special::Special::NaN.i128()),
                        *p,
                        *s,
                    ),
                    Some(_) => return Err(crate::values::numeric_special::infinite_overflow(*p, *s)),
                    None => {
                        let one = cast_to(&array.slice(i, 1), ty, column, zone)?;
                        datafusion::common::ScalarValue::try_from_array(&one, 0)?
                    }
                });
            }
            return Ok(datafusion::common::ScalarValue::iter_to_array(cells)?);
        }
    }
    if let DataType::Decimal256(p, s) = target {
        let declared_beyond = matches!(ty, SqlType::Numeric { precision, .. } if precision > u16::from(p));
        return crate::values::numeric_ops::to_decimal256(array, p, s, ty == SqlType::NUMERIC_DEFAULT).map_err(|e| {
            if e.code == code::OUT_OF_RANGE && declared_beyond {
                // PostgreSQL would take it: refused, not said to overflow.
                SqlError::unsupported(format!(
                    "a value of more than {p} digits for column \"{column}\" of type {ty} (Tessera's numeric holds 76)"
                ))
            } else if e.code == code::OUT_OF_RANGE {
                SqlError::new(
                    code::OUT_OF_RANGE,
                    format!("numeric field overflow for column \"{column}\" of type {ty}"),
                )
            } else {
                e
            }
        });
    }
    // Timestamps' text in every form PostgreSQL reads, over its whole
    // range; for a timestamptz without an offset, the session zone's wall
    // time.
    if matches!(ty, SqlType::Timestamp | SqlType::TimestampTz)
        && matches!(array.data_type(), DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
    {
        let zoned = ty == SqlType::TimestampTz;
        return crate::values::timestamp_units::read_texts(array, zoned, zone)
            .map(|a| Arc::new(a) as ArrayRef)
            .map_err(SqlError::from);
    }
    // Dates in PostgreSQL's other forms (`1/8/1999`, `January 8, 1999`, `… BC`).
    if ty == SqlType::Date && array.data_type() == &DataType::Utf8 {
        let texts = array.as_any().downcast_ref::<datafusion::arrow::array::StringArray>().expect("text");
        if let Some(bad) = texts.iter().flatten().find(|t| crate::values::dates::out_of_range(t)) {
            return Err(SqlError::new(
                code::DATETIME_OVERFLOW,
                format!("date/time field value out of range: \"{bad}\""),
            ));
        }
        if texts.iter().flatten().any(|t| crate::values::dates::canonical_date(t).is_some()) {
            let read: datafusion::arrow::array::StringArray = texts
                .iter()
                .map(|t| t.map(|t| crate::values::dates::canonical_date(t).unwrap_or_else(|| t.to_string())))
                .collect();
            return cast_to(&(Arc::new(read) as ArrayRef), ty, column, zone);
        }
    }
    // Interval text read as PostgreSQL reads it, then handed to Arrow in
    // units it reads exactly.
    if matches!(target, DataType::Interval(_)) && array.data_type() == &DataType::Utf8 {
        use crate::values::interval_in::{Restriction, parse, to_arrow_text};
        let texts = array.as_any().downcast_ref::<datafusion::arrow::array::StringArray>().expect("text");
        let sql_standard = style.interval == crate::values::interval_out::IntervalStyle::SqlStandard;
        let read = texts
            .iter()
            .map(|t| t.map(|t| parse(t, Restriction::default(), sql_standard).and_then(to_arrow_text)).transpose())
            .collect::<Result<datafusion::arrow::array::StringArray>>()?;
        return datafusion::arrow::compute::cast(&read, &target).map_err(|e| SqlError::internal(e.to_string()));
    }
    let float = matches!(array.data_type(), DataType::Float32 | DataType::Float64);
    if float && matches!(target, DataType::Decimal128(..) | DataType::Float32) {
        let stored = crate::values::float_arith::float_to(array, &target).map_err(|e| {
            if e.code == code::OUT_OF_RANGE {
                SqlError::new(code::OUT_OF_RANGE, format!("value out of range for column \"{column}\" of type {ty}"))
            } else {
                e
            }
        })?;
        return Ok(stored);
    }
    if crate::values::int_casts::rounds(array.data_type(), &target) {
        return crate::values::int_casts::round_to_integer(array, &target).map_err(|_| {
            SqlError::new(code::OUT_OF_RANGE, format!("value out of range for column \"{column}\" of type {ty}"))
        });
    }
    let opts = CastOptions { safe: false, format_options: FormatOptions::default() };
    let cast = cast_with_options(array, &target, &opts).map_err(|e| {
        let msg = e.to_string();
        if msg.contains("verflow") || msg.contains("out of range") || msg.contains("too large") {
            SqlError::new(code::OUT_OF_RANGE, format!("value out of range for column \"{column}\" of type {ty}"))
        } else {
            SqlError::new(
                code::DATATYPE_MISMATCH,
                format!("column \"{column}\" is of type {ty} but expression is of type {}", array.data_type()),
            )
            .with_hint("You will need to rewrite or cast the expression.")
        }
    })?;
    Ok(cast)
}
