//! The engine's [`PartitionRoutes`] for the layer that runs transactions:
//! where each partition's primary is, as this node's [`Groups`] know it,
//! and a [`RemoteTxn`] on it when it is another node.

use std::time::{Duration, Instant};

use tessera_engine::EngineError;
use tessera_engine::remote::{PartSchema, PartitionRoutes, RemoteBegin, RemotePart};

use super::groups::Groups;
use crate::parts::messages::Begin;
use crate::parts::remote_txn::{RemoteTxn, wait_on};

type EResult<T> = tessera_engine::Result<T>;

/// How long a transaction waits to begin on a partition whose primary is
/// moving, or has none for the moment.
const FOLLOW_MOVE: Duration = Duration::from_secs(4);

impl Groups {
    /// Whether this node is handing the primary role of `group` over (and
    /// still holds its lease): a transaction then waits to begin where the
    /// role goes rather than be refused at its commit.
    fn handing_over(&self, group: crate::types::GroupId) -> bool {
        self.move_gate_of(group).is_some_and(|g| g.is_handing_over()) && self.holds_lease(group)
    }
}

impl PartitionRoutes for Groups {
    fn begin(&self, stream: u32, how: RemoteBegin) -> EResult<Option<Box<dyn RemotePart>>> {
        // A stream of no group of its own is the first group's, whose
        // primary serves the sessions that reach it.
        let Some(group) = self.group_of_stream(stream) else { return Ok(None) };
        let begin = Begin {
            isolation: how.isolation,
            durability: how.durability,
            deadline_ms: how.deadline.map(|d| d.saturating_duration_since(Instant::now()).as_millis() as u64),
        };
        let settled = match self.handing_over(group) {
            // The usual case, without a trip to the replication runtime.
            false => self.begin_remote(group, stream, begin),
            true => Err(EngineError::Unavailable(String::new())),
        };
        let settled = if settled.is_ok() {
            settled
        } else {
            // A partition whose role is moving, or between primaries, is
            // waited for.
            let groups = self.clone();
            wait_on(&self.runtime(), async move {
                let deadline = tokio::time::Instant::now() + FOLLOW_MOVE;
                loop {
                    if !groups.handing_over(group) {
                        match groups.begin_remote(group, stream, begin) {
                            Err(_) if tokio::time::Instant::now() < deadline => {}
                            begun => return begun,
                        }
                    } else if tokio::time::Instant::now() >= deadline {
                        return groups.begin_remote(group, stream, begin);
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })?
        };
        Ok(settled?.map(|calls| Box::new(RemoteTxn::new(calls, self.runtime())) as Box<dyn RemotePart>))
    }

    fn schema(&self, stream: u32, change: &PartSchema) -> EResult<bool> {
        let Some(group) = self.group_of_stream(stream) else { return Ok(false) };
        let (groups, change) = (self.clone(), change.clone());
        wait_on(&self.runtime(), async move { groups.change_schema(group, stream, change).await })?
    }

    fn leader_elsewhere(&self, stream: u32) -> bool {
        self.group_of_stream(stream).is_some_and(|group| !matches!(self.partition_primary(group), Ok(None)))
    }

    fn local_work(&self, stream: u32) -> Option<Box<dyn std::any::Any + Send>> {
        let group = self.group_of_stream(stream)?;
        Some(Box::new(self.move_gate_of(group)?.open_work()))
    }

    fn ready_here(&self, stream: u32) -> bool {
        let Some(group) = self.group_of_stream(stream) else { return true };
        self.commits_for(group)
    }
}
