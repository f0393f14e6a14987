//! EXPLAIN and EXPLAIN ANALYZE: DataFusion's physical plan, plus the access
//! path each engine scan used (point lookup, index range, full scan) and
//! how many rows it read.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::physical_plan::displayable;
use datafusion::sql::sqlparser::ast::Statement;

use crate::error::{Result, SqlError};
use crate::session::{Output, Session};

pub async fn execute(
    session: &mut Session,
    stmt: Statement,
    analyze: bool,
    verbose: bool,
    params: &[ScalarValue],
) -> Result<Output> {
    let mut lines: Vec<String> = Vec::new();
    if !analyze
        && session.fast_path_enabled()
        && let Some(plan) = session.prepare_fast(&stmt)
    {
        lines.push(plan.describe());
        return Ok(rows(lines));
    }
    match stmt {
        Statement::Query(_) => {
            let plan = session.plan_query(stmt, params).await?;
            let state = session.ctx.state();
            let physical = crate::plan::subplans::physical_plan(&state, plan, &Default::default()).await?;
            if analyze {
                let started = std::time::Instant::now();
                let batches =
                    crate::session::collect_on_query_runtime(physical.clone(), session.ctx.task_ctx()).await?;
                let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                let text = displayable(physical.as_ref()).indent(verbose).to_string();
                lines.extend(text.lines().map(|l| l.to_string()));
                lines.push(format!("Rows returned: {rows}"));
                lines.push(format!("Execution Time: {:.3} ms", started.elapsed().as_secs_f64() * 1000.0));
            } else {
                let text = displayable(physical.as_ref()).indent(verbose).to_string();
                lines.extend(text.lines().map(|l| l.to_string()));
            }
        }
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
            let kind = match &stmt {
                Statement::Insert(_) => "Insert",
                Statement::Update(_) => "Update",
                _ => "Delete",
            };
            if analyze {
                let started = std::time::Instant::now();
                let out = crate::exec::dml::execute(session, stmt, params).await?;
                let tag = match out {
                    Output::Command(t) | Output::Rows { tag: t, .. } => t,
                    _ => String::new(),
                };
                lines.push(format!("{kind} (Tessera DML): {tag}"));
                lines.push(format!("Execution Time: {:.3} ms", started.elapsed().as_secs_f64() * 1000.0));
            } else {
                lines.push(format!("{kind} (Tessera DML; rows found by a DataFusion query over the target table)"));
                // Show how the rows to change are found.
                if let Some(probe) = crate::exec::dml_params::where_probe(session, &stmt)? {
                    let probe = crate::plan::parse_sql(&probe)?.pop().expect("statement");
                    let plan = session.plan_query(probe, params).await?;
                    let physical =
                        crate::plan::subplans::physical_plan(&session.ctx.state(), plan, &Default::default()).await?;
                    let text = displayable(physical.as_ref()).indent(verbose).to_string();
                    lines.extend(text.lines().map(|l| format!("  {l}")));
                }
            }
        }
        other => {
            return Err(SqlError::unsupported(format!(
                "EXPLAIN of {}",
                other.to_string().split_whitespace().next().unwrap_or("")
            )));
        }
    }
    for note in session.notes.lock().iter() {
        lines.push(format!("Tessera scan {note}"));
    }
    lines.push("Tessera path: general (DataFusion)".to_string());
    Ok(rows(lines))
}

fn rows(lines: Vec<String>) -> Output {
    let schema = Arc::new(Schema::new(vec![Field::new("QUERY PLAN", DataType::Utf8, false)]));
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(lines))]).expect("one text column");
    Output::Rows { schema, batches: vec![batch], tag: "EXPLAIN".into() }
}
