//! Subqueries DataFusion cannot turn into joins, run once per outer row,
//! as PostgreSQL runs a SubPlan.
//!
//! DataFusion decorrelates a subquery into a join where it can: IN and
//! EXISTS in WHERE, scalar subqueries correlated by equality. Elsewhere —
//! `x IN (SELECT …)` or `EXISTS (…)` in a SELECT list, a scalar subquery
//! correlated by `<`, a LATERAL item, a correlation its rewrite leaves
//! behind — its physical planner refuses the query. Then the query is planned again
//! with each subquery expression replaced by a call of a [`SubPlan`]
//! function whose arguments are the outer columns the subquery reads. For
//! each outer row the function puts those values into the subquery as
//! constants and runs it (with this module again, should it hold such
//! subqueries itself), answering as PostgreSQL's SubPlan does:
//! - a scalar subquery: its one value, NULL for no row, 21000 for more;
//! - EXISTS: whether it returns a row (it stops at the first);
//! - `x IN (…)`: true if a row equals x, else NULL if x or a row's value
//!   is NULL, else false (NOT IN negates that, unknown staying unknown);
//!   the comparison is planned as `x = value`, so the types meet as in any
//!   comparison.
//!
//! - a LATERAL item that reads the row before it (`FROM t, LATERAL
//!   (SELECT … WHERE u.x < t.x) s`, `LEFT JOIN LATERAL … ON …`): the join
//!   becomes a call per left row answering the item's rows that meet the
//!   join's condition as a list of structs, unnested and spread into the
//!   item's columns; under LEFT JOIN no rows answer NULL, which keeps the
//!   left row with NULLs.
//!
//! Answers are kept per distinct outer values, so a subquery runs once per
//! distinct correlation (once in all for an uncorrelated one). The cost is
//! a query per distinct outer row — PostgreSQL's too, for a SubPlan — where
//! a join would have been one pass. The runs block their query thread;
//! when the statement is given up (cancelled, timed out) they stop at the
//! next row ([`Cancelled`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray, RecordBatch, StructArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DataFusionError, Result, ScalarValue, UnnestOptions};
use datafusion::execution::SessionState;
use datafusion::logical_expr::expr::{Exists, InSubquery, ScalarFunction};
use datafusion::logical_expr::{
    ColumnarValue, Expr, Join, JoinType, LogicalPlan, LogicalPlanBuilder, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Subquery, Volatility,
};
use datafusion::physical_plan::ExecutionPlan;
use parking_lot::Mutex;

use crate::error::{SqlError, code};

/// Set when the query a subquery runs for is given up (its statement
/// cancelled or timed out): the runs per row, which block their thread
/// where no await can stop them, stop at the next row (57014).
#[derive(Debug, Default)]
pub(crate) struct Cancelled(pub(crate) std::sync::atomic::AtomicBool);

/// Whether a planning error is DataFusion's refusal of a subquery it left
/// in the plan.
pub(crate) fn unplannable(e: &DataFusionError) -> bool {
    let text = e.to_string();
    let left_in_plan = (text.contains("Physical plan does not support logical expression")
        && ["ScalarSubquery", "Exists", "InSubquery", "OuterReferenceColumn"].iter().any(|k| text.contains(k)))
        || text.contains("Physical plan does not support undecorrelated Subquery");
    // The shapes DataFusion's subquery checks refuse before decorrelating.
    let refused = [
        "Correlated scalar subquery must be aggregated",
        "Correlated scalar subquery can only be used in",
        "Correlated scalar subquery in the GROUP BY clause",
        "In/Exist/SetComparison subquery can only be used in",
        "Accessing outer reference columns is not allowed in the plan",
        "A GROUP BY clause in a scalar correlated subquery",
    ]
    .iter()
    .any(|m| text.contains(m));
    left_in_plan || refused
}

/// Plans `plan` physically; where DataFusion refuses a subquery it left,
/// plans it again with every subquery run per outer row.
pub(crate) async fn physical_plan(
    state: &SessionState,
    plan: LogicalPlan,
    cancelled: &Arc<Cancelled>,
) -> Result<Arc<dyn ExecutionPlan>> {
    match state.create_physical_plan(&plan).await {
        Err(e) if unplannable(&e) => {
            let per_row = per_row(plan, state, cancelled)?;
            state.create_physical_plan(&per_row).await
        }
        // DataFusion's decorrelation can also lose a column it renamed (a
        // subquery over `generate_series(…) AS g(v)`): run per row instead
        // when that works, or report the first error.
        Err(e) if e.to_string().contains("No field named") && has_subquery(&plan) => {
            let per_row = per_row(plan, state, cancelled)?;
            state.create_physical_plan(&per_row).await.map_err(|_| e)
        }
        other => other,
    }
}

/// Whether a plan's expressions hold a subquery, or it joins a LATERAL one.
fn has_subquery(plan: &LogicalPlan) -> bool {
    let mut found = false;
    let _ = plan.apply(|node| {
        if matches!(node, LogicalPlan::Subquery(_)) {
            found = true;
            return Ok(TreeNodeRecursion::Stop);
        }
        node.apply_expressions(|e| {
            found |= e.exists(|e| Ok(matches!(e, Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_))))?;
            Ok(if found { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
        })
    });
    found
}

/// What a subquery expression asks of its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Scalar,
    Exists {
        negated: bool,
    },
    In {
        negated: bool,
    },
    /// A LATERAL item's rows, as a list of structs (NULL for none under
    /// LEFT JOIN, so the outer row stays).
    Lateral {
        left_join: bool,
    },
}

/// `plan` with its subquery expressions (not those inside subqueries,
/// which their own runs handle) replaced by [`SubPlan`] calls.
fn per_row(plan: LogicalPlan, state: &SessionState, cancelled: &Arc<Cancelled>) -> Result<LogicalPlan> {
    plan.transform_up(|node| {
        let node = match node {
            LogicalPlan::Join(join) if is_lateral(&join) => {
                return Ok(Transformed::yes(lateral(join, (state, cancelled))?));
            }
            other => other,
        };
        node.map_expressions(|e| {
            e.transform_up(|e| match e {
                Expr::ScalarSubquery(sub) => Ok(Transformed::yes(call(sub, Kind::Scalar, None, (state, cancelled))?)),
                Expr::Exists(Exists { subquery, negated }) => {
                    Ok(Transformed::yes(call(subquery, Kind::Exists { negated }, None, (state, cancelled))?))
                }
                Expr::InSubquery(InSubquery { expr, subquery, negated }) => {
                    Ok(Transformed::yes(call(subquery, Kind::In { negated }, Some(*expr), (state, cancelled))?))
                }
                other => Ok(Transformed::no(other)),
            })
        })
    })
    .data()
}

/// The call that stands for one subquery: a constant first (so the call
/// always has an argument), the outer columns, and IN's tested value.
fn call(
    sub: Subquery,
    kind: Kind,
    tested: Option<Expr>,
    (state, cancelled): (&SessionState, &Arc<Cancelled>),
) -> Result<Expr> {
    let outer: Vec<Column> = sub
        .outer_ref_columns
        .iter()
        .filter_map(|e| match e {
            Expr::OuterReferenceColumn(_, c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    let return_type = match kind {
        Kind::Scalar => sub.subquery.schema().field(0).data_type().clone(),
        _ => DataType::Boolean,
    };
    let mut args = vec![Expr::Literal(ScalarValue::Boolean(Some(true)), None)];
    args.extend(outer.iter().map(|c| Expr::Column(c.clone())));
    args.extend(tested);
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let udf = SubPlan {
        id,
        name: format!("subplan_{id}"),
        plan: sub.subquery,
        outer,
        kind,
        return_type,
        state: state.clone(),
        answers: Mutex::new(HashMap::new()),
        signature: Signature::user_defined(Volatility::Volatile),
        cancelled: cancelled.clone(),
        on: None,
    };
    Ok(Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(ScalarUDF::new_from_impl(udf)), args)))
}

/// Whether a join's right side reads the left's columns (LATERAL), in a
/// join that can run per left row.
fn is_lateral(join: &Join) -> bool {
    if !matches!(join.join_type, JoinType::Inner | JoinType::Left) {
        return false;
    }
    let mut outer = false;
    let _ = join.right.apply_with_subqueries(|n| {
        n.apply_expressions(|e| {
            outer |= e.exists(|e| Ok(matches!(e, Expr::OuterReferenceColumn(..))))?;
            Ok(if outer { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
        })
    });
    outer
}

/// A LATERAL join run per left row: each left row's call answers the
/// right side's rows (filtered by the join's condition) as a list of
/// structs, which is unnested and spread into the right side's columns.
fn lateral(join: Join, (state, cancelled): (&SessionState, &Arc<Cancelled>)) -> Result<LogicalPlan> {
    let left_join = join.join_type == JoinType::Left;
    // The join's condition, read per left row with the right side's rows.
    let on = join.on.iter().map(|(l, r)| l.clone().eq(r.clone())).chain(join.filter.clone()).reduce(|a, b| a.and(b));
    let left_schema = join.left.schema().clone();
    let mut outer: Vec<Column> = Vec::new();
    let _ = join.right.apply_with_subqueries(|n| {
        n.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::OuterReferenceColumn(_, c) = e
                    && !outer.contains(c)
                {
                    outer.push(c.clone());
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    if let Some(on) = &on {
        for c in on.column_refs() {
            if left_schema.has_column(c) && !outer.contains(c) {
                outer.push(c.clone());
            }
        }
    }
    let right_schema = join.right.schema().clone();
    let fields: Vec<Field> = right_schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| Field::new(format!("c{i}"), f.data_type().clone(), true))
        .collect();
    let item = DataType::Struct(fields.into());
    let return_type = DataType::List(Arc::new(Field::new_list_field(item, true)));
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let udf = SubPlan {
        id,
        name: format!("lateral_{id}"),
        plan: join.right.clone(),
        outer: outer.clone(),
        kind: Kind::Lateral { left_join },
        return_type,
        state: state.clone(),
        answers: Mutex::new(HashMap::new()),
        signature: Signature::user_defined(Volatility::Volatile),
        cancelled: cancelled.clone(),
        on,
    };
    let mut args = vec![Expr::Literal(ScalarValue::Boolean(Some(true)), None)];
    args.extend(outer.iter().map(|c| Expr::Column(c.clone())));
    let rows = Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(ScalarUDF::new_from_impl(udf)), args));
    let left_columns: Vec<Expr> = left_schema.columns().into_iter().map(Expr::Column).collect();
    let mut with_rows = left_columns.clone();
    with_rows.push(rows.alias(LATERAL_ROWS));
    let unnested = LogicalPlanBuilder::from(join.left.as_ref().clone())
        .project(with_rows)?
        .unnest_column_with_options(LATERAL_ROWS, UnnestOptions::new().with_preserve_nulls(left_join))?
        .build()?;
    let mut out = left_columns;
    for (i, (qualifier, field)) in right_schema.iter().enumerate() {
        let value = datafusion::functions::core::expr_fn::get_field(
            Expr::Column(Column::from_name(LATERAL_ROWS)),
            format!("c{i}"),
        );
        out.push(value.alias_qualified(qualifier.cloned(), field.name()));
    }
    LogicalPlanBuilder::from(unnested).project(out)?.build()
}

/// The column a LATERAL item's rows pass through.
const LATERAL_ROWS: &str = "__lateral_rows";

/// One subquery run per outer row (see the module's text).
struct SubPlan {
    id: usize,
    name: String,
    plan: Arc<LogicalPlan>,
    /// The outer columns the subquery reads, in argument order.
    outer: Vec<Column>,
    kind: Kind,
    return_type: DataType,
    state: SessionState,
    /// Answers by the outer values (and tested value) they were for.
    answers: Mutex<HashMap<String, ScalarValue>>,
    signature: Signature,
    cancelled: Arc<Cancelled>,
    /// A LATERAL join's condition, over the left row's values and the
    /// right side's columns.
    on: Option<Expr>,
}

impl std::fmt::Debug for SubPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubPlan").field("id", &self.id).field("kind", &self.kind).finish()
    }
}

impl PartialEq for SubPlan {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for SubPlan {}

impl std::hash::Hash for SubPlan {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

impl SubPlan {
    /// The subquery with the outer values put in as constants (and a
    /// LATERAL item's subquery node, which only marked its correlation,
    /// taken away).
    fn bound(&self, values: &[ScalarValue]) -> Result<LogicalPlan> {
        let plan = self
            .plan
            .as_ref()
            .clone()
            .transform_up(|node| match node {
                LogicalPlan::Subquery(sub) => Ok(Transformed::yes(sub.subquery.as_ref().clone())),
                other => Ok(Transformed::no(other)),
            })
            .data()?;
        plan.transform_up_with_subqueries(|node| {
            node.map_expressions(|e| {
                e.transform_up(|e| match e {
                    Expr::OuterReferenceColumn(_, ref c) => match self.outer.iter().position(|o| o == c) {
                        Some(k) => Ok(Transformed::yes(Expr::Literal(values[k].clone(), None))),
                        None => Ok(Transformed::no(e)),
                    },
                    other => Ok(Transformed::no(other)),
                })
            })
        })
        .data()
    }

    /// Runs a plan to its rows, from inside a running query.
    fn run(&self, plan: LogicalPlan) -> Result<Vec<RecordBatch>> {
        let (state, cancelled) = (self.state.clone(), self.cancelled.clone());
        let work = async move {
            let physical = physical_plan(&state, plan, &cancelled).await?;
            datafusion::physical_plan::collect(physical, state.task_ctx()).await
        };
        // The caller is a query's thread on a multi-threaded runtime: it
        // may block while the subquery runs, the runtime's other threads
        // carrying on.
        tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(work))
    }

    /// The answer for one outer row.
    fn answer(&self, values: &[ScalarValue], tested: Option<&ScalarValue>) -> Result<ScalarValue> {
        let plan = self.bound(values)?;
        match self.kind {
            Kind::Scalar => {
                let batches = self.run(plan)?;
                let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                if rows > 1 {
                    return Err(external(SqlError::new(
                        code::CARDINALITY_VIOLATION,
                        "more than one row returned by a subquery used as an expression",
                    )));
                }
                match batches.iter().find(|b| b.num_rows() > 0) {
                    Some(b) => ScalarValue::try_from_array(b.column(0), 0)?.cast_to(&self.return_type),
                    None => ScalarValue::try_from(&self.return_type),
                }
            }
            Kind::Exists { negated } => {
                let plan = LogicalPlanBuilder::from(plan).limit(0, Some(1))?.build()?;
                let found = self.run(plan)?.iter().any(|b| b.num_rows() > 0);
                Ok(ScalarValue::Boolean(Some(found != negated)))
            }
            Kind::Lateral { left_join } => self.lateral_rows(plan, values, left_join),
            Kind::In { negated } => {
                let tested = tested.cloned().unwrap_or(ScalarValue::Null);
                let value = Expr::Column(Column::from(plan.schema().qualified_field(0)));
                let compared = Expr::Literal(tested, None).eq(value);
                let plan = LogicalPlanBuilder::from(plan).project(vec![compared])?.build()?;
                let (mut any_true, mut any_null) = (false, false);
                for b in self.run(plan)? {
                    let matches = b.column(0).as_boolean();
                    any_true |= matches.true_count() > 0;
                    any_null |= matches.null_count() > 0;
                }
                let found = if any_true {
                    Some(true)
                } else if any_null {
                    None
                } else {
                    Some(false)
                };
                Ok(ScalarValue::Boolean(found.map(|f| f != negated)))
            }
        }
    }
}

impl SubPlan {
    /// A LATERAL item's rows for one left row, as one list value.
    fn lateral_rows(&self, plan: LogicalPlan, values: &[ScalarValue], left_join: bool) -> Result<ScalarValue> {
        let plan = match &self.on {
            Some(on) => {
                let on = on
                    .clone()
                    .transform_up(|e| match e {
                        Expr::Column(ref c) => match self.outer.iter().position(|o| o == c) {
                            Some(k) => Ok(Transformed::yes(Expr::Literal(values[k].clone(), None))),
                            None => Ok(Transformed::no(e)),
                        },
                        other => Ok(Transformed::no(other)),
                    })
                    .data()?;
                LogicalPlanBuilder::from(plan).filter(on)?.build()?
            }
            None => plan,
        };
        let batches = self.run(plan)?;
        let DataType::List(item) = &self.return_type else {
            return Err(DataFusionError::Internal("a LATERAL call's type is not a list".into()));
        };
        let DataType::Struct(fields) = item.data_type() else {
            return Err(DataFusionError::Internal("a LATERAL call's items are not structs".into()));
        };
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        if rows == 0 && left_join {
            return ScalarValue::try_from(&self.return_type);
        }
        let columns: Vec<ArrayRef> = (0..fields.len())
            .map(|c| {
                let parts: Vec<ArrayRef> = batches.iter().map(|b| b.column(c).clone()).collect();
                let parts: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                let joined = if parts.is_empty() {
                    datafusion::arrow::array::new_empty_array(fields[c].data_type())
                } else {
                    datafusion::arrow::compute::concat(&parts)?
                };
                Ok(datafusion::arrow::compute::cast(&joined, fields[c].data_type())?)
            })
            .collect::<Result<_>>()?;
        let items = StructArray::try_new(fields.clone(), columns, None)?;
        let list = ListArray::try_new(item.clone(), OffsetBuffer::from_lengths([rows]), Arc::new(items), None)?;
        Ok(ScalarValue::List(Arc::new(list)))
    }
}

impl ScalarUDFImpl for SubPlan {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        Ok(args.to_vec())
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(self.return_type.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let arrays = args.args.iter().map(|a| a.to_array(n)).collect::<Result<Vec<_>>>()?;
        let outer = &arrays[1..=self.outer.len()];
        let tested = arrays.get(1 + self.outer.len());
        let mut out = Vec::with_capacity(n);
        for row in 0..n {
            if self.cancelled.0.load(Ordering::Relaxed) {
                return Err(external(SqlError::new(code::QUERY_CANCELED, "canceling statement due to user request")));
            }
            let values = outer.iter().map(|a| ScalarValue::try_from_array(a, row)).collect::<Result<Vec<_>>>()?;
            let tested = tested.map(|a| ScalarValue::try_from_array(a, row)).transpose()?;
            let key = format!("{values:?}|{tested:?}");
            let known = self.answers.lock().get(&key).cloned();
            let answer = match known {
                Some(a) => a,
                None => {
                    let a = self.answer(&values, tested.as_ref())?;
                    self.answers.lock().insert(key, a.clone());
                    a
                }
            };
            out.push(answer);
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(datafusion::arrow::array::new_empty_array(&self.return_type)));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}
