//! Where the partition manager puts replicas: the cluster map's nodes,
//! a new group's first voters, the manager group's size.

use std::collections::BTreeMap;

use tessera_cluster::ClusterMap;

use crate::types::{NodeId, NodeInfo};

/// Adds a node to a cluster map with its domains, address and liveness.
pub(crate) fn add_node(map: &mut ClusterMap, id: NodeId, info: &NodeInfo, live: bool) {
    map.add_node(id, &info.failure_domain, &info.upgrade_domain);
    if let Some(n) = map.nodes.get_mut(&id) {
        n.live = live;
        n.addr = info.rpc_addr.clone();
    }
}

/// The first voters of a new group: `replicas` of the founding nodes,
/// placed across failure domains (the lowest ids where domains tie), the
/// proposing node among them.
pub(crate) fn founding_voters(
    members: &BTreeMap<NodeId, NodeInfo>,
    me: NodeId,
    replicas: usize,
) -> BTreeMap<NodeId, NodeInfo> {
    if members.len() <= replicas {
        return members.clone();
    }
    let mut map = ClusterMap::default();
    for (id, info) in members {
        add_node(&mut map, *id, info, true);
    }
    let mut chosen = vec![me];
    if let Ok(more) = tessera_cluster::place(&map, replicas - 1, &[me]) {
        chosen.extend(more);
    }
    members.iter().filter(|(id, _)| chosen.contains(id)).map(|(id, i)| (*id, i.clone())).collect()
}

/// The manager group's size for a cluster of `nodes`: 3, or 5 once there
/// are 5 or more (fewer when the cluster is smaller).
pub(crate) fn manager_size(nodes: usize) -> usize {
    if nodes >= 5 { 5 } else { nodes.clamp(1, 3) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(fd: &str) -> NodeInfo {
        NodeInfo { failure_domain: fd.into(), ..Default::default() }
    }

    #[test]
    fn founding_voters_spread_over_failure_domains() {
        let members: BTreeMap<NodeId, NodeInfo> =
            [(1, info("a")), (2, info("a")), (3, info("b")), (4, info("c")), (5, info("c"))].into();
        let voters = founding_voters(&members, 1, 3);
        assert_eq!(voters.keys().copied().collect::<Vec<_>>(), vec![1, 3, 4]);
        // Fewer founders than replicas: all of them vote.
        let two: BTreeMap<NodeId, NodeInfo> = [(1, info("a")), (2, info("a"))].into();
        assert_eq!(founding_voters(&two, 1, 3).len(), 2);
    }
}
