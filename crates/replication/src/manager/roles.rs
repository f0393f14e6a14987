//! The roles the status and the views show: a node's part in a data
//! group ([`ReplicaRole`]) and in the manager group ([`ManagerRole`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A node's replica of a data group, as its primary (or, off the primary,
/// the node itself) sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplicaRole {
    /// It leads the group.
    Primary,
    /// A voter that answers the primary.
    Secondary,
    /// A learner being built (catching up from the snapshot and the log).
    Building,
    /// A node outside the voters that holds a caught-up copy (a reader of
    /// the system group) or registered as able to take one.
    Spare,
    /// A voter that did not answer the primary lately.
    Unreachable,
    /// A spare that did not answer lately.
    UnreachableSpare,
}

impl ReplicaRole {
    /// The name the status and the SQL views show.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplicaRole::Primary => "primary",
            ReplicaRole::Secondary => "secondary",
            ReplicaRole::Building => "building",
            ReplicaRole::Spare => "spare",
            ReplicaRole::Unreachable => "unreachable",
            ReplicaRole::UnreachableSpare => "unreachable spare",
        }
    }

    /// It did not answer lately (a voter or a spare).
    pub fn is_unreachable(self) -> bool {
        matches!(self, ReplicaRole::Unreachable | ReplicaRole::UnreachableSpare)
    }
}

impl fmt::Display for ReplicaRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A node's part in the manager group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ManagerRole {
    Leader,
    Voter,
    Learner,
}

impl ManagerRole {
    /// The name the status and the SQL views show.
    pub fn as_str(self) -> &'static str {
        match self {
            ManagerRole::Leader => "leader",
            ManagerRole::Voter => "voter",
            ManagerRole::Learner => "learner",
        }
    }
}

impl fmt::Display for ManagerRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_show_by_their_names_and_pad_in_a_table() {
        assert_eq!(format!("{:<11}|", ReplicaRole::Spare), "spare      |");
        assert_eq!(ReplicaRole::UnreachableSpare.to_string(), "unreachable spare");
        assert!(ReplicaRole::UnreachableSpare.is_unreachable() && !ReplicaRole::Building.is_unreachable());
        assert_eq!(format!("{:<7}|", ManagerRole::Leader), "leader |");
    }
}
