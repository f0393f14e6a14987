//! SQL types and values, with PostgreSQL's meaning: everything that knows
//! a value but no table, session or plan. It sits above `parser` and
//! `error` only; every other layer uses it.
//!
//! - Types and storage: `types` maps SQL types to Arrow and PostgreSQL
//!   OIDs; `rowcodec` stores values one engine field per column in
//!   order-preserving encodings; `text` formats values as PostgreSQL prints
//!   them; `pg_binary` and `copy_binary` are PostgreSQL's binary forms (the
//!   wire layer uses them for binary results and parameters too); `assign`
//!   converts a value to a column's type for a write.
//! - Users' types: `user_types` and `enum_registry` tell every layer an enum
//!   type's name and labels by OID (an enum column's `SqlType` is its OID;
//!   its values travel as labels); `enums` reads casts to enum types and
//!   domains and orders enum values by their labels' positions,
//!   `enum_aggregates` gives them `min`/`max`; `domains` checks domains'
//!   constraints where values are written or cast.
//! - Numbers: `exact_casts` keeps casts that merge values in comparisons;
//!   `overflow` raises integer overflow (constants included);
//!   `int_literals` types integer constants as PostgreSQL does;
//!   `union_literals` reads a set operation's string constants as its
//!   other branches' type, `arith_literals` an arithmetic operand's as the
//!   other operand's; `int_casts`
//!   rounds casts to integers; `float_arith` raises float overflow and
//!   division by zero and casts floats to numeric through their significant
//!   digits; `float_compare` compares numerics with floats in float8;
//!   `real_sum` keeps `sum(real)` single precision; `numeric` and
//!   `numeric_ops` hold numerics beyond Decimal128 (numeric(p, s) up to 76
//!   digits, unconstrained numeric exactly to 38 places) and multiply,
//!   divide and average them as PostgreSQL does; `numeric_special` keeps NaN
//!   and the infinities; `numeric_div` plans quotients and averages as
//!   PostgreSQL's `numeric_div`; `numeric_var` computes variances and
//!   standard deviations exactly; `formatting`, `to_char_numeric` and
//!   `to_number` format and read numbers as PostgreSQL's NUM_processor does.
//! - Time: `dates` and `timestamps` read and print dates and timestamps,
//!   `timestamp_in` makes the value of a timestamp's text (microseconds,
//!   PostgreSQL's range and infinities; `timestamp_units` keeps every
//!   timestamp in microseconds and reads text cast to one with it);
//!   `tz` and `local_time` apply the session's `TimeZone` to timestamptz;
//!   `zones` computes AT TIME ZONE with IANA zones; `intervals` reads,
//!   compares and multiplies intervals, `interval_groups` groups them;
//!   `date_fields` computes the `extract` fields DataFusion gets wrong or
//!   lacks; `datetime_fns` and `to_char` are PostgreSQL's date/time
//!   functions and templates, `to_timestamp` reads them (`to_timestamp`,
//!   `to_date`).
//! - Text and patterns: `bpchar` gives char(n) its padding; `encoding`
//!   converts between text and bytea; `patterns` rewrites SIMILAR TO and
//!   LIKE … ESCAPE into what DataFusion matches; `regexps` gives the regexp
//!   functions PostgreSQL's flags and results.
//! - JSON and arrays: `json` gives json and jsonb their operators and
//!   functions, `json_more` the rest, `json_sets` their aggregates and
//!   set-returning functions; `array_types` gives array columns PostgreSQL's
//!   text form; `array_fns` gives the array functions PostgreSQL's meaning.
//! - `udf_values` holds what scalar functions share (argument access,
//!   results as arrays); `pg_typeof` names types.

pub(crate) mod arith_literals;
pub(crate) mod array_fns;
pub mod array_types;
pub(crate) mod assign;
pub(crate) mod bpchar;
pub(crate) mod copy_binary;
pub(crate) mod date_fields;
pub mod dates;
pub(crate) mod datetime_fns;
pub(crate) mod domains;
pub(crate) mod encoding;
pub(crate) mod enum_aggregates;
pub(crate) mod enum_registry;
pub(crate) mod enums;
pub(crate) mod exact_casts;
pub(crate) mod float_arith;
pub(crate) mod float_compare;
pub(crate) mod float_unions;
pub(crate) mod float_var;
pub(crate) mod formatting;
pub(crate) mod frame_recompute;
pub(crate) mod int_casts;
pub(crate) mod int_literals;
pub(crate) mod interval_groups;
pub(crate) mod interval_in;
pub mod interval_out;
pub(crate) mod intervals;
pub(crate) mod json;
pub(crate) mod json_delete;
pub(crate) mod json_more;
pub(crate) mod json_sets;
pub(crate) mod json_subscript;
pub(crate) mod local_time;
pub(crate) mod numeric;
pub(crate) mod numeric_div;
pub(crate) mod numeric_ops;
pub(crate) mod numeric_special;
pub(crate) mod numeric_var;
pub(crate) mod overflow;
pub(crate) mod patterns;
pub mod pg_binary;
pub(crate) mod pg_typeof;
pub(crate) mod real_sum;
pub(crate) mod regexp_pg;
pub(crate) mod regexps;
pub(crate) mod rowcodec;
pub(crate) mod small_fns;
pub mod text;
pub mod timestamp_in;
pub(crate) mod timestamp_infinity;
pub(crate) mod timestamp_units;
pub(crate) mod timestamps;
pub(crate) mod to_char;
pub(crate) mod to_char_numeric;
pub(crate) mod to_number;
pub(crate) mod to_timestamp;
pub(crate) mod types;
pub mod tz;
pub(crate) mod udf_values;
pub(crate) mod union_literals;
pub mod user_types;
pub(crate) mod zones;
