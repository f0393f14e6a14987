//! Feeds a data group's proposals (this node's commits, `commit_log`) to
//! its Raft, and decides their tickets when Raft answers.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;

use super::commit_log::{Outcome, Proposals};
use super::quiet::Quiet;
use super::state_machine::Raft;
use super::type_config::Command;
use crate::types::GroupId;

/// At most this many queued commits go to Raft in one batch.
const SUBMIT_BATCH: usize = 256;

/// Feeds proposals to Raft: whatever commits are queued when the loop
/// comes round go to Raft as one batch (one message to its core, one
/// append to the log), and a task per batch waits for their outcomes, so
/// many batches are in flight at once.
/// `quiet`: the node's quiet groups, this group's id and Raft's lease on
/// writes, for a group that may go quiet (its first write wakes it).
pub(crate) async fn submit_loop(
    raft: Raft,
    proposals: Arc<Proposals>,
    mut submitted: mpsc::UnboundedReceiver<Command>,
    quiet: Option<(Arc<Quiet>, GroupId, Duration)>,
) {
    let mut batch = Vec::new();
    while submitted.recv_many(&mut batch, SUBMIT_BATCH).await > 0 {
        if let Some((quiet, group, lease)) = &quiet {
            quiet.ready_to_write(*group, &raft, *lease).await;
        }
        let commands = std::mem::take(&mut batch);
        // (ticket, whole): one part of a split record decides nothing — the
        // record commits when all its parts have been applied.
        let tickets: Vec<(u64, bool)> = commands.iter().map(|c| (c.ticket, c.part.is_none())).collect();
        let unknown = |proposals: &Proposals, tickets: &[(u64, bool)], e: &dyn std::fmt::Display| {
            for (ticket, _) in tickets {
                proposals.tickets.decide(
                    *ticket,
                    Outcome::Unknown(format!("the primary changed while the commit waited for its quorum ({e})")),
                );
            }
        };
        match raft.client_write_many(commands).await {
            Ok(mut results) => {
                let proposals = proposals.clone();
                tokio::spawn(async move {
                    let mut decided = 0;
                    while let Some(result) = results.next().await {
                        let (ticket, whole) = tickets[decided];
                        decided += 1;
                        match result {
                            // Applying the entry decided the ticket already.
                            Ok(Ok(_)) if whole => {
                                proposals.tickets.decide(ticket, Outcome::Committed);
                            }
                            Ok(Ok(_)) => {}
                            Ok(Err(e)) => unknown(&proposals, &[(ticket, whole)], &e),
                            Err(e) => unknown(&proposals, &tickets[decided - 1..], &e),
                        }
                    }
                    // The stream ends early only after an error (decided above).
                });
            }
            Err(e) => unknown(&proposals, &tickets, &e),
        }
    }
}
