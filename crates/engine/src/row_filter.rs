//! Tests of a row's fields against constants, on the fields' bytes.
//!
//! The SQL layer encodes the values of most types so that byte order is
//! SQL order and byte equality is SQL equality (integers, decimals, dates,
//! times, text, bytea, booleans). For those, a comparison of a column with a
//! constant can be made on the stored bytes, without decoding the row: a
//! scan applies such tests where it reads the rows, so that rows a query's
//! filter rejects are neither copied nor, for a partition led by another
//! node, sent over the network. Which comparisons qualify is the SQL
//! layer's choice; here they are only carried out.
//!
//! A filter is a conjunction: a row passes when every test holds. A test
//! of a field the row does not have (a column added after the row was
//! written, without a default) sees NULL, as the SQL layer reads it; NULL
//! fails every comparison, as in SQL. A row that cannot be parsed passes,
//! so that the layer above meets it and reports it.

use std::cmp::Ordering;

use crate::tuple::Tuple;

/// How a field is compared with the test's constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Cmp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    /// The field is NULL (the constant is unused).
    IsNull,
    /// The field is not NULL (the constant is unused).
    IsNotNull,
}

/// `field cmp value`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FieldTest {
    pub field: u32,
    pub cmp: Cmp,
    pub value: Vec<u8>,
}

impl FieldTest {
    /// Whether a field holding `field` (None: NULL) passes.
    pub fn holds(&self, field: Option<&[u8]>) -> bool {
        let Some(bytes) = field else { return self.cmp == Cmp::IsNull };
        let order = bytes.cmp(self.value.as_slice());
        match self.cmp {
            Cmp::Eq => order == Ordering::Equal,
            Cmp::NotEq => order != Ordering::Equal,
            Cmp::Lt => order == Ordering::Less,
            Cmp::LtEq => order != Ordering::Greater,
            Cmp::Gt => order == Ordering::Greater,
            Cmp::GtEq => order != Ordering::Less,
            Cmp::IsNull => false,
            Cmp::IsNotNull => true,
        }
    }
}

/// Whether row `row` passes every test (a row that cannot be parsed does).
pub fn passes(row: &[u8], tests: &[FieldTest]) -> bool {
    if tests.is_empty() {
        return true;
    }
    let Ok(t) = Tuple::parse(row) else { return true };
    tests.iter().all(|test| test.holds(t.field(test.field as usize)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuple::encode_tuple;

    fn test(field: u32, cmp: Cmp, value: &[u8]) -> FieldTest {
        FieldTest { field, cmp, value: value.to_vec() }
    }

    #[test]
    fn a_row_passes_when_every_test_holds() {
        let row = encode_tuple(&[Some(b"b"), None, Some(b"\x00\x05")]);
        assert!(passes(&row, &[]));
        assert!(passes(&row, &[test(0, Cmp::Eq, b"b"), test(2, Cmp::Gt, b"\x00\x04")]));
        assert!(!passes(&row, &[test(0, Cmp::Eq, b"b"), test(2, Cmp::Gt, b"\x00\x05")]));
        // Byte order: "b" sorts after "a" and before "ba".
        for (cmp, value, want) in [
            (Cmp::Lt, &b"ba"[..], true),
            (Cmp::LtEq, b"b", true),
            (Cmp::GtEq, b"b", true),
            (Cmp::Gt, b"a", true),
            (Cmp::Lt, b"a", false),
            (Cmp::NotEq, b"b", false),
            (Cmp::NotEq, b"", true),
        ] {
            assert_eq!(passes(&row, &[test(0, cmp, value)]), want, "{cmp:?} {value:?}");
        }
        // NULL fails every comparison, and is what IS NULL looks for.
        for cmp in [Cmp::Eq, Cmp::NotEq, Cmp::Lt, Cmp::GtEq, Cmp::IsNotNull] {
            assert!(!passes(&row, &[test(1, cmp, b"")]), "{cmp:?}");
        }
        assert!(passes(&row, &[test(1, Cmp::IsNull, b"")]));
        // A field past the row's end is NULL.
        assert!(passes(&row, &[test(7, Cmp::IsNull, b"")]));
        assert!(!passes(&row, &[test(7, Cmp::Eq, b"b")]));
        // A malformed row passes, for the layer above to meet.
        assert!(passes(b"\xff", &[test(0, Cmp::Eq, b"b")]));
    }
}
