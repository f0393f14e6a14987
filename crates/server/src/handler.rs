//! pgwire handlers for one connection: startup, simple and extended query,
//! COPY. Each connection owns one `Session`, created after startup from the
//! user and database the client named.

use std::fmt::Debug;
use std::sync::Arc;
use tessera_sql::values::text::TextStyle;
use tessera_sql::values::tz::Zone;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::Statement;
use futures::{Sink, stream};
use pgwire::api::auth::mechanism::{AuthMechanism, AuthState};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{
    AuthDriver, AuthOutcome, AuthSource, DefaultServerParameterProvider, LoginInfo, Password, StartupHandler,
    protocol_negotiation, save_startup_parameters_to_metadata,
};
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{CopyResponse, FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, METADATA_DATABASE, METADATA_USER, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone};
use pgwire::messages::data::{FieldDescription, RowDescription};
use pgwire::messages::startup::PasswordMessageFamily;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tessera_sql::error::{SqlError, code};
use tessera_sql::plan::parse_sql;
use tessera_sql::{Output, Session, SqlEngine, SqlType, TxnStatus};
use tokio::sync::Mutex;

use crate::values::{decode_param, encode_batch, fields, pg_type};

pub fn to_pg_error(e: SqlError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
}

pub fn error_info(e: SqlError) -> ErrorInfo {
    let mut info = ErrorInfo::new(e.severity.to_string(), e.code.to_string(), e.message.replace('\0', ""));
    info.detail = e.detail.map(|d| d.replace('\0', ""));
    info.hint = e.hint.map(|h| h.replace('\0', ""));
    info
}

/// The per-connection state shared by all handlers of one connection.
pub struct Conn {
    pub sql: Arc<SqlEngine>,
    pub session: Mutex<Option<Session>>,
    pub copy: Mutex<Option<Box<tessera_sql::scope::output::CopyIn>>>,
    /// When the last statement ended (for idle_in_transaction_session_timeout).
    pub last_active: std::sync::Mutex<std::time::Instant>,
    /// A statement is running.
    pub busy: std::sync::atomic::AtomicBool,
    /// Row descriptions of recent result schemas (see `Descriptions`).
    descriptions: std::sync::Mutex<Descriptions>,
}

/// The row descriptions of the result schemas a connection used last. A
/// prepared fast-path statement returns the same schema (one `Arc`) every
/// time, so its description is built once rather than per execution. An
/// entry holds its schema, so the pointer it is found by cannot be reused.
#[derive(Default)]
struct Descriptions {
    entries: Vec<Arc<Description>>,
}

pub(crate) struct Description {
    schema: SchemaRef,
    pub(crate) binary: Vec<bool>,
    fields: Arc<Vec<FieldInfo>>,
    pub(crate) types: Vec<SqlType>,
    /// The RowDescription message, encoded (Describe of a portal answers it).
    pub(crate) row_description: bytes::Bytes,
}

impl Descriptions {
    const CAPACITY: usize = 32;

    fn get(&mut self, schema: &SchemaRef, format: &Format) -> Arc<Description> {
        let n = schema.fields().len();
        let binary_at = |i: usize| format.format_for(i) == FieldFormat::Binary;
        if let Some(d) =
            self.entries.iter().find(|d| Arc::ptr_eq(&d.schema, schema) && (0..n).all(|i| d.binary[i] == binary_at(i)))
        {
            return d.clone();
        }
        let fields = Arc::new(fields(schema, &|i| format.format_for(i)));
        let binary: Vec<bool> = (0..n).map(binary_at).collect();
        let types: Vec<SqlType> = schema.fields().iter().map(|f| SqlType::of_field(f)).collect();
        if self.entries.len() == Self::CAPACITY {
            self.entries.remove(0);
        }
        let mut encoded = bytes::BytesMut::new();
        let message = RowDescription::new(fields.iter().map(FieldDescription::from).collect());
        // Encoding into memory cannot fail; an empty description would only
        // make the client report a protocol error.
        let _ = PgWireBackendMessage::RowDescription(message).encode(&mut encoded);
        let row_description = encoded.freeze();
        let description = Arc::new(Description { schema: schema.clone(), binary, fields, types, row_description });
        self.entries.push(description.clone());
        description
    }
}

impl Conn {
    /// The row description of `schema` in `format`, from the cache.
    pub(crate) fn description(&self, schema: &SchemaRef, format: &Format) -> Arc<Description> {
        self.descriptions.lock().unwrap_or_else(|e| e.into_inner()).get(schema, format)
    }

    pub fn new(sql: Arc<SqlEngine>) -> Conn {
        Conn {
            sql,
            session: Default::default(),
            copy: Default::default(),
            last_active: std::sync::Mutex::new(std::time::Instant::now()),
            busy: Default::default(),
            descriptions: Default::default(),
        }
    }

    pub(crate) fn activity(&self) -> Busy<'_> {
        self.busy.store(true, std::sync::atomic::Ordering::Release);
        Busy(self)
    }
}

/// Marks the connection busy while a statement runs.
pub(crate) struct Busy<'a>(&'a Conn);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        *self.0.last_active.lock().unwrap_or_else(|e| e.into_inner()) = std::time::Instant::now();
        self.0.busy.store(false, std::sync::atomic::Ordering::Release);
    }
}

impl Conn {
    pub(crate) async fn session<C: ClientInfo>(
        &self,
        client: &C,
    ) -> PgWireResult<tokio::sync::MutexGuard<'_, Option<Session>>> {
        let mut guard = self.session.lock().await;
        if guard.is_none() {
            let meta = client.metadata();
            let user = meta.get(METADATA_USER).cloned().unwrap_or_else(|| "tessera".into());
            let db = meta.get(METADATA_DATABASE).cloned().unwrap_or_else(|| user.clone());
            let session = self.sql.session(&user, &db).map_err(to_pg_error)?;
            {
                let mut settings = session.info.settings.lock();
                for (k, v) in meta.iter() {
                    if !matches!(
                        k.as_str(),
                        "user" | "database" | "options" | "replication" | crate::handoff::HANDOFF_PARAM
                    ) {
                        settings.set_startup(k, v);
                    }
                }
                // `options` carries command-line style settings (PGOPTIONS='-c name=value').
                if let Some(options) = meta.get("options") {
                    for (k, v) in startup_options(options) {
                        settings.set_startup(&k, &v);
                    }
                }
            }
            *guard = Some(session);
        }
        Ok(guard)
    }
}

/// The `-c name=value` and `--name=value` pairs of a startup `options` string.
pub(crate) fn startup_options(options: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        let pair = match w {
            "-c" => words.next(),
            _ => w.strip_prefix("-c").or_else(|| w.strip_prefix("--")),
        };
        if let Some((k, v)) = pair.and_then(|p| p.split_once('=')) {
            out.push((k.replace('-', "_"), v.to_string()));
        }
    }
    out
}

fn status_response(before: TxnStatus, after: TxnStatus, tag: Tag) -> Response {
    match (before, after) {
        (TxnStatus::Idle, TxnStatus::InBlock) => Response::TransactionStart(tag),
        (TxnStatus::InBlock | TxnStatus::Failed, TxnStatus::Idle) => Response::TransactionEnd(tag),
        _ => Response::Execution(tag),
    }
}

fn tag_of(text: &str) -> Tag {
    // "INSERT 0 5" -> command "INSERT 0", rows 5; pgwire appends the row count.
    let mut parts: Vec<&str> = text.split(' ').collect();
    if parts.len() > 1
        && let Ok(n) = parts.last().unwrap().parse::<usize>()
        && !matches!(parts[0], "CREATE" | "DROP" | "ALTER")
    {
        parts.pop();
        return Tag::new(&parts.join(" ")).with_rows(n);
    }
    Tag::new(text)
}

fn rows_response(
    conn: &Conn,
    schema: &SchemaRef,
    batches: &[datafusion::arrow::array::RecordBatch],
    format: &Format,
    style: TextStyle,
) -> PgWireResult<QueryResponse> {
    let d = conn.descriptions.lock().unwrap_or_else(|e| e.into_inner()).get(schema, format);
    let mut rows = Vec::with_capacity(batches.iter().map(|b| b.num_rows()).sum());
    for b in batches {
        encode_batch(b, &d.binary, &d.types, style, &mut rows).map_err(to_pg_error)?;
    }
    Ok(QueryResponse::new(d.fields.clone(), stream::iter(rows.into_iter().map(Ok))))
}

/// A query response's row description and rows, sent now.
async fn send_rows<C>(client: &mut C, q: QueryResponse) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    use futures::{SinkExt, StreamExt};
    let fields: Vec<pgwire::messages::data::FieldDescription> = q.row_schema.iter().map(Into::into).collect();
    client.feed(PgWireBackendMessage::RowDescription(pgwire::messages::data::RowDescription::new(fields))).await?;
    let mut rows = q.data_rows;
    while let Some(row) = rows.next().await {
        client.feed(PgWireBackendMessage::DataRow(row?)).await?;
    }
    Ok(())
}

fn output_response(
    conn: &Conn,
    out: Output,
    before: TxnStatus,
    after: TxnStatus,
    format: &Format,
    style: TextStyle,
) -> PgWireResult<Response> {
    Ok(match out {
        Output::Rows { schema, batches, tag } => {
            let mut q = rows_response(conn, &schema, &batches, format, style)?;
            // "INSERT 0 2" -> command "INSERT 0"; pgwire appends the row count.
            let cmd = match tag.rsplit_once(' ') {
                Some((head, n)) if n.parse::<usize>().is_ok() => head.to_string(),
                _ => tag.clone(),
            };
            q.set_command_tag(&cmd);
            Response::Query(q)
        }
        Output::Command(t) => status_response(before, after, tag_of(&t)),
        Output::Empty => Response::EmptyQuery,
        Output::CopyOut { chunks, columns, rows: _, binary } => {
            let chunks: Vec<PgWireResult<CopyData>> =
                chunks.into_iter().map(|c| Ok(CopyData::new(bytes::Bytes::from(c)))).collect();
            Response::CopyOut(CopyResponse::new(i8::from(binary), columns, stream::iter(chunks)))
        }
        Output::CopyIn(_) => unreachable!("handled by the caller"),
    })
}

#[async_trait]
impl SimpleQueryHandler for Conn {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let _busy = self.activity();
        let mut guard = self.session(client).await?;
        let session = guard.as_mut().expect("session");
        let before = session.status();
        if let Some(result) = session.execute_simple_fast(query).await {
            let after = session.status();
            return match result {
                Ok(o) => Ok(vec![output_response(self, o, before, after, &Format::UnifiedText, session.text_style())?]),
                Err(e) => error_response(client, session, Vec::new(), e),
            };
        }
        let stmts = match parse_sql(query) {
            Ok(s) => s,
            Err(e) => {
                // A syntax error aborts the block, as any error does.
                session.fail_block();
                set_status(client, session.status());
                return Ok(vec![Response::Error(Box::new(error_info(e)))]);
            }
        };
        if stmts.is_empty() {
            return Ok(vec![Response::EmptyQuery]);
        }
        // Several statements run in implicit transaction blocks, as in PostgreSQL.
        let several = Session::runs_in_implicit_blocks(&stmts);
        let mut out = Vec::new();
        let mut failure = None;
        let zone_before = session.zone();
        let interval_before = session.text_style().interval;
        for stmt in stmts {
            // DEALLOCATE drops a protocol-level prepared statement (psycopg sends it).
            if let Statement::Deallocate { name, .. } = &stmt {
                let name = name.value.clone();
                if name.eq_ignore_ascii_case("all") {
                    out.push(Response::Execution(Tag::new("DEALLOCATE ALL")));
                } else {
                    client.portal_store().rm_statement(&name);
                    out.push(Response::Execution(Tag::new("DEALLOCATE")));
                }
                continue;
            }
            if several && let Err(e) = session.enter_implicit_block() {
                failure = Some(e);
                break;
            }
            let before = session.status();
            // Boxed: the general path's future is large, and the fast path
            // above should not pay for moving it.
            let result = match session.execute_control(&stmt).await {
                Some(r) => r,
                None => Box::pin(session.execute_timed(stmt, &[])).await,
            };
            let after = session.status();
            match result {
                Ok(Output::CopyIn(copy)) => {
                    let (columns, format) = (copy.columns.len(), i8::from(copy.format.binary));
                    *self.copy.lock().await = Some(copy);
                    out.push(Response::CopyIn(CopyResponse::new(format, columns, stream::empty())));
                    break;
                }
                // SHOW's command tag is "SHOW", without the row count pgwire
                // appends to a query's: its rows go out here, ahead of the
                // tag (only while no earlier response waits to be sent).
                Ok(Output::Rows { schema, batches, tag }) if tag == "SHOW" && out.is_empty() => {
                    let q = rows_response(self, &schema, &batches, &Format::UnifiedText, session.text_style())?;
                    send_rows(client, q).await?;
                    out.push(Response::Execution(Tag::new("SHOW")));
                }
                Ok(o) => out.push(output_response(self, o, before, after, &Format::UnifiedText, session.text_style())?),
                Err(e) => {
                    session.undo_implicit_block();
                    failure = Some(e);
                    break;
                }
            }
        }
        if several
            && failure.is_none()
            && let Err(e) = session.end_implicit().await
        {
            failure = Some(e);
        }
        let responses = match failure {
            Some(e) => error_response(client, session, out, e),
            None => Ok(out),
        };
        // TimeZone is reported when it changes, as PostgreSQL reports it:
        // drivers show timestamptz values in it.
        if session.zone() != zone_before {
            let name = session.info.settings.lock().get("TimeZone");
            let status = pgwire::messages::startup::ParameterStatus::new("TimeZone".into(), name);
            futures::SinkExt::feed(client, PgWireBackendMessage::ParameterStatus(status)).await?;
        }
        // So is IntervalStyle, by which drivers read interval text.
        if session.text_style().interval != interval_before {
            let name = session.info.settings.lock().get("IntervalStyle");
            let status = pgwire::messages::startup::ParameterStatus::new("IntervalStyle".into(), name);
            futures::SinkExt::feed(client, PgWireBackendMessage::ParameterStatus(status)).await?;
        }
        responses
    }
}

/// The answer to a simple query whose statement failed after `out`.
///
/// pgwire works out the ReadyForQuery status from the one the query began
/// in and its responses, and an error turns any status but idle into
/// "failed block". An error can end a block, though: a COMMIT that fails
/// (a serialization failure found at commit, a primary that changed) has
/// rolled the transaction back and left the session idle, as PostgreSQL
/// does. Reported as "failed", a driver would go on as if in a block (its
/// next transaction a SAVEPOINT, refused for ever). So when the session is
/// idle after the error but the client was told otherwise, and nothing was
/// answered before it, the error goes back as the query's error, after the
/// connection's status is made idle: its ReadyForQuery says so.
fn error_response<C: ClientInfo>(
    client: &mut C,
    session: &Session,
    mut out: Vec<Response>,
    e: SqlError,
) -> PgWireResult<Vec<Response>> {
    use pgwire::messages::response::TransactionStatus;
    let ends_block = session.status() == TxnStatus::Idle && client.transaction_status() != TransactionStatus::Idle;
    if ends_block && out.is_empty() {
        set_status(client, TxnStatus::Idle);
        return Err(to_pg_error(e));
    }
    out.push(Response::Error(Box::new(error_info(e))));
    Ok(out)
}

#[async_trait]
impl CopyHandler for Conn {
    async fn on_copy_data<C>(&self, _client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(c) = self.copy.lock().await.as_mut() {
            c.data.extend_from_slice(&data.data);
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(copy) = self.copy.lock().await.take() else {
            return Err(to_pg_error(SqlError::new(code::PROTOCOL_VIOLATION, "no COPY in progress")));
        };
        let mut guard = self.session.lock().await;
        let session = guard.as_mut().expect("session");
        let result = session.finish_copy(copy, Ok(())).await;
        set_status(client, session.status());
        match result {
            Ok(Output::Command(tag)) => {
                use futures::SinkExt;
                client.send(PgWireBackendMessage::CommandComplete(tag_of(&tag).into())).await?;
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(e) => Err(to_pg_error(e)),
        }
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: pgwire::messages::copy::CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let copy = self.copy.lock().await.take();
        let mut guard = self.session.lock().await;
        if let (Some(copy), Some(session)) = (copy, guard.as_mut()) {
            let r = session.finish_copy(copy, Err(fail.message.clone())).await;
            set_status(client, session.status());
            if let Err(e) = r {
                return to_pg_error(e);
            }
        }
        to_pg_error(SqlError::new(code::QUERY_CANCELED, format!("COPY from stdin failed: {}", fail.message)))
    }
}

pub(crate) fn set_status<C: ClientInfo>(client: &mut C, s: TxnStatus) {
    use pgwire::messages::response::TransactionStatus;
    client.set_transaction_status(match s {
        TxnStatus::Idle => TransactionStatus::Idle,
        TxnStatus::InBlock => TransactionStatus::Transaction,
        TxnStatus::Failed => TransactionStatus::Error,
    });
}

// ----- extended protocol -----

/// A parsed statement with what Describe reports about it.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub stmt: Option<Statement>,
    /// Arrow type each `$n` is bound as (None: text, converted by the plan).
    pub param_types: Vec<Option<DataType>>,
    pub param_oids: Vec<Type>,
    pub schema: Option<SchemaRef>,
    /// The statement bound for the fast path, when it is a fast-path statement.
    pub fast: Option<Arc<tessera_sql::fast::FastPlan>>,
}

/// The values of a Bind message's parameters, typed as the statement wants.
pub(crate) fn decode_params(
    prepared: &Prepared,
    raw: &[Option<bytes::Bytes>],
    format: &Format,
    zone: Zone,
) -> PgWireResult<Vec<ScalarValue>> {
    if raw.len() < prepared.param_oids.len() {
        let message = format!(
            "bind message supplies {} parameters, but prepared statement requires {}",
            raw.len(),
            prepared.param_oids.len()
        );
        return Err(to_pg_error(SqlError::new(code::PROTOCOL_VIOLATION, message)));
    }
    let mut params = Vec::with_capacity(raw.len());
    for (i, raw) in raw.iter().enumerate() {
        let ty = prepared.param_oids.get(i).cloned().unwrap_or(Type::TEXT);
        let want = prepared.param_types.get(i).cloned().flatten();
        let v = decode_param(i, raw.as_deref(), format.is_binary(i), &ty, want.as_ref(), zone).map_err(to_pg_error)?;
        params.push(v);
    }
    Ok(params)
}

/// Runs a bound prepared statement: on the fast path when it has a plan
/// there (and the plan does not decline), else on the general path.
pub(crate) async fn run_prepared(
    session: &mut Session,
    prepared: &Prepared,
    stmt: &Statement,
    params: &[ScalarValue],
) -> Result<Output, SqlError> {
    let fast = match prepared.fast.as_ref() {
        Some(plan) => session.execute_prepared_fast(stmt, plan, params).await,
        None => None,
    };
    match fast {
        Some(r) => r,
        None => Box::pin(session.execute_timed(stmt.clone(), params)).await,
    }
}

pub struct Parser {
    conn: Arc<Conn>,
}

impl Parser {
    pub fn new(conn: Arc<Conn>) -> Self {
        Parser { conn }
    }
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Prepared;

    async fn parse_sql<C>(&self, client: &C, sql: &str, types: &[Option<Type>]) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let mut guard = self.conn.session(client).await?;
        let session = guard.as_mut().expect("session");
        let mut stmts = parse_sql(sql).map_err(|e| {
            session.fail_block();
            to_pg_error(e)
        })?;
        if stmts.len() > 1 {
            return Err(to_pg_error(SqlError::syntax("cannot insert multiple commands into a prepared statement")));
        }
        let Some(stmt) = stmts.pop() else {
            return Ok(None);
        };
        let described = Box::pin(session.describe(&stmt)).await.map_err(to_pg_error)?;
        let n = described.params.keys().max().copied().unwrap_or(0).max(types.len());
        let mut param_types = Vec::with_capacity(n);
        let mut param_oids = Vec::with_capacity(n);
        for k in 1..=n {
            let declared = types.get(k - 1).cloned().flatten().filter(|t| t.oid() != 0);
            let inferred = described.params.get(&k).cloned();
            let dt = match (&declared, &inferred) {
                (Some(t), _) => SqlType::from_oid(t.oid()).map(|s| s.arrow_type()).or(inferred.clone()),
                (None, Some(d)) => Some(d.clone()),
                _ => None,
            };
            let oid = match (&declared, &dt) {
                (Some(t), _) => t.clone(),
                (None, _) if described.param_sql.contains_key(&k) => pg_type(described.param_sql[&k]),
                (None, Some(d)) => SqlType::from_arrow(d).map(pg_type).unwrap_or(Type::TEXT),
                _ => Type::TEXT,
            };
            param_types.push(dt);
            param_oids.push(oid);
        }
        let fast = session.prepare_fast(&stmt);
        Ok(Some(Prepared { stmt: Some(stmt), param_types, param_oids, schema: described.schema, fast }))
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(stmt.param_oids.clone())
    }

    fn get_result_schema(&self, stmt: &Prepared, format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        // Drivers such as libpq describe the portal before every execution
        // of a prepared statement: answer from the connection's cache.
        let format = format.cloned().unwrap_or(Format::UnifiedText);
        Ok(match &stmt.schema {
            Some(s) => {
                let d = self.conn.descriptions.lock().unwrap_or_else(|e| e.into_inner()).get(s, &format);
                d.fields.as_ref().clone()
            }
            None => vec![],
        })
    }
}

pub struct Extended {
    pub conn: Arc<Conn>,
    pub parser: Arc<Parser>,
}

#[async_trait]
impl ExtendedQueryHandler for Extended {
    type Statement = Prepared;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    async fn do_query<C>(&self, client: &mut C, portal: &Portal<Prepared>, _max_rows: usize) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let prepared = &portal.statement.statement;
        let Some(stmt) = prepared.stmt.as_ref() else { return Ok(Response::EmptyQuery) };
        let _busy = self.conn.activity();
        let mut guard = self.conn.session(client).await?;
        let session = guard.as_mut().expect("session");
        if let Err(e) = session.check_block_accepts(stmt) {
            return Err(to_pg_error(e));
        }
        let params = match decode_params(prepared, &portal.parameters, &portal.parameter_format, session.zone()) {
            Ok(params) => params,
            Err(e) => {
                // Like any error, a parameter that does not decode fails the
                // transaction block it was sent in.
                session.abort_statement();
                set_status(client, session.status());
                return Err(e);
            }
        };
        let before = session.status();
        let result = run_prepared(session, prepared, stmt, &params).await;
        let after = session.status();
        set_status(client, after);
        match result {
            Ok(Output::CopyIn(copy)) => {
                let (columns, format) = (copy.columns.len(), i8::from(copy.format.binary));
                *self.conn.copy.lock().await = Some(copy);
                Ok(Response::CopyIn(CopyResponse::new(format, columns, stream::empty())))
            }
            Ok(o) => output_response(&self.conn, o, before, after, &portal.result_column_format, session.text_style()),
            Err(e) => Err(to_pg_error(e)),
        }
    }
}

// ----- startup: trust -----

struct Trust;

#[async_trait]
impl AuthMechanism for Trust {
    async fn begin(&mut self, _c: &(dyn ClientInfo + Send + Sync)) -> PgWireResult<AuthState> {
        Ok(AuthState::Ok { final_message: None, identity: None })
    }
    async fn next(
        &mut self,
        _c: &(dyn ClientInfo + Send + Sync),
        _m: PasswordMessageFamily,
    ) -> PgWireResult<AuthState> {
        Err(PgWireError::NoAuthenticationInProgress)
    }
}

/// How clients prove who they are (`tessera start --auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// Trust every connection (the embedded default listens on loopback).
    Trust,
    /// SCRAM-SHA-256 for roles that have a password, trust for the others.
    Auto,
    /// SCRAM-SHA-256 for everyone; roles without a password cannot log in.
    Scram,
}

/// Salted passwords for SCRAM, from the catalog's roles.
pub struct RoleSecrets {
    pub sql: Arc<SqlEngine>,
}

impl std::fmt::Debug for RoleSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RoleSecrets")
    }
}

#[async_trait]
impl AuthSource for RoleSecrets {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or_default();
        let secret = self.sql.catalog.role(user).and_then(|r| r.password);
        match secret {
            Some(s) => Ok(Password::new(Some(s.salt), s.salted_password)),
            None => Err(to_pg_error(SqlError::new(
                code::INVALID_PASSWORD,
                format!("password authentication failed for user \"{user}\""),
            ))),
        }
    }
}

pub struct Startup {
    pub conn: Arc<Conn>,
    pub driver: AuthDriver<Arc<ServerParams>>,
    pub mode: AuthMode,
    /// Runs the SCRAM exchange when this connection needs one.
    pub sasl: SASLAuthStartupHandler<ServerParams>,
    /// The same offering channel binding (SCRAM-SHA-256-PLUS, bound to the
    /// node's certificate), for connections over TLS; PostgreSQL offers it
    /// on those only. None without a certificate.
    pub sasl_tls: Option<SASLAuthStartupHandler<ServerParams>>,
    pub scram: std::sync::atomic::AtomicBool,
    /// The cluster's secret: a session another node hands over
    /// (`handoff`) is admitted on its word, checked with it.
    pub handoff: Option<tessera_replication::ClusterSecret>,
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        use std::sync::atomic::Ordering::Relaxed;
        let sasl = match &self.sasl_tls {
            Some(sasl) if client.is_secure() => sasl,
            _ => &self.sasl,
        };
        if let PgWireFrontendMessage::Startup(ref startup) = message
            && let Some(token) = startup.parameters.get(crate::handoff::HANDOFF_PARAM)
        {
            // A session handed over by the node that served it: that node
            // authenticated the client; its token says so.
            let user = startup.parameters.get("user").map_or("", |u| u.as_str());
            let db = startup.parameters.get("database").map_or(user, |d| d.as_str());
            if !self.handoff.as_ref().is_some_and(|s| crate::handoff::token_is_good(s, user, db, token)) {
                return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                    "FATAL".into(),
                    "28000".into(),
                    format!(
                        "the handover of a session of role \"{user}\" was not vouched for by a node of this cluster"
                    ),
                ))));
            }
        } else if let PgWireFrontendMessage::Startup(ref startup) = message {
            let user = startup.parameters.get("user").cloned().unwrap_or_default();
            let has_password = self.conn.sql.catalog.role(&user).is_some_and(|r| r.password.is_some());
            let scram = match self.mode {
                AuthMode::Trust => false,
                AuthMode::Auto => has_password,
                AuthMode::Scram => true,
            };
            if scram {
                self.scram.store(true, Relaxed);
                return sasl.on_startup(client, message).await;
            }
        }
        if self.scram.load(Relaxed) {
            if let PgWireFrontendMessage::PasswordMessageFamily(_) = &message {
                // The session is created on first use, after authentication.
                return sasl.on_startup(client, message).await;
            }
            return Ok(());
        }
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            protocol_negotiation(client, startup).await?;
            save_startup_parameters_to_metadata(client, startup);
            // Refuse an unknown database or role before authenticating.
            drop(self.conn.session(client).await?);
            if let AuthOutcome::Authenticated { final_message, .. } =
                self.driver.begin_authentication(client, Box::new(Trust)).await?
            {
                self.driver.complete_authentication(client, final_message).await?;
            }
        }
        Ok(())
    }
}

/// The parameters reported at startup; `standby` for a session reading on
/// a secondary (reported as a hot standby, read-only, as PostgreSQL's are).
pub fn server_params(standby: bool) -> Arc<ServerParams> {
    let mut p = DefaultServerParameterProvider::default();
    p.in_hot_standby = standby;
    p.default_transaction_read_only = standby;
    p.server_version = tessera_sql::scope::settings::SERVER_VERSION.to_string();
    // What sessions actually use (see tessera_sql::session::settings).
    p.time_zone = "UTC".to_string();
    p.date_style = "ISO, MDY".to_string();
    p.interval_style = "postgres".to_string();
    p.search_path = "\"$user\", public".to_string();
    Arc::new(ServerParams(p))
}

/// The parameters reported at startup: pgwire's defaults, with the
/// `TimeZone` the client asked for (a startup parameter, or `-c
/// TimeZone=…` in `options`) when Tessera accepts it, as the session will
/// use it; drivers such as psycopg show timestamptz values in that zone.
#[derive(Debug)]
pub struct ServerParams(DefaultServerParameterProvider);

impl pgwire::api::auth::ServerParameterProvider for ServerParams {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<std::collections::HashMap<String, String>> {
        let mut params = self.0.server_parameters(client)?;
        let meta = client.metadata();
        let asked =
            meta.iter().find(|(k, _)| k.eq_ignore_ascii_case("timezone")).map(|(_, v)| v.clone()).or_else(|| {
                let options = meta.get("options")?;
                startup_options(options).into_iter().find(|(k, _)| k.eq_ignore_ascii_case("timezone")).map(|(_, v)| v)
            });
        if let Some(Ok((_, name))) = asked.map(|z| Zone::parse(&z)) {
            params.insert("TimeZone".into(), name);
        }
        Some(params)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn startup_options_are_read_like_postgres_does() {
        let got = super::startup_options("-c synchronous_commit=off  --statement-timeout=5s -cjit=off bogus");
        let want = [("synchronous_commit", "off"), ("statement_timeout", "5s"), ("jit", "off")];
        assert_eq!(got, want.map(|(k, v)| (k.to_string(), v.to_string())));
    }
}
