//! How a system view is declared and read: typed columns ([`ColumnType`],
//! [`ColumnValue`]), a row struct per view ([`view_row!`]), the views
//! themselves ([`SystemView`]: a [`View`] with rows, an [`EmptyView`]
//! with none) and a schema's registry of them ([`Views`]).
//!
//! A view's rows become one Arrow array per column, built from the row
//! structs' fields. Since the struct's fields are the declared columns,
//! a row cannot hold too few or too many values, nor one of the wrong
//! type; `RecordBatch::try_new` checks the arrays against the declared
//! columns once more, so a view whose arrays disagree fails its query
//! rather than showing a value under the wrong name.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float32Array, Int16Array, Int32Array, Int64Array, ListBuilder, RecordBatch, StringArray,
    StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::error::Result as DfResult;

use crate::scope::Resolver;

/// The SQL types of the system views' columns. OIDs are `Int8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Text,
    /// `text[]`, also standing for `aclitem[]`.
    TextArray,
}

impl ColumnType {
    pub fn data_type(self) -> DataType {
        match self {
            ColumnType::Bool => DataType::Boolean,
            ColumnType::Int2 => DataType::Int16,
            ColumnType::Int4 => DataType::Int32,
            ColumnType::Int8 => DataType::Int64,
            ColumnType::Float4 => DataType::Float32,
            ColumnType::Text => DataType::Utf8,
            ColumnType::TextArray => DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
        }
    }
}

/// A Rust type a row struct's field may have: the column type it makes,
/// and how a column of its values becomes an Arrow array. `Option`s are
/// the columns that may be NULL.
pub trait ColumnValue: Sized {
    const TYPE: ColumnType;
    fn array(values: Vec<Self>) -> ArrayRef;
}

/// `ColumnValue` for types an Arrow array converts from directly, and
/// for their `Option`s.
macro_rules! direct_columns {
    ($($value:ty => $column:ident as $array:ty;)*) => {$(
        impl ColumnValue for $value {
            const TYPE: ColumnType = ColumnType::$column;
            fn array(values: Vec<Self>) -> ArrayRef {
                Arc::new(<$array>::from(values))
            }
        }
        impl ColumnValue for Option<$value> {
            const TYPE: ColumnType = ColumnType::$column;
            fn array(values: Vec<Self>) -> ArrayRef {
                Arc::new(<$array>::from(values))
            }
        }
    )*};
}

direct_columns! {
    bool => Bool as BooleanArray;
    i16 => Int2 as Int16Array;
    i32 => Int4 as Int32Array;
    i64 => Int8 as Int64Array;
    f32 => Float4 as Float32Array;
    String => Text as StringArray;
    &'static str => Text as StringArray;
}

/// A `text[]` column whose arrays are never NULL themselves (their
/// elements may be).
impl ColumnValue for Vec<Option<String>> {
    const TYPE: ColumnType = ColumnType::TextArray;
    fn array(values: Vec<Self>) -> ArrayRef {
        let mut list = ListBuilder::new(StringBuilder::new());
        for items in values {
            items.iter().for_each(|item| list.values().append_option(item.as_deref()));
            list.append(true);
        }
        Arc::new(list.finish())
    }
}

/// A nullable `text[]` column: the `aclitem[]` and option columns Tessera
/// leaves at their defaults (privileges, storage options), which PostgreSQL
/// shows as NULL.
impl ColumnValue for Option<Vec<Option<String>>> {
    const TYPE: ColumnType = ColumnType::TextArray;
    fn array(values: Vec<Self>) -> ArrayRef {
        let mut list = ListBuilder::new(StringBuilder::new());
        for items in values {
            match items {
                Some(items) => {
                    items.iter().for_each(|item| list.values().append_option(item.as_deref()));
                    list.append(true);
                }
                None => list.append(false),
            }
        }
        Arc::new(list.finish())
    }
}

/// One row of a system view: a struct whose fields are the view's
/// columns, in order. Declared with [`view_row!`], which derives both.
pub trait ViewRow: Sized {
    /// The view's columns: names and types, in order.
    const COLUMNS: &'static [(&'static str, ColumnType)];
    /// The rows as one array per column, in the columns' order.
    fn arrays(rows: Vec<Self>) -> Vec<ArrayRef>;
}

/// Declares a system view's row struct: each field is a column, named as
/// the field, of the type its Rust type makes ([`ColumnValue`]), in the
/// order written.
///
/// ```ignore
/// view_row! {
///     /// A row of `pg_am`: an access method.
///     pub struct PgAm { oid: i64, amname: &'static str, amtype: &'static str }
/// }
/// ```
macro_rules! view_row {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($(#[$field_meta:meta])* $field:ident: $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        $vis struct $name {
            $($(#[$field_meta])* pub $field: $ty,)*
        }

        impl $crate::system::view::ViewRow for $name {
            const COLUMNS: &'static [(&'static str, $crate::system::view::ColumnType)] =
                &[$((stringify!($field), <$ty as $crate::system::view::ColumnValue>::TYPE)),*];

            fn arrays(rows: Vec<Self>) -> Vec<datafusion::arrow::array::ArrayRef> {
                $(let mut $field: Vec<$ty> = Vec::with_capacity(rows.len());)*
                for row in rows {
                    $($field.push(row.$field);)*
                }
                vec![$(<$ty as $crate::system::view::ColumnValue>::array($field)),*]
            }
        }
    };
}
pub(crate) use view_row;

/// A system view as its schema's registry holds it.
pub trait SystemView: Sync {
    /// The name a query finds the view by in its schema.
    fn name(&self) -> &'static str;
    /// The view's columns: names and types, in order.
    fn columns(&self) -> &'static [(&'static str, ColumnType)];
    /// The view's rows as the session sees them now, one array per column.
    fn arrays(&self, r: &Resolver) -> Vec<ArrayRef>;
}

/// A view whose rows `rows` makes, one `R` a row; its columns are `R`'s.
pub struct View<R> {
    pub name: &'static str,
    pub rows: fn(&Resolver) -> Vec<R>,
}

impl<R: ViewRow> SystemView for View<R> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn columns(&self) -> &'static [(&'static str, ColumnType)] {
        R::COLUMNS
    }
    fn arrays(&self, r: &Resolver) -> Vec<ArrayRef> {
        R::arrays((self.rows)(r))
    }
}

/// A view PostgreSQL has and Tessera keeps empty, so that the clients'
/// queries that read it plan and find nothing: only its columns.
pub struct EmptyView {
    pub name: &'static str,
    pub columns: &'static [(&'static str, ColumnType)],
}

impl SystemView for EmptyView {
    fn name(&self) -> &'static str {
        self.name
    }
    fn columns(&self) -> &'static [(&'static str, ColumnType)] {
        self.columns
    }
    fn arrays(&self, _: &Resolver) -> Vec<ArrayRef> {
        self.columns.iter().map(|(_, ty)| datafusion::arrow::array::new_empty_array(&ty.data_type())).collect()
    }
}

/// The views of one schema, in the order the schema lists them.
pub struct Views(pub &'static [&'static dyn SystemView]);

impl Views {
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().map(|v| v.name())
    }

    pub fn contains(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    pub fn find(&self, name: &str) -> Option<&'static dyn SystemView> {
        self.0.iter().copied().find(|v| v.name() == name)
    }

    /// The view named `name` as a table of its rows now (None: the schema
    /// has no such view).
    pub fn table(&self, r: &Resolver, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        self.find(name).map(|view| table(view, r)).transpose()
    }
}

/// The schema a view's columns make: every column nullable, as
/// PostgreSQL's catalogs' columns read from a client's side.
pub fn schema(view: &dyn SystemView) -> Arc<Schema> {
    let fields: Vec<Field> = view.columns().iter().map(|(name, ty)| Field::new(*name, ty.data_type(), true)).collect();
    Arc::new(Schema::new(fields))
}

/// A view's rows now, as one in-memory table.
fn table(view: &dyn SystemView, r: &Resolver) -> DfResult<Arc<dyn TableProvider>> {
    let schema = schema(view);
    let batch = RecordBatch::try_new(schema.clone(), view.arrays(r))?;
    Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, ListArray};

    view_row! {
        struct Probe { id: i64, name: String, note: Option<String>, acl: Vec<Option<String>>, kind: &'static str }
    }

    #[test]
    fn a_row_struct_is_its_columns_in_order() {
        let names: Vec<&str> = Probe::COLUMNS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["id", "name", "note", "acl", "kind"]);
        let rows = vec![
            Probe { id: 1, name: "a".into(), note: None, acl: vec![None], kind: "r" },
            Probe { id: 2, name: "b".into(), note: Some("n".into()), acl: vec![Some("x".into())], kind: "v" },
        ];
        let arrays = Probe::arrays(rows);
        for ((_, ty), array) in Probe::COLUMNS.iter().zip(&arrays) {
            assert_eq!(array.data_type(), &ty.data_type());
            assert_eq!(array.len(), 2);
        }
        assert_eq!(arrays[2].null_count(), 1);
        let acl = arrays[3].as_any().downcast_ref::<ListArray>().unwrap();
        assert_eq!((acl.null_count(), acl.value(0).len(), acl.value(0).null_count()), (0, 1, 1));
    }
}
