//! SET, SHOW, RESET and SET TRANSACTION over the session's settings
//! (`scope::settings`).

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::sql::sqlparser::ast::{Expr, Set, Statement, Value};

use crate::error::{Result, SqlError, code};
use crate::scope::settings::{Settings, canonical, isolation_name, validate};
use crate::session::{Output, Session};

fn expr_text(e: &Expr) -> String {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
            Value::Number(n, _) => n.to_string(),
            Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
            other => other.to_string(),
        },
        Expr::Identifier(i) => i.value.clone(),
        Expr::UnaryOp { op, expr } => format!("{op}{}", expr_text(expr)),
        other => other.to_string(),
    }
}

/// Handles SET, SHOW and RESET; returns None for other statements.
/// Where a session runs is chosen when it connects (the gateway serves it
/// on the primary or on the secondary it reached); SET cannot move it.
fn connect_time_only(name: &str) -> Result<()> {
    if name.replace(' ', "") == "tessera.read_from" {
        return Err(SqlError::new(
            code::CANT_CHANGE_RUNTIME_PARAM,
            "parameter \"tessera.read_from\" can only be set when connecting",
        )
        .with_hint("Connect with options='-c tessera.read_from=secondary' to read on a secondary.".to_string()));
    }
    Ok(())
}

pub fn try_execute(session: &mut Session, stmt: &Statement) -> Result<Option<Output>> {
    match stmt {
        Statement::Set(Set::SingleAssignment { variable, values, .. }) => {
            let name = variable.to_string();
            let value: Vec<String> = values.iter().map(expr_text).collect();
            let value = value.join(", ");
            let lower = name.to_lowercase();
            connect_time_only(&lower)?;
            if lower == "transaction_isolation" {
                let iso = crate::scope::settings::isolation_from_name(&value).ok_or_else(|| {
                    SqlError::new(code::INVALID_PARAMETER_VALUE, format!("invalid isolation \"{value}\""))
                })?;
                let mode = datafusion::sql::sqlparser::ast::TransactionMode::IsolationLevel(match iso {
                    tessera_engine::Isolation::ReadCommitted => {
                        datafusion::sql::sqlparser::ast::TransactionIsolationLevel::ReadCommitted
                    }
                    tessera_engine::Isolation::Serializable => {
                        datafusion::sql::sqlparser::ast::TransactionIsolationLevel::Serializable
                    }
                    _ => datafusion::sql::sqlparser::ast::TransactionIsolationLevel::RepeatableRead,
                });
                session.set_transaction(&[mode], false)?;
            } else if value.eq_ignore_ascii_case("default") {
                let default = Settings::defaults(session.on_secondary()).get(&name);
                session.info.settings.lock().set(&name, &default)?;
            } else {
                if lower == "transaction_read_only" && validate("transaction_read_only", &value)? == "off" {
                    session.refuse_read_write()?;
                }
                if lower == "transaction_deferrable" {
                    let on = validate("transaction_deferrable", &value)? == "on";
                    if let Some(b) = session.block.as_mut() {
                        b.deferrable = on;
                    }
                }
                session.info.settings.lock().set(&name, &value)?;
            }
            Ok(Some(Output::Command("SET".into())))
        }
        Statement::Set(Set::SetTimeZone { value, .. }) => {
            session.info.settings.lock().set("TimeZone", &expr_text(value))?;
            Ok(Some(Output::Command("SET".into())))
        }
        Statement::Set(Set::SetNames { charset_name, .. }) => {
            session.info.settings.lock().set("client_encoding", &charset_name.value)?;
            Ok(Some(Output::Command("SET".into())))
        }
        Statement::Set(Set::SetTransaction { modes, session: whole_session, .. }) => {
            session.set_transaction(modes, *whole_session)?;
            Ok(Some(Output::Command("SET".into())))
        }
        Statement::Set(Set::SetRole { .. }) | Statement::Set(Set::SetSessionAuthorization(_)) => {
            Err(SqlError::unsupported("SET ROLE and SET SESSION AUTHORIZATION"))
        }
        Statement::Set(_) => Err(SqlError::unsupported("this form of SET")),
        Statement::ShowVariable { variable } => {
            let name: Vec<String> = variable.iter().map(|i| i.value.clone()).collect();
            // `SHOW tessera.fast_path` arrives as two words; `SHOW
            // TRANSACTION ISOLATION LEVEL` as four.
            let dotted = name.join(".");
            let name = if canonical(&dotted).is_some() { dotted } else { name.join(" ") };
            Ok(Some(show(session, &name)?))
        }
        Statement::Reset(r) => {
            let text = r.to_string();
            let name = text.trim_start_matches("RESET").trim();
            if name.eq_ignore_ascii_case("all") {
                let mut settings = session.info.settings.lock();
                let read_from = settings.get("tessera.read_from");
                *settings = Settings::defaults(session.on_secondary());
                settings.set("tessera.read_from", &read_from)?;
            } else {
                connect_time_only(&name.to_lowercase())?;
                let default = Settings::defaults(session.on_secondary()).get(name);
                session.info.settings.lock().set(name, &default)?;
            }
            Ok(Some(Output::Command("RESET".into())))
        }
        Statement::Discard { .. } => Ok(Some(Output::Command("DISCARD ALL".into()))),
        // Connection poolers reset sessions with these; Tessera has no SQL
        // cursors or notification channels, so there is nothing to close.
        Statement::Close { cursor: datafusion::sql::sqlparser::ast::CloseCursor::All } => {
            Ok(Some(Output::Command("CLOSE CURSOR ALL".into())))
        }
        Statement::UNLISTEN { .. } => Ok(Some(Output::Command("UNLISTEN".into()))),
        _ => Ok(None),
    }
}

fn show(session: &Session, name: &str) -> Result<Output> {
    let one = |col: &str, value: String| {
        let schema = Arc::new(Schema::new(vec![Field::new(col, DataType::Utf8, true)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(vec![value]))])?;
        Ok::<_, SqlError>(Output::Rows { schema, batches: vec![batch], tag: "SHOW".into() })
    };
    let lower = name.to_lowercase();
    match lower.as_str() {
        "all" => {
            let all = session.info.settings.lock().all();
            let schema = Arc::new(Schema::new(vec![
                Field::new("name", DataType::Utf8, false),
                Field::new("setting", DataType::Utf8, false),
                Field::new("description", DataType::Utf8, false),
            ]));
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(StringArray::from(all.iter().map(|a| a.0).collect::<Vec<_>>())),
                    Arc::new(StringArray::from(all.iter().map(|a| a.1.clone()).collect::<Vec<_>>())),
                    Arc::new(StringArray::from(all.iter().map(|a| a.2).collect::<Vec<_>>())),
                ],
            )?;
            Ok(Output::Rows { schema, batches: vec![batch], tag: "SHOW".into() })
        }
        "transaction isolation level" | "transaction_isolation" => {
            one("transaction_isolation", isolation_name(session.current_isolation()).to_string())
        }
        "transaction_deferrable" => {
            let on = match &session.block {
                Some(b) => b.deferrable,
                None => session.info.settings.lock().get("default_transaction_deferrable") == "on",
            };
            one("transaction_deferrable", if on { "on" } else { "off" }.to_string())
        }
        // The block's access mode; outside a block, the next one's.
        "transaction_read_only" => {
            let next = session.autocommit() && session.info.settings.lock().hot().default_read_only;
            one("transaction_read_only", if session.read_only() || next { "on" } else { "off" }.to_string())
        }
        "time zone" | "timezone" => one("TimeZone", session.info.settings.lock().get("TimeZone")),
        _ => match canonical(&lower) {
            Some(key) => one(key, session.info.settings.lock().get(key)),
            None => {
                Err(SqlError::new(code::UNDEFINED_OBJECT, format!("unrecognized configuration parameter \"{name}\"")))
            }
        },
    }
}
