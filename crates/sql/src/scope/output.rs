//! What a statement returns ([`Output`]), and the state of a COPY FROM
//! STDIN that waits for the client's data ([`CopyIn`]; `exec::copy` reads
//! and writes the data).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;

use crate::storage::catalog::TableDef;
use crate::storage::txn::Savepoint;

/// The result of one statement.
pub enum Output {
    Rows {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        tag: String,
    },
    Command(String),
    /// COPY … FROM STDIN: the caller streams the data into `CopyIn`, then
    /// calls `Session::finish_copy`.
    CopyIn(Box<CopyIn>),
    /// COPY … TO STDOUT: the rows, already formatted, one chunk per row (a
    /// header line travels with the first row, as clients count chunks).
    CopyOut {
        chunks: Vec<Vec<u8>>,
        columns: usize,
        rows: usize,
        /// `FORMAT binary` (the trailer is the wire layer's to send).
        binary: bool,
    },
    Empty,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Output::Rows { tag, .. } => write!(f, "Rows({tag})"),
            Output::Command(t) => write!(f, "Command({t})"),
            Output::CopyIn(_) => write!(f, "CopyIn"),
            Output::CopyOut { rows, .. } => write!(f, "CopyOut({rows})"),
            Output::Empty => write!(f, "Empty"),
        }
    }
}

/// A COPY FROM STDIN that waits for its data.
pub struct CopyIn {
    pub def: Arc<TableDef>,
    /// Target columns (indexes into the table's columns).
    pub columns: Vec<usize>,
    pub format: Format,
    pub data: Vec<u8>,
    pub autocommit: bool,
    pub savepoint: Savepoint,
}

/// The format of COPY data.
#[derive(Debug, Clone)]
pub struct Format {
    pub csv: bool,
    /// PostgreSQL's binary COPY format (`pg_binary` values in tuples).
    pub binary: bool,
    pub delimiter: char,
    pub null: String,
    pub header: bool,
    pub quote: char,
    pub escape: char,
}

impl Format {
    /// PostgreSQL's default: text, tab-delimited, `\N` for NULL.
    pub fn text() -> Self {
        Format {
            csv: false,
            binary: false,
            delimiter: '\t',
            null: "\\N".into(),
            header: false,
            quote: '"',
            escape: '"',
        }
    }
}
