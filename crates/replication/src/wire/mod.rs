//! The wire between nodes: authenticated, multiplexed request/response
//! over TCP (`rpc`, with its handshake in `auth` and its framing in
//! `frame`), the node's clients of its peers (`peers`), and the services
//! that give requests their meaning (`service`). This layer imports
//! `types` and `error` only.

pub mod auth;
pub mod frame;
pub mod peers;
pub mod rpc;
pub mod service;

pub use auth::{ClusterSecret, PROTOCOL_VERSION};
pub use peers::Peers;
pub use rpc::{Handler, PendingReply, Presence, RpcClient, serve, serve_tracked};
pub use service::{Answer, Message, Refusal, Service, Services, Subsystem, call};
