//! The node's clients, one per peer address, shared by every subsystem.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::auth::ClusterSecret;
use super::rpc::RpcClient;
use crate::types::NodeId;

/// The clients of a node, one per peer address, shared by Raft's
/// replication streams, the manager's traffic and bootstrap.
#[derive(Clone)]
pub struct Peers {
    me: NodeId,
    secret: ClusterSecret,
    clients: Arc<Mutex<HashMap<String, Arc<RpcClient>>>>,
    /// Node address → the address to dial instead (see `ReplicationConfig::routes`).
    routes: Arc<HashMap<String, String>>,
}

impl Peers {
    pub fn new(me: NodeId, secret: ClusterSecret) -> Peers {
        Peers { me, secret, clients: Arc::default(), routes: Arc::default() }
    }

    pub fn with_routes(mut self, routes: &[(String, String)]) -> Peers {
        self.routes = Arc::new(routes.iter().cloned().collect());
        self
    }

    /// This node's id, as its calls name it.
    pub fn me(&self) -> NodeId {
        self.me
    }

    /// Where to dial to reach the node that advertises `addr`.
    fn route(&self, addr: &str) -> String {
        self.routes.get(addr).cloned().unwrap_or_else(|| addr.to_string())
    }

    /// The shared client of the node that advertises `addr`.
    pub fn client(&self, addr: &str) -> Arc<RpcClient> {
        self.clients
            .lock()
            .entry(addr.to_string())
            .or_insert_with(|| Arc::new(RpcClient::new(self.route(addr), self.me, self.secret.clone())))
            .clone()
    }

    /// A client of its own (a connection of its own) to the node that
    /// advertises `addr`, shared with nobody.
    pub fn dedicated_client(&self, addr: &str) -> Arc<RpcClient> {
        Arc::new(RpcClient::new(self.route(addr), self.me, self.secret.clone()))
    }
}
