//! The prepared-read lane: Bind, Describe, Execute and Sync of a prepared
//! fast-path SELECT, answered without pgwire's portal machinery.
//!
//! A driver runs a prepared statement as four messages (libpq's
//! `PQexecPrepared`: Bind, Describe portal, Execute, Sync), and pgwire
//! answers each through its general extended-query path: a `Portal` object
//! with its own lock stored in a map by name, a row-description built and
//! sent per Describe, a boxed row stream, a message object per row, a cancel
//! hook per Execute and the portal removed from the map again at Sync. In
//! the select-only profile that bookkeeping cost more server CPU than the
//! engine lookup itself. For the statements that dominate read-heavy OLTP
//! (a prepared SELECT the fast path can run, executed through the unnamed
//! portal) the lane keeps the bound portal in the connection loop instead,
//! answers Describe from the connection's cached, already-encoded row
//! description and writes the result rows straight into the output buffer.
//!
//! Anything else goes to pgwire exactly as before. The lane never holds
//! state pgwire could need: before it lets pgwire handle a message it hands
//! over its portal (`materialize`), so a Describe of the statement, a Close,
//! a named portal or an Execute with a row limit see the unnamed portal as if
//! pgwire had bound it. Errors take the ordinary path too: ErrorResponse,
//! then messages are skipped until Sync. Only read-only plans take the lane:
//! they never wait for another transaction, so there is nothing for a
//! CancelRequest to interrupt.

use std::sync::Arc;

use bytes::BufMut;
use futures::SinkExt;
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::stmt::StoredStatement;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, DEFAULT_NAME, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::NoData;
use pgwire::messages::extendedquery::{Bind, BindComplete};
use pgwire::messages::response::{CommandComplete, EmptyQueryResponse, ReadyForQuery};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::PgWireMessageServerCodec;
use tessera_sql::Output;
use tessera_sql::error::SqlError;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::Framed;

use crate::handler::{Conn, Prepared, decode_params, run_prepared, set_status, to_pg_error};
use crate::values::write_data_rows;

type Socket<S> = Framed<S, PgWireMessageServerCodec<Prepared>>;

/// What became of a message offered to the lane.
pub enum Offer {
    /// Answered.
    Taken,
    /// Not the lane's: pgwire handles it (the lane's portal, if any, is
    /// already in pgwire's store).
    Declined(PgWireFrontendMessage),
}

/// The lane's state for one connection.
pub struct Lane {
    conn: Arc<Conn>,
    /// The unnamed portal, when the lane bound it.
    portal: Option<LanePortal>,
    /// pgwire's store may hold an unnamed portal of its own (a message went
    /// to pgwire since the lane last removed it): binding one replaces it.
    store_has_unnamed: bool,
}

struct LanePortal {
    statement: Arc<StoredStatement<Prepared>>,
    bind: Bind,
    parameter_format: Format,
    result_format: Format,
    executed: bool,
}

fn unnamed(name: &Option<String>) -> bool {
    name.as_deref().unwrap_or(DEFAULT_NAME) == DEFAULT_NAME
}

impl Lane {
    pub fn new(conn: Arc<Conn>) -> Lane {
        Lane { conn, portal: None, store_has_unnamed: true }
    }

    /// Answers `msg` if it is the lane's, else hands it back for pgwire.
    /// An error is the statement's: the caller reports it as pgwire would
    /// (ErrorResponse, then skip to Sync).
    pub async fn offer<S>(&mut self, msg: PgWireFrontendMessage, socket: &mut Socket<S>) -> PgWireResult<Offer>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
    {
        if matches!(socket.state(), PgWireConnectionState::ReadyForQuery) {
            let taken = match &msg {
                PgWireFrontendMessage::Bind(bind) => match self.bindable(bind, socket) {
                    Some(statement) => {
                        let PgWireFrontendMessage::Bind(bind) = msg else { unreachable!("matched above") };
                        self.bind(statement, bind, socket);
                        return Ok(Offer::Taken);
                    }
                    None => false,
                },
                PgWireFrontendMessage::Describe(d) if d.target_type == b'P' && unnamed(&d.name) => {
                    self.describe(socket)
                }
                PgWireFrontendMessage::Execute(e) if e.max_rows == 0 && unnamed(&e.name) => {
                    match self.portal.as_ref() {
                        Some(p) if !p.executed => {
                            if let Err(e) = self.execute(socket).await {
                                // The error ends the portal's use until Sync;
                                // pgwire's Sync then closes the unnamed portal.
                                self.portal = None;
                                return Err(e);
                            }
                            true
                        }
                        _ => false,
                    }
                }
                PgWireFrontendMessage::Sync(_) if self.portal.is_some() => {
                    self.sync(socket).await?;
                    true
                }
                _ => false,
            };
            if taken {
                return Ok(Offer::Taken);
            }
        }
        self.materialize(socket).await?;
        self.store_has_unnamed = true;
        Ok(Offer::Declined(msg))
    }

    /// The statement `bind` binds, when the lane can run it: a prepared
    /// fast-path SELECT bound to the unnamed portal.
    fn bindable<S>(&self, bind: &Bind, socket: &mut Socket<S>) -> Option<Arc<StoredStatement<Prepared>>>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
    {
        if !unnamed(&bind.portal_name) {
            return None;
        }
        let name = bind.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let Some(Entry::Value(statement)) = socket.portal_store().get_statement(name) else { return None };
        let prepared = &statement.statement;
        let readable = prepared.fast.as_ref().is_some_and(|p| p.is_read_only());
        // A wrong parameter count is reported by the general path.
        (readable && bind.parameters.len() == prepared.param_oids.len()).then_some(statement)
    }

    /// Binds the unnamed portal to `statement`.
    fn bind<S>(&mut self, statement: Arc<StoredStatement<Prepared>>, bind: Bind, socket: &mut Socket<S>)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
    {
        if self.store_has_unnamed {
            socket.portal_store().rm_portal(DEFAULT_NAME);
            self.store_has_unnamed = false;
        }
        let parameter_format = format_of(&bind.parameter_format_codes);
        let result_format = format_of(&bind.result_column_format_codes);
        self.portal = Some(LanePortal { statement, bind, parameter_format, result_format, executed: false });
        put(socket, PgWireBackendMessage::BindComplete(BindComplete::new()));
    }

    /// Describes the lane's portal: its row description, from the cache.
    fn describe<S>(&mut self, socket: &mut Socket<S>) -> bool
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
    {
        let Some(p) = self.portal.as_ref() else { return false };
        match &p.statement.statement.schema {
            Some(schema) => {
                let d = self.conn.description(schema, &p.result_format);
                socket.write_buffer_mut().put_slice(&d.row_description);
            }
            None => put(socket, PgWireBackendMessage::NoData(NoData::new())),
        }
        true
    }

    /// Runs the lane's portal and writes its rows and command tag.
    async fn execute<S>(&mut self, socket: &mut Socket<S>) -> PgWireResult<()>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
    {
        let p = self.portal.as_mut().expect("the caller checked");
        p.executed = true;
        let prepared = &p.statement.statement;
        let Some(stmt) = prepared.stmt.as_ref() else {
            put(socket, PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()));
            return Ok(());
        };
        let _busy = self.conn.activity();
        let mut guard = self.conn.session(socket).await?;
        let session = guard.as_mut().expect("session");
        if let Err(e) = session.check_block_accepts(stmt) {
            return Err(to_pg_error(e));
        }
        let zone = session.zone();
        let session_style = session.text_style();
        let params = match decode_params(prepared, &p.bind.parameters, &p.parameter_format, zone) {
            Ok(params) => params,
            Err(e) => {
                session.abort_statement();
                set_status(socket, session.status());
                return Err(e);
            }
        };
        let result = run_prepared(session, prepared, stmt, &params).await;
        set_status(socket, session.status());
        drop(guard);
        match result.map_err(to_pg_error)? {
            Output::Rows { schema, batches, tag } => {
                let d = self.conn.description(&schema, &p.result_format);
                let out = socket.write_buffer_mut();
                for b in &batches {
                    write_data_rows(b, &d.binary, &d.types, session_style, out).map_err(to_pg_error)?;
                }
                put(socket, PgWireBackendMessage::CommandComplete(CommandComplete::new(tag)));
            }
            Output::Command(tag) => put(socket, PgWireBackendMessage::CommandComplete(CommandComplete::new(tag))),
            Output::Empty => put(socket, PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())),
            Output::CopyIn(_) | Output::CopyOut { .. } => {
                return Err(to_pg_error(SqlError::internal("a prepared read answered with COPY")));
            }
        }
        Ok(())
    }

    /// Ends the lane's portal and reports the transaction state.
    async fn sync<S>(&mut self, socket: &mut Socket<S>) -> PgWireResult<()>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
    {
        self.portal = None;
        let status = socket.transaction_status();
        put(socket, PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status)));
        // Into the corked socket, which sends it when the loop next reads.
        socket.flush().await.map_err(PgWireError::from)
    }

    /// Hands the lane's portal to pgwire's store, as pgwire would have
    /// bound it (and marked it run, if the lane ran it).
    async fn materialize<S>(&mut self, socket: &mut Socket<S>) -> PgWireResult<()>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
    {
        let Some(p) = self.portal.take() else { return Ok(()) };
        let portal = Portal::try_new(&p.bind, p.statement)?;
        if p.executed {
            *portal.state().lock().await = PortalExecutionState::Finished;
        }
        socket.portal_store().put_portal(Arc::new(portal));
        Ok(())
    }
}

/// The format a list of format codes asks for (as pgwire reads it).
fn format_of(codes: &[i16]) -> Format {
    match codes {
        [] => Format::UnifiedText,
        [one] => Format::from(*one),
        many => Format::Individual(many.to_vec()),
    }
}

/// Appends a backend message to the socket's write buffer (sent at the
/// next flush), without going through the sink.
fn put<S>(socket: &mut Socket<S>, message: PgWireBackendMessage) {
    // Encoding into memory cannot fail.
    let _ = message.encode(socket.write_buffer_mut());
}
