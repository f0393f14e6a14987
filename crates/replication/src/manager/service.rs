//! The server's side of the manager's traffic ([`ManagerService`]) and of
//! administration ([`AdminService`]).

use std::sync::Arc;

use futures::future::BoxFuture;
use openraft::async_runtime::WatchReceiver;

use super::admin::Administration;
use super::directory::{DirectoryMachine, DirectoryRaft};
use super::messages::{AdminMessage, AdminReply, ManagerMessage, ManagerReply, Reported};
use super::reconfigure::reconfigure_data_group;
use super::roster::Roster;
use super::view::{GroupView, ManagerGroup};
use crate::error::{ReplicationError, Result};
use crate::raft::groups::RaftGroups;
use crate::types::{GroupId, Load, NodeId, NodeInfo, SYSTEM_GROUP};
use crate::wire::{Answer, Service};

/// Answers [`ManagerMessage`]s: registrations and reports (on the
/// system group's primary and the manager's leader), and a data group's
/// view and membership steps (on its primary).
pub struct ManagerService {
    pub groups: Arc<RaftGroups>,
    pub roster: Arc<Roster>,
    pub directory: DirectoryRaft,
    pub machine: DirectoryMachine,
}

impl Service for ManagerService {
    type Message = ManagerMessage;

    fn serve(self: &Arc<Self>, _from: NodeId, message: ManagerMessage) -> BoxFuture<'static, Answer<ManagerReply>> {
        let this = self.clone();
        Box::pin(async move { this.answer(message).await.map_err(Into::into) })
    }
}

impl ManagerService {
    fn me(&self) -> NodeId {
        self.groups.settings.id
    }

    async fn answer(&self, message: ManagerMessage) -> Result<ManagerReply> {
        match message {
            ManagerMessage::Register { id, info, load } => self.register(id, info, load),
            ManagerMessage::Report { id, info, load, draining } => Ok(self.report(id, info, load, draining)),
            ManagerMessage::GroupView(group) => {
                let target = self.groups.hosted(group)?;
                let quiet = &self.groups.quiet;
                GroupView::of_leader(&target.raft, self.me(), &|n| quiet.answered(group, n))
                    .map(ManagerReply::GroupView)
            }
            ManagerMessage::Reconfigure { group, step } => {
                let target = self.primary_here(group)?;
                reconfigure_data_group(&self.groups.quiet, group, &target, step).await?;
                Ok(ManagerReply::Reconfigured)
            }
            ManagerMessage::Lead { group, to } => {
                self.primary_here(group)?;
                self.groups.hand_over(group, to).await?;
                Ok(ManagerReply::Done(format!("group {group}'s primary moves to node {to}")))
            }
        }
    }

    /// Group `group`'s Raft, if this node hosts it and is its primary.
    fn primary_here(&self, group: GroupId) -> Result<crate::raft::state_machine::Raft> {
        let target = self.groups.hosted(group)?;
        let me = self.me();
        if target.raft.metrics().borrow_watched().current_leader != Some(me) {
            return Err(ReplicationError::Refused(format!("node {me} is not group {group}'s primary")));
        }
        Ok(target.raft.clone())
    }

    /// A node registers with the system group's primary (or a node that
    /// names it).
    fn register(&self, from: NodeId, theirs: NodeInfo, load: Load) -> Result<ManagerReply> {
        let (me, info) = (self.me(), self.groups.settings.info.clone());
        let m = self.groups.hosted(SYSTEM_GROUP)?.raft.metrics().borrow_watched().clone();
        let membership = m.membership_config.membership();
        let member = membership.get_node(&from).is_some();
        let leads = m.state == openraft::ServerState::Leader && m.current_leader == Some(me);
        if leads {
            self.roster.reported(from, load);
            if !member {
                self.roster.heard(from, theirs);
            }
        }
        let primary = if leads {
            Some((me, info))
        } else {
            m.current_leader.and_then(|l| membership.get_node(&l).map(|i| (l, i.clone())))
        };
        Ok(ManagerReply::Registered { primary, member, by_primary: leads })
    }

    /// A node reports to the manager's leader (or a node that names it).
    fn report(&self, from: NodeId, theirs: NodeInfo, load: Load, draining: bool) -> ManagerReply {
        let (me, info) = (self.me(), self.groups.settings.info.clone());
        let roster = &self.roster;
        let m = self.directory.metrics().borrow_watched().clone();
        let membership = m.membership_config.membership();
        let leads = m.state == openraft::ServerState::Leader && m.current_leader == Some(me);
        if leads {
            roster.reported(from, load);
            roster.reported_draining(from, draining);
            roster.heard(from, theirs);
        }
        let leader = if leads {
            Some((me, info))
        } else {
            m.current_leader.and_then(|l| membership.get_node(&l).map(|i| (l, i.clone())))
        };
        ManagerReply::Reported(Reported {
            leader,
            member: membership.get_node(&from).is_some(),
            by_leader: leads,
            group: ManagerGroup::of(&m),
            groups: self.machine.directory().streams.into_iter().collect(),
            primaries: if leads { roster.group_primaries() } else { Vec::new() },
            draining: if leads { roster.draining_nodes(me) } else { Vec::new() },
            outside: if leads { roster.outside(from) } else { Vec::new() },
        })
    }
}

/// Answers [`AdminMessage`]s.
pub struct AdminService {
    pub(crate) admin: Administration,
}

impl Service for AdminService {
    type Message = AdminMessage;

    fn serve(self: &Arc<Self>, _from: NodeId, message: AdminMessage) -> BoxFuture<'static, Answer<AdminReply>> {
        let admin = self.admin.clone();
        Box::pin(async move {
            let reply = match message {
                AdminMessage::Status => admin.status().await.map(AdminReply::Status),
                AdminMessage::Drain(node) => admin.drain(node).await.map(AdminReply::Done),
                AdminMessage::Draining => admin.mark_draining().await.map(AdminReply::Done),
                AdminMessage::Groups => admin.groups().await.map(AdminReply::Groups),
                AdminMessage::SetReplicas(n) => admin.set_replicas(n).await.map(AdminReply::Done),
                AdminMessage::CreateGroup { group, streams, replicas } => {
                    admin.create_group(group, streams, replicas).await.map(AdminReply::Done)
                }
                AdminMessage::DropGroup(group) => admin.drop_group(group).await.map(AdminReply::Done),
            };
            reply.map_err(Into::into)
        })
    }
}
