//! SQL types: what a column is declared as, how it maps onto Arrow for
//! DataFusion, and which PostgreSQL type (OID) the wire reports.
//!
//! Arrow has no uuid, json or fixed-length char, so those travel as Utf8 with
//! the SQL type recorded in the field's metadata under [`PG_TYPE_KEY`]; the
//! wire layer reads it back to report the right OID.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, IntervalUnit, TimeUnit};
use serde::{Deserialize, Serialize};

use crate::error::{Result, SqlError, code};

/// Field metadata key carrying the SQL type name.
pub const PG_TYPE_KEY: &str = "tessera.pg_type";

/// How an enum type is named in field metadata: by OID, since two
/// databases may each have a type of the same name.
const ENUM_META_PREFIX: &str = "enum:";

/// The time zone timestamptz values carry inside DataFusion.
pub const UTC: &str = "+00:00";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SqlType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    /// numeric(precision, scale); unconstrained numeric is
    /// [`SqlType::NUMERIC_DEFAULT`] (see `numeric.rs`).
    /// numeric(p, s) beyond 76 digits keeps its declared precision (for
    /// the catalog) and holds values of up to 76 digits (see `numeric.rs`).
    Numeric {
        precision: u16,
        scale: i8,
    },
    Text,
    Varchar(Option<u32>),
    Char(u32),
    Bytea,
    Date,
    Time,
    Timestamp,
    TimestampTz,
    Interval,
    Uuid,
    Json,
    Jsonb,
    /// `elem[]`: an array of the type with OID `elem` and type modifier
    /// `typmod` (`SqlType::element`); one dimension (`array_types.rs`).
    Array {
        elem: u32,
        typmod: i32,
    },
    /// A user's enum type (`CREATE TYPE … AS ENUM`), by OID: its values
    /// travel as their labels (Utf8), ordered by the type's label order
    /// (`user_types.rs`).
    Enum(u32),
}

/// PostgreSQL's array type OIDs by element OID.
const ARRAY_OIDS: [(u32, u32); 19] = [
    (16, 1000),
    (17, 1001),
    (21, 1005),
    (23, 1007),
    (25, 1009),
    (1042, 1014),
    (1043, 1015),
    (20, 1016),
    (700, 1021),
    (701, 1022),
    (1114, 1115),
    (1082, 1182),
    (1083, 1183),
    (1184, 1185),
    (1186, 1187),
    (1700, 1231),
    (2950, 2951),
    (114, 199),
    (3802, 3807),
];

impl SqlType {
    /// Unconstrained `numeric`: Arrow decimals need a fixed scale, so 38
    /// digits before the point and 38 after (`numeric.rs`).
    pub const NUMERIC_DEFAULT: SqlType = SqlType::Numeric {
        precision: crate::values::numeric::MAX_DIGITS as u16,
        scale: crate::values::numeric::UNCONSTRAINED_SCALE,
    };

    /// Parses a type name as written in DDL or a cast (`integer`,
    /// `varchar(10)`, `timestamp with time zone`, `numeric(10,2)`).
    pub fn parse(name: &str) -> Result<SqlType> {
        let lower = name.trim().to_lowercase();
        let (base, args) = match lower.find('(') {
            Some(i) => {
                let close = lower.rfind(')').unwrap_or(lower.len());
                let args: Vec<String> = lower[i + 1..close].split(',').map(|a| a.trim().to_string()).collect();
                let rest = lower[close.min(lower.len())..].trim_start_matches(')').trim().to_string();
                let base = format!("{} {}", lower[..i].trim(), rest).trim().to_string();
                (base, args)
            }
            None => (lower.clone(), vec![]),
        };
        let base = base.trim_start_matches("pg_catalog.").to_string();
        if let Some(oid) = base.strip_prefix(ENUM_META_PREFIX).and_then(|o| o.parse().ok()) {
            return Ok(SqlType::Enum(oid));
        }
        let arg = |i: usize| -> Result<Option<u32>> {
            match args.get(i) {
                None => Ok(None),
                Some(a) => a
                    .parse::<u32>()
                    .map(Some)
                    .map_err(|_| SqlError::new(code::SYNTAX, format!("invalid type modifier \"{a}\" in type {name}"))),
            }
        };
        Ok(match base.as_str() {
            "bool" | "boolean" => SqlType::Bool,
            "smallint" | "int2" | "smallserial" | "serial2" => SqlType::Int2,
            "int" | "integer" | "int4" | "serial" | "serial4" => SqlType::Int4,
            "bigint" | "int8" | "bigserial" | "serial8" => SqlType::Int8,
            "real" | "float4" => SqlType::Float4,
            "double precision" | "float8" | "double" => SqlType::Float8,
            "float" => match arg(0)? {
                Some(p) if p <= 24 => SqlType::Float4,
                _ => SqlType::Float8,
            },
            "numeric" | "decimal" | "dec" => match (arg(0)?, arg(1)?) {
                (None, _) => SqlType::NUMERIC_DEFAULT,
                (Some(p), s) => {
                    let s = s.unwrap_or(0);
                    if !(1..=1000).contains(&p) {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER,
                            format!("NUMERIC precision {p} must be between 1 and 1000"),
                        ));
                    }
                    if s > p {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER,
                            format!("NUMERIC scale {s} must be between 0 and precision {p}"),
                        ));
                    }
                    if s > u32::from(crate::values::numeric::MAX_DIGITS) {
                        return Err(SqlError::new(
                            code::FEATURE_NOT_SUPPORTED,
                            format!(
                                "numeric({p}, {s}): Tessera's numeric holds at most 76 digits, so at most 76 places"
                            ),
                        ));
                    }
                    SqlType::Numeric { precision: p as u16, scale: s as i8 }
                }
            },
            "text" | "string" | "name" | "citext" => SqlType::Text,
            "varchar" | "character varying" | "char varying" => SqlType::Varchar(arg(0)?),
            "char" | "character" | "bpchar" => SqlType::Char(arg(0)?.unwrap_or(1)),
            "bytea" | "blob" => SqlType::Bytea,
            "date" => SqlType::Date,
            "time" | "time without time zone" => SqlType::Time,
            "timestamp" | "timestamp without time zone" | "datetime" => SqlType::Timestamp,
            "timestamptz" | "timestamp with time zone" => SqlType::TimestampTz,
            "interval" => SqlType::Interval,
            "uuid" => SqlType::Uuid,
            "json" => SqlType::Json,
            "jsonb" => SqlType::Jsonb,
            _ if base.ends_with("[]") || base.ends_with(" array") => {
                let elem = name.trim();
                let elem = elem.strip_suffix("[]").or_else(|| elem.get(..elem.len() - 6)).unwrap_or(elem);
                let elem = SqlType::parse(elem)?;
                if matches!(elem, SqlType::Array { .. }) {
                    return Err(SqlError::unsupported(format!(
                        "the type {}: arrays have one dimension in Tessera (declare {elem})",
                        name.trim()
                    )));
                }
                SqlType::array_of(elem)
            }
            _ => {
                return Err(SqlError::new(code::UNDEFINED_OBJECT, format!("type \"{}\" does not exist", name.trim())));
            }
        })
    }

    /// `serial`-style names that imply a sequence default.
    pub fn is_serial_name(name: &str) -> bool {
        matches!(
            name.trim().to_lowercase().as_str(),
            "serial" | "serial4" | "bigserial" | "serial8" | "smallserial" | "serial2"
        )
    }

    pub fn arrow_type(self) -> DataType {
        match self {
            SqlType::Bool => DataType::Boolean,
            SqlType::Int2 => DataType::Int16,
            SqlType::Int4 => DataType::Int32,
            SqlType::Int8 => DataType::Int64,
            SqlType::Float4 => DataType::Float32,
            SqlType::Float8 => DataType::Float64,
            SqlType::Numeric { precision, scale } if precision <= 38 => DataType::Decimal128(precision as u8, scale),
            SqlType::Numeric { scale, .. } => DataType::Decimal256(self.stored_precision(), scale),
            SqlType::Text
            | SqlType::Varchar(_)
            | SqlType::Char(_)
            | SqlType::Uuid
            | SqlType::Json
            | SqlType::Jsonb
            | SqlType::Enum(_) => DataType::Utf8,
            SqlType::Bytea => DataType::Binary,
            SqlType::Date => DataType::Date32,
            SqlType::Time => DataType::Time64(TimeUnit::Microsecond),
            SqlType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            SqlType::TimestampTz => DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from(UTC))),
            SqlType::Interval => DataType::Interval(IntervalUnit::MonthDayNano),
            SqlType::Array { .. } => {
                let elem = self.element().unwrap_or(SqlType::Text);
                DataType::List(Arc::new(Field::new("item", elem.arrow_type(), true)))
            }
        }
    }

    /// The digits a numeric column's values may have: its precision, but
    /// at most the 76 of Decimal256 (0 for other types).
    pub fn stored_precision(self) -> u8 {
        match self {
            SqlType::Numeric { precision, .. } => precision.min(u16::from(crate::values::numeric::MAX_DIGITS)) as u8,
            _ => 0,
        }
    }

    /// The type as a CAST names it to DataFusion (its own spelling;
    /// uuid, json, char(n) and enums travel as text).
    pub fn cast_name(self) -> String {
        match self {
            SqlType::Numeric { precision, scale } => format!("DECIMAL({precision},{scale})"),
            SqlType::Text
            | SqlType::Varchar(_)
            | SqlType::Char(_)
            | SqlType::Uuid
            | SqlType::Json
            | SqlType::Jsonb
            | SqlType::Enum(_) => "TEXT".into(),
            SqlType::TimestampTz => "TIMESTAMPTZ".into(),
            other => other.name().to_uppercase(),
        }
    }

    /// The array type of elements of `elem`.
    pub fn array_of(elem: SqlType) -> SqlType {
        SqlType::Array { elem: elem.oid(), typmod: elem.typmod() }
    }

    /// An array type's element type.
    pub fn element(self) -> Option<SqlType> {
        let SqlType::Array { elem, typmod } = self else { return None };
        let base = SqlType::from_oid(elem)?;
        let modifier = (typmod >= 4).then(|| (typmod - 4) as u32);
        Some(match (base, modifier) {
            (SqlType::Varchar(_), Some(n)) => SqlType::Varchar(Some(n)),
            (SqlType::Char(_), Some(n)) => SqlType::Char(n),
            (SqlType::Numeric { .. }, Some(m)) => {
                SqlType::Numeric { precision: (m >> 16) as u16, scale: (m & 0xffff) as i8 }
            }
            (base, _) => base,
        })
    }

    /// The SQL type DataFusion's result type most likely came from.
    pub fn from_arrow(dt: &DataType) -> Option<SqlType> {
        Some(match dt {
            DataType::Boolean => SqlType::Bool,
            DataType::Int8 | DataType::Int16 | DataType::UInt8 => SqlType::Int2,
            DataType::Int32 | DataType::UInt16 => SqlType::Int4,
            DataType::Int64 | DataType::UInt32 | DataType::UInt64 => SqlType::Int8,
            DataType::Float16 | DataType::Float32 => SqlType::Float4,
            DataType::Float64 => SqlType::Float8,
            DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => {
                SqlType::Numeric { precision: u16::from(*p), scale: *s }
            }
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => SqlType::Text,
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => {
                SqlType::Bytea
            }
            DataType::Date32 | DataType::Date64 => SqlType::Date,
            DataType::Time32(_) | DataType::Time64(_) => SqlType::Time,
            DataType::Timestamp(_, None) => SqlType::Timestamp,
            DataType::Timestamp(_, Some(_)) => SqlType::TimestampTz,
            DataType::Interval(_) | DataType::Duration(_) => SqlType::Interval,
            DataType::Null => SqlType::Text,
            DataType::List(f) | DataType::LargeList(f) => match SqlType::from_arrow(f.data_type())? {
                SqlType::Array { .. } => return None,
                elem => SqlType::array_of(elem),
            },
            _ => return None,
        })
    }

    /// The SQL type of a result field: its metadata if it carries one,
    /// otherwise what its Arrow type suggests.
    pub fn of_field(field: &Field) -> SqlType {
        // DataFusion keeps a column's metadata through casts: trust it only
        // while the Arrow type still matches (`n::text` is text, not numeric).
        if let Some(name) = field.metadata().get(PG_TYPE_KEY)
            && let Ok(t) = SqlType::parse(name)
            && &t.arrow_type() == field.data_type()
        {
            return t;
        }
        SqlType::from_arrow(field.data_type()).unwrap_or(SqlType::Text)
    }

    /// An Arrow field for a column of this type.
    pub fn field(self, name: &str, nullable: bool) -> Field {
        let mut meta = HashMap::new();
        meta.insert(PG_TYPE_KEY.to_string(), self.meta_name());
        Field::new(name, self.arrow_type(), nullable).with_metadata(meta)
    }

    /// The name field metadata carries (`PG_TYPE_KEY`): [`SqlType::name`],
    /// or an enum's OID.
    pub fn meta_name(self) -> String {
        match self {
            SqlType::Enum(oid) => format!("{ENUM_META_PREFIX}{oid}"),
            other => other.name(),
        }
    }

    /// PostgreSQL's name for the type, as `format_type` prints it.
    pub fn name(self) -> String {
        match self {
            SqlType::Bool => "boolean".into(),
            SqlType::Int2 => "smallint".into(),
            SqlType::Int4 => "integer".into(),
            SqlType::Int8 => "bigint".into(),
            SqlType::Float4 => "real".into(),
            SqlType::Float8 => "double precision".into(),
            SqlType::Numeric { precision, scale } => {
                if self == SqlType::NUMERIC_DEFAULT {
                    "numeric".into()
                } else {
                    format!("numeric({precision},{scale})")
                }
            }
            SqlType::Text => "text".into(),
            SqlType::Varchar(None) => "character varying".into(),
            SqlType::Varchar(Some(n)) => format!("character varying({n})"),
            SqlType::Char(n) => format!("character({n})"),
            SqlType::Bytea => "bytea".into(),
            SqlType::Date => "date".into(),
            SqlType::Time => "time without time zone".into(),
            SqlType::Timestamp => "timestamp without time zone".into(),
            SqlType::TimestampTz => "timestamp with time zone".into(),
            SqlType::Interval => "interval".into(),
            SqlType::Uuid => "uuid".into(),
            SqlType::Json => "json".into(),
            SqlType::Jsonb => "jsonb".into(),
            SqlType::Array { .. } => format!("{}[]", self.element().map_or("text".into(), |e| e.name())),
            SqlType::Enum(oid) => {
                crate::values::enum_registry::enum_type(oid).map_or_else(|| format!("enum {oid}"), |t| t.name.clone())
            }
        }
    }

    /// PostgreSQL's type OID.
    pub fn oid(self) -> u32 {
        match self {
            SqlType::Bool => 16,
            SqlType::Bytea => 17,
            SqlType::Int8 => 20,
            SqlType::Int2 => 21,
            SqlType::Int4 => 23,
            SqlType::Text => 25,
            SqlType::Json => 114,
            SqlType::Float4 => 700,
            SqlType::Float8 => 701,
            SqlType::Char(_) => 1042,
            SqlType::Varchar(_) => 1043,
            SqlType::Date => 1082,
            SqlType::Time => 1083,
            SqlType::Timestamp => 1114,
            SqlType::TimestampTz => 1184,
            SqlType::Interval => 1186,
            SqlType::Numeric { .. } => 1700,
            SqlType::Uuid => 2950,
            SqlType::Jsonb => 3802,
            SqlType::Array { elem, .. } => ARRAY_OIDS.iter().find(|(e, _)| *e == elem).map_or(1009, |(_, a)| *a),
            SqlType::Enum(oid) => oid,
        }
    }

    pub fn from_oid(oid: u32) -> Option<SqlType> {
        Some(match oid {
            16 => SqlType::Bool,
            17 => SqlType::Bytea,
            20 => SqlType::Int8,
            21 => SqlType::Int2,
            23 => SqlType::Int4,
            25 | 19 => SqlType::Text,
            114 => SqlType::Json,
            700 => SqlType::Float4,
            701 => SqlType::Float8,
            1042 => SqlType::Char(1),
            1043 => SqlType::Varchar(None),
            1082 => SqlType::Date,
            1083 => SqlType::Time,
            1114 => SqlType::Timestamp,
            1184 => SqlType::TimestampTz,
            1186 => SqlType::Interval,
            1700 => SqlType::NUMERIC_DEFAULT,
            2950 => SqlType::Uuid,
            3802 => SqlType::Jsonb,
            _ if crate::values::enum_registry::enum_type(oid).is_some() => SqlType::Enum(oid),
            _ => {
                let (elem, _) = ARRAY_OIDS.iter().find(|(_, a)| *a == oid)?;
                SqlType::array_of(SqlType::from_oid(*elem)?)
            }
        })
    }

    /// The type modifier PostgreSQL reports (atttypmod), -1 when none.
    pub fn typmod(self) -> i32 {
        match self {
            SqlType::Varchar(Some(n)) | SqlType::Char(n) => n as i32 + 4,
            SqlType::Array { typmod, .. } => typmod,
            SqlType::Numeric { precision, scale } if self != SqlType::NUMERIC_DEFAULT => {
                ((precision as i32) << 16 | (scale as i32 & 0xffff)) + 4
            }
            _ => -1,
        }
    }

    /// Fixed storage size as pg_type.typlen reports it (-1 = variable).
    pub fn typlen(self) -> i16 {
        match self {
            SqlType::Bool => 1,
            SqlType::Int2 => 2,
            SqlType::Int4 | SqlType::Float4 | SqlType::Date | SqlType::Enum(_) => 4,
            SqlType::Int8 | SqlType::Float8 | SqlType::Time | SqlType::Timestamp | SqlType::TimestampTz => 8,
            SqlType::Interval | SqlType::Uuid => 16,
            _ => -1,
        }
    }

    /// Whether values can be ordered byte-wise in an index.
    pub fn indexable(self) -> bool {
        !matches!(self, SqlType::Interval | SqlType::Json | SqlType::Array { .. })
    }
}

impl std::fmt::Display for SqlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_type_names() {
        assert_eq!(SqlType::parse("INTEGER").unwrap(), SqlType::Int4);
        assert_eq!(SqlType::parse("character varying(10)").unwrap(), SqlType::Varchar(Some(10)));
        assert_eq!(SqlType::parse("NUMERIC(10,2)").unwrap(), SqlType::Numeric { precision: 10, scale: 2 });
        assert_eq!(SqlType::parse("timestamp with time zone").unwrap(), SqlType::TimestampTz);
        assert_eq!(SqlType::parse("double precision").unwrap(), SqlType::Float8);
        assert_eq!(SqlType::parse("char(3)").unwrap(), SqlType::Char(3));
        assert_eq!(SqlType::parse("bpchar").unwrap(), SqlType::Char(1));
        assert!(SqlType::parse("frobnicate").is_err());
        for t in [SqlType::Int4, SqlType::Varchar(Some(5)), SqlType::Numeric { precision: 12, scale: 3 }] {
            assert_eq!(SqlType::parse(&t.name()).unwrap(), t);
            let array = SqlType::array_of(t);
            assert_eq!(SqlType::parse(&array.name()).unwrap(), array);
            assert_eq!(array.element(), Some(t));
            // Arrow alone cannot tell varchar from text: the element's Arrow type survives.
            let back = SqlType::from_arrow(&array.arrow_type()).and_then(|a| a.element());
            assert_eq!(back.map(|e| e.arrow_type()), Some(t.arrow_type()));
        }
        assert_eq!(SqlType::parse("int[]").unwrap().oid(), 1007);
        assert_eq!(SqlType::parse("text ARRAY").unwrap().name(), "text[]");
        assert_eq!(SqlType::from_oid(1016), Some(SqlType::array_of(SqlType::Int8)));
        assert!(SqlType::parse("int[][]").is_err());
    }
}
