//! Transaction blocks: BEGIN, COMMIT, ROLLBACK, savepoints, SET
//! TRANSACTION, the implicit block of a single statement, and what an
//! aborted block or a secondary accepts.

use datafusion::sql::sqlparser::ast::{Statement, TransactionAccessMode, TransactionMode};

use parking_lot::Mutex;
use tessera_engine::Isolation;

use crate::error::{Result, SqlError, code};
use crate::scope::settings::isolation_name;
use crate::session::{Block, OpenSavepoint, Output, Session, commit_txn, level};

impl Session {
    /// Whether the transaction block accepts `stmt`: an aborted block
    /// accepts only transaction control (25P02 otherwise). Checked before a
    /// statement's parameters are even decoded, as PostgreSQL does.
    pub fn check_block_accepts(&self, stmt: &Statement) -> Result<()> {
        let control =
            matches!(stmt, Statement::StartTransaction { .. } | Statement::Commit { .. } | Statement::Rollback { .. });
        match &self.block {
            Some(b) if b.failed && !control => {
                if let Some(why) = b.abandoned.as_ref().and_then(|a| a.lock().take()) {
                    return Err(why);
                }
                Err(SqlError::new(
                    code::IN_FAILED_TXN,
                    "current transaction is aborted, commands ignored until end of transaction block",
                ))
            }
            _ => Ok(()),
        }
    }

    /// Statements PostgreSQL never runs inside a transaction block,
    /// implicit ones included (25001): they cannot be undone with it.
    pub(crate) fn refuse_in_block(&self, stmt: &Statement) -> Result<()> {
        use datafusion::sql::sqlparser::ast::ObjectType;
        if self.block.is_none() {
            return Ok(());
        }
        let what = match stmt {
            Statement::Vacuum(_) => "VACUUM",
            Statement::CreateDatabase { .. } => "CREATE DATABASE",
            Statement::Drop { object_type: ObjectType::Database, .. } => "DROP DATABASE",
            _ => return Ok(()),
        };
        Err(SqlError::new(code::ACTIVE_TXN, format!("{what} cannot run inside a transaction block")))
    }

    /// Gives up the open transaction block from outside, because the node
    /// stopped serving its database as primary: its transaction is rolled
    /// back now, and the block stays open, aborted, until the client ends
    /// it. Its next statement reports `why` (a COMMIT too: the client must
    /// learn that nothing was committed, not read a ROLLBACK tag it may
    /// not check). Returns whether there was such a block.
    pub fn abandon_block(&mut self, why: SqlError) -> bool {
        let Some(block) = self.block.as_mut().filter(|b| !b.implicit) else { return false };
        if let Some(t) = self.txn.lock().take() {
            t.abort();
        }
        if !block.failed || block.abandoned.is_none() {
            block.abandoned = Some(Mutex::new(Some(why)));
        }
        block.failed = true;
        true
    }

    /// A transaction cannot be made read-write on a secondary (25006), as
    /// on a PostgreSQL hot standby.
    pub(crate) fn refuse_read_write(&self) -> Result<()> {
        if !self.on_secondary() {
            return Ok(());
        }
        Err(SqlError::new(code::READ_ONLY_TXN, "cannot set transaction read-write mode on a secondary")
            .with_hint("Connect without tessera.read_from = secondary to write.".to_string()))
    }

    pub(super) fn begin(&mut self, modes: &[TransactionMode], deferrable: Option<bool>) -> Result<Output> {
        if let Some(b) = self.block.as_mut().filter(|b| b.implicit) {
            // A BEGIN among several statements of a query string makes the
            // string's implicit block explicit, the statements before it
            // included, as in PostgreSQL; its modes apply as SET TRANSACTION.
            b.implicit = false;
            self.set_transaction(modes, false)?;
            return Ok(Output::Command("BEGIN".into()));
        }
        if self.block.is_some() {
            // PostgreSQL warns and carries on.
            tracing::debug!("BEGIN inside a transaction block ignored");
            return Ok(Output::Command("BEGIN".into()));
        }
        let mut isolation = self.next_isolation.take().unwrap_or_else(|| self.default_isolation());
        let mut read_only = self.info.settings.lock().hot().default_read_only;
        let deferrable =
            deferrable.unwrap_or_else(|| self.info.settings.lock().get("default_transaction_deferrable") == "on");
        for m in modes {
            match m {
                TransactionMode::IsolationLevel(l) => isolation = level(l),
                TransactionMode::AccessMode(TransactionAccessMode::ReadOnly) => read_only = true,
                TransactionMode::AccessMode(TransactionAccessMode::ReadWrite) => {
                    self.refuse_read_write()?;
                    read_only = false;
                }
            }
        }
        self.begin_block(isolation, read_only, deferrable)
    }

    /// Opens a transaction block with these characteristics.
    fn begin_block(&mut self, isolation: Isolation, read_only: bool, deferrable: bool) -> Result<Output> {
        if let Some(old) = self.txn.lock().take() {
            old.abort();
        }
        self.info.block_started.store(chrono::Utc::now().timestamp_micros(), std::sync::atomic::Ordering::Relaxed);
        self.block = Some(Block {
            implicit: false,
            isolation,
            read_only,
            deferrable,
            failed: false,
            queried: false,
            savepoints: Vec::new(),
            abandoned: None,
            temp_created: Vec::new(),
        });
        self.ensure_txn()?;
        Ok(Output::Command("BEGIN".into()))
    }

    pub(super) async fn commit(&mut self) -> Result<Output> {
        let out = self.commit_block().await;
        self.end_of_transaction()?;
        out
    }

    async fn commit_block(&mut self) -> Result<Output> {
        self.info.block_started.store(0, std::sync::atomic::Ordering::Relaxed);
        let Some(block) = self.block.take() else {
            // PostgreSQL warns "there is no transaction in progress".
            return Ok(Output::Command("COMMIT".into()));
        };
        let txn = self.txn.lock().take();
        if block.failed {
            if let Some(t) = txn {
                t.abort();
            }
            self.drop_rolled_back_temps(block.temp_created.into_iter().map(|(n, _)| n).collect());
            if let Some(why) = block.abandoned.as_ref().map(|a| a.lock().take()) {
                // Said once: if the statement that failed already told the
                // client, the COMMIT is answered as in any aborted block.
                return match why {
                    Some(why) => Err(why),
                    None => Ok(Output::Command("ROLLBACK".into())),
                };
            }
            return Ok(Output::Command("ROLLBACK".into()));
        }
        if let Some(t) = txn {
            commit_txn(t).await?;
        }
        Ok(Output::Command("COMMIT".into()))
    }

    /// COMMIT or ROLLBACK, and with AND CHAIN a new block with the ended
    /// one's isolation level and access mode (outside a block: 25P01).
    pub(super) async fn end_block(&mut self, commit: bool, chain: bool) -> Result<Output> {
        if !chain {
            return if commit { self.commit().await } else { Ok(self.rollback()) };
        }
        let what = if commit { "COMMIT" } else { "ROLLBACK" };
        let Some(block) = self.block.as_ref().filter(|b| !b.implicit) else {
            return Err(SqlError::new(
                code::NO_ACTIVE_TXN,
                format!("{what} AND CHAIN can only be used in transaction blocks"),
            ));
        };
        let (isolation, read_only, deferrable) = (block.isolation, block.read_only, block.deferrable);
        let out = if commit { self.commit().await? } else { self.rollback() };
        self.begin_block(isolation, read_only, deferrable)?;
        Ok(out)
    }

    pub(super) fn rollback(&mut self) -> Output {
        self.info.block_started.store(0, std::sync::atomic::Ordering::Relaxed);
        let created = self.block.take().map(|b| b.temp_created).unwrap_or_default();
        self.next_isolation = None;
        if let Some(t) = self.txn.lock().take() {
            t.abort();
        }
        self.drop_rolled_back_temps(created.into_iter().map(|(n, _)| n).collect());
        if let Err(e) = self.end_of_transaction() {
            tracing::warn!(error = %e.message, "ON COMMIT of a temporary table failed at ROLLBACK");
        }
        Output::Command("ROLLBACK".into())
    }

    /// Before each statement of a query string of several: with no block
    /// open (at the string's start, or after a COMMIT or ROLLBACK in it),
    /// an implicit one begins, as in PostgreSQL.
    pub fn enter_implicit_block(&mut self) -> Result<()> {
        if self.block.is_none() {
            self.begin(&[], None)?;
            if let Some(b) = &mut self.block {
                b.implicit = true;
            }
        }
        Ok(())
    }

    /// After a statement failed: an implicit block is rolled back, undoing
    /// the string's statements since its last COMMIT (an explicit block is
    /// left failed, as any error leaves it).
    pub fn undo_implicit_block(&mut self) {
        if self.block.as_ref().is_some_and(|b| b.implicit) {
            self.rollback();
        }
    }

    /// At the end of a query string of several: commits its implicit block.
    pub async fn end_implicit(&mut self) -> Result<()> {
        if self.block.as_ref().is_some_and(|b| b.implicit) {
            self.commit().await?;
        }
        Ok(())
    }

    /// Aborts whatever transaction is open (connection closing).
    pub fn reset(&mut self) {
        self.rollback();
    }

    pub(super) fn savepoint(&mut self, name: &str) -> Result<Output> {
        let Some(block) = self.block.as_mut().filter(|b| !b.implicit) else {
            return Err(SqlError::new(code::NO_ACTIVE_TXN, "SAVEPOINT can only be used in transaction blocks"));
        };
        let sp = self.txn.lock().as_mut().map(|t| t.savepoint()).expect("transaction");
        let read_only = block.read_only;
        block.savepoints.push(OpenSavepoint { name: name.to_lowercase(), engine: sp, read_only });
        Ok(Output::Command("SAVEPOINT".into()))
    }

    pub(super) fn release(&mut self, name: &str) -> Result<Output> {
        let Some(block) = self.block.as_mut().filter(|b| !b.implicit) else {
            return Err(SqlError::new(code::NO_ACTIVE_TXN, "RELEASE SAVEPOINT can only be used in transaction blocks"));
        };
        let name = name.to_lowercase();
        let Some(pos) = block.savepoints.iter().rposition(|s| s.name == name) else {
            return Err(SqlError::new(code::SAVEPOINT_EXCEPTION, format!("savepoint \"{name}\" does not exist")));
        };
        block.read_only = block.savepoints[pos].read_only;
        block.savepoints.truncate(pos);
        Ok(Output::Command("RELEASE".into()))
    }

    pub(super) fn rollback_to(&mut self, name: &str) -> Result<Output> {
        let Some(block) = self.block.as_mut().filter(|b| !b.implicit) else {
            return Err(SqlError::new(
                code::NO_ACTIVE_TXN,
                "ROLLBACK TO SAVEPOINT can only be used in transaction blocks",
            ));
        };
        if block.abandoned.is_some() {
            return Err(SqlError::new(
                code::IN_FAILED_TXN,
                "current transaction is aborted, commands ignored until end of transaction block",
            )
            .with_hint(
                "The transaction was rolled back when its database's primary moved; run ROLLBACK and start again."
                    .to_string(),
            ));
        }
        let name = name.to_lowercase();
        let Some(pos) = block.savepoints.iter().rposition(|s| s.name == name) else {
            block.failed = true;
            return Err(SqlError::new(code::SAVEPOINT_EXCEPTION, format!("savepoint \"{name}\" does not exist")));
        };
        let sp = block.savepoints[pos].engine;
        block.read_only = block.savepoints[pos].read_only;
        block.savepoints.truncate(pos + 1);
        block.failed = false;
        // Temporary tables created after the savepoint go with it.
        let (undone, kept): (Vec<_>, Vec<_>) =
            std::mem::take(&mut block.temp_created).into_iter().partition(|(_, d)| *d > pos);
        block.temp_created = kept;
        {
            let mut slot = self.txn.lock();
            match slot.as_mut() {
                Some(t) => t.rollback_to(sp)?,
                None => return Err(SqlError::internal("transaction block without a transaction")),
            }
        }
        self.drop_rolled_back_temps(undone.into_iter().map(|(n, _)| n).collect());
        Ok(Output::Command("ROLLBACK".into()))
    }

    /// Notes that a query runs in the open block (see [`Block::queried`]).
    pub(crate) fn note_query(&mut self) {
        if let Some(b) = &mut self.block {
            b.queried = true;
        }
    }

    /// Notes a temporary relation the open block created, which its
    /// rollback (or a rollback to an earlier savepoint) drops again.
    pub(crate) fn note_temp_created(&mut self, name: &str) {
        if let Some(b) = &mut self.block {
            b.temp_created.push((name.to_string(), b.savepoints.len()));
        }
    }

    /// Drops temporary tables a rolled-back block (or savepoint) created:
    /// in PostgreSQL, CREATE TEMP TABLE is undone with the transaction.
    fn drop_rolled_back_temps(&mut self, names: Vec<String>) {
        if names.is_empty() {
            return;
        }
        let catalog = self.shared.catalog.clone();
        {
            let _g = catalog.ddl_lock();
            for name in names {
                let Some(def) = catalog.table(&self.info.db, &self.temp.stored(&name)) else { continue };
                if let Err(e) = crate::ddl::drop_table_def(&catalog, &def, true) {
                    tracing::warn!(error = %e.message, table = %name, "dropping a rolled-back temporary table failed");
                }
            }
        }
        self.temp.sync(&catalog, &self.info.db);
    }

    /// SET TRANSACTION: applies to the current block, or the next one.
    pub(crate) fn set_transaction(&mut self, modes: &[TransactionMode], session: bool) -> Result<()> {
        let active = |msg: &str| Err(SqlError::new(code::ACTIVE_TXN, msg.to_string()));
        if !session && let Some(b) = &self.block {
            for m in modes {
                match m {
                    TransactionMode::IsolationLevel(l) if level(l) != b.isolation => {
                        if !b.savepoints.is_empty() {
                            return active("SET TRANSACTION ISOLATION LEVEL must not be called in a subtransaction");
                        }
                        if b.queried {
                            return active("SET TRANSACTION ISOLATION LEVEL must be called before any query");
                        }
                    }
                    TransactionMode::AccessMode(TransactionAccessMode::ReadWrite) if b.read_only => {
                        if !b.savepoints.is_empty() {
                            return active("cannot set transaction read-write mode inside a read-only transaction");
                        }
                        if b.queried {
                            return active("transaction read-write mode must be set before any query");
                        }
                    }
                    _ => {}
                }
            }
        }
        for m in modes {
            match m {
                TransactionMode::IsolationLevel(l) => {
                    let iso = level(l);
                    if self.block.as_ref().is_some_and(|b| b.isolation == iso) && !session {
                        continue;
                    }
                    if session {
                        self.info.settings.lock().set("default_transaction_isolation", isolation_name(iso))?;
                    } else if let Some(b) = &mut self.block {
                        b.isolation = iso;
                        // The engine transaction was begun with the old level; nothing has run yet
                        // in the usual pattern (BEGIN; SET TRANSACTION ...), so begin it again.
                        let mut slot = self.txn.lock();
                        if let Some(old) = slot.take() {
                            old.abort();
                        }
                        *slot = Some(self.begin_txn(iso)?);
                    } else {
                        self.next_isolation = Some(iso);
                    }
                }
                TransactionMode::AccessMode(mode) => {
                    let ro = matches!(mode, TransactionAccessMode::ReadOnly);
                    if session {
                        // SET SESSION CHARACTERISTICS: the default of the
                        // transactions to come, not the open one's mode.
                        let value = if ro { "on" } else { "off" };
                        self.info.settings.lock().set("default_transaction_read_only", value)?;
                        continue;
                    }
                    if !ro {
                        self.refuse_read_write()?;
                    }
                    if let Some(b) = &mut self.block {
                        b.read_only = ro;
                    }
                }
            }
        }
        Ok(())
    }
}
