//! Volatile functions that give every row its own value.
//!
//! A function of no column (`nextval('s')`, `gen_random_uuid()`) is called
//! by DataFusion once per batch with constant arguments; made with
//! `create_udf`, it cannot see how many rows the batch has and answers one
//! value, which DataFusion then repeats for every row: `INSERT … SELECT
//! nextval('s') FROM …` gave every row the same number. These functions
//! take the batch's row count and draw a value per row, as PostgreSQL
//! calls a volatile function once per row.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Int64Array, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::plan::functions::{find_sequence, rand_u64, sql_err};
use crate::scope::Resolver;

pub fn register(ctx: &SessionContext, r: &Resolver) {
    ctx.register_udf(ScalarUDF::new_from_impl(NextVal {
        catalog: r.catalog.clone(),
        db: r.db.clone(),
        signature: Signature::exact(vec![DataType::Utf8], Volatility::Volatile),
    }));
    ctx.register_udf(ScalarUDF::new_from_impl(RandomUuid {
        signature: Signature::exact(vec![], Volatility::Volatile),
    }));
}

/// `nextval(sequence)`: the sequence's next value, for every row.
struct NextVal {
    catalog: Arc<crate::storage::catalog::Catalog>,
    db: String,
    signature: Signature,
}

impl std::fmt::Debug for NextVal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NextVal")
    }
}

impl PartialEq for NextVal {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.catalog, &other.catalog) && self.db == other.db
    }
}

impl Eq for NextVal {}

impl std::hash::Hash for NextVal {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.db.hash(state);
    }
}

impl ScalarUDFImpl for NextVal {
    fn name(&self) -> &str {
        "nextval"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows.max(1);
        let names = args.args[0].to_array(rows)?;
        let names = datafusion::arrow::compute::cast(&names, &DataType::Utf8)?;
        let names = names.as_any().downcast_ref::<StringArray>().expect("text");
        // The usual case: one sequence for the whole batch, drawn at once.
        let single = !names.is_empty() && names.null_count() == 0 && names.iter().all(|n| n == Some(names.value(0)));
        let values: Vec<Option<i64>> = if single {
            let (_, seq) = find_sequence(&self.catalog, &self.db, names.value(0))?;
            self.catalog.nextval_many(&seq, rows).map_err(sql_err)?.into_iter().map(Some).collect()
        } else {
            let mut out = Vec::with_capacity(rows);
            for name in names.iter() {
                out.push(match name {
                    Some(n) => {
                        let (_, seq) = find_sequence(&self.catalog, &self.db, n)?;
                        Some(self.catalog.nextval(&seq).map_err(sql_err)?)
                    }
                    None => None,
                });
            }
            out
        };
        let out: ArrayRef = Arc::new(Int64Array::from(values));
        one_or_many(&args, out)
    }
}

/// A scalar where DataFusion asked for one value (no rows: a constant
/// context), an array of the batch's rows otherwise.
fn one_or_many(args: &ScalarFunctionArgs, out: ArrayRef) -> Result<ColumnarValue> {
    let constant = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_))) && args.number_rows <= 1;
    Ok(if constant { ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?) } else { ColumnarValue::Array(out) })
}

/// `gen_random_uuid()`: a version 4 UUID, for every row.
#[derive(Debug, PartialEq, Eq, Hash)]
struct RandomUuid {
    signature: Signature,
}

impl ScalarUDFImpl for RandomUuid {
    fn name(&self) -> &str {
        "gen_random_uuid"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows.max(1);
        let out: StringArray = (0..rows).map(|_| Some(random_uuid())).collect();
        one_or_many(&args, Arc::new(out))
    }
}

fn random_uuid() -> String {
    let mut b = [0u8; 16];
    for chunk in b.chunks_mut(8) {
        chunk.copy_from_slice(&rand_u64().to_le_bytes());
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}
