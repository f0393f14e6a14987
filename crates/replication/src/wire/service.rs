//! Services: what a node does with its peers' requests.
//!
//! Every request belongs to one subsystem of the node, which owns the
//! request's type (a [`Message`]), the type of its reply, and the
//! [`Service`] that answers it. On the wire a request is its
//! [`Subsystem`]'s tag (one byte) followed by the postcard-encoded message;
//! its reply is the postcard-encoded [`Answer`]: the reply, or the
//! [`Refusal`] that says why there is none. A node's listener hands each
//! request to its subsystem's service ([`Services`]); nothing here knows
//! what any message means.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio_util::bytes::Bytes;

use super::rpc::{Handler, RpcClient};
use crate::error::{ReplicationError, Result};
use crate::types::NodeId;

/// The subsystems that answer requests: a request's first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Subsystem {
    /// A data group's Raft, and who a node is (`raft::service`).
    Raft = 1,
    /// Quiet groups' confirmations (`raft::quiet`).
    Quiet = 2,
    /// The manager group's Raft (`manager::directory_link`).
    Directory = 3,
    /// The partition manager's own traffic (`manager::service`).
    Manager = 4,
    /// Administration: status, drains, the directory's changes (`manager::service`).
    Admin = 5,
    /// Transactions and schema changes on partitions (`parts::server`).
    Parts = 6,
    /// What the node as a whole answers (`node::service`).
    Node = 7,
}

/// A request of one subsystem, and the reply it gets.
pub trait Message: Serialize + DeserializeOwned + Send + 'static {
    const SUBSYSTEM: Subsystem;
    type Reply: Serialize + DeserializeOwned + Send + 'static;
}

/// Why a peer gave no reply, as it said it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

impl From<ReplicationError> for Refusal {
    fn from(e: ReplicationError) -> Refusal {
        Refusal(e.message())
    }
}

/// A peer's answer to a request: its reply, or its refusal.
pub type Answer<R> = std::result::Result<R, Refusal>;

/// What a subsystem does with its requests.
pub trait Service: Send + Sync + 'static {
    type Message: Message;

    /// Answers `message` from node `from`. Called for each request of a
    /// connection in the order they arrived; the futures it returns then
    /// run concurrently, so work done before returning (queueing the
    /// request for an ordered consumer) keeps the peer's order.
    fn serve(
        self: &Arc<Self>,
        from: NodeId,
        message: Self::Message,
    ) -> BoxFuture<'static, Answer<<Self::Message as Message>::Reply>>;
}

type Serve = Box<dyn Fn(NodeId, Bytes) -> BoxFuture<'static, Vec<u8>> + Send + Sync>;

/// A node's services, by subsystem: the handler of its RPC listener.
#[derive(Default)]
pub struct Services {
    by_tag: HashMap<u8, Serve>,
}

/// An answer that fits any request's reply type (a refusal's encoding
/// does not depend on it).
fn refused(why: String) -> Vec<u8> {
    encode(&Answer::<()>::Err(Refusal(why)))
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    postcard::to_allocvec(v).expect("replication messages always encode")
}

impl Services {
    /// Adds the service of a subsystem.
    pub fn with<S: Service>(mut self, service: Arc<S>) -> Services {
        let serve: Serve = Box::new(move |from, body| match postcard::from_bytes::<S::Message>(&body) {
            Ok(message) => {
                let answer = service.serve(from, message);
                Box::pin(async move { encode(&answer.await) })
            }
            Err(e) => Box::pin(std::future::ready(refused(format!("malformed request: {e}")))),
        });
        self.by_tag.insert(<S::Message as Message>::SUBSYSTEM as u8, serve);
        self
    }

    /// The RPC handler that hands each request to its subsystem's service.
    pub fn handler(self) -> Handler {
        let by_tag = self.by_tag;
        Arc::new(move |from, body: Bytes| match body.first().and_then(|tag| by_tag.get(tag)) {
            Some(serve) => serve(from, body.slice(1..)),
            None => Box::pin(std::future::ready(refused(format!(
                "no subsystem of this node answers requests tagged {:?}",
                body.first()
            )))),
        })
    }
}

/// A request as it travels: its subsystem's tag, then the message.
pub fn request<M: Message>(message: &M) -> Vec<u8> {
    postcard::to_extend(message, vec![M::SUBSYSTEM as u8]).expect("replication messages always encode")
}

/// A peer's answer to a request of type `M`, from its bytes.
pub fn answer<M: Message>(reply: &[u8]) -> Result<Answer<M::Reply>> {
    postcard::from_bytes(reply).map_err(|e| ReplicationError::Codec(e.to_string()))
}

/// Sends `message` to the peer `client` reaches and waits (at most
/// `timeout`) for its answer.
pub async fn call<M: Message>(client: &RpcClient, message: &M, timeout: Duration) -> Result<Answer<M::Reply>> {
    let reply = client.call(request(message), timeout).await?;
    answer::<M>(&reply)
}

#[cfg(test)]
mod tests {
    use tokio::net::TcpListener;

    use super::*;
    use crate::wire::{ClusterSecret, serve};

    #[derive(Serialize, Deserialize)]
    enum Echo {
        Say(String),
        Refuse,
    }

    impl Message for Echo {
        const SUBSYSTEM: Subsystem = Subsystem::Node;
        type Reply = String;
    }

    struct EchoService;

    impl Service for EchoService {
        type Message = Echo;

        fn serve(self: &Arc<Self>, from: NodeId, message: Echo) -> BoxFuture<'static, Answer<String>> {
            Box::pin(async move {
                match message {
                    Echo::Say(s) => Ok(format!("{from}: {s}")),
                    Echo::Refuse => Err(Refusal("no".into())),
                }
            })
        }
    }

    /// A message of a subsystem the server does not serve.
    #[derive(Serialize, Deserialize)]
    struct Stray;

    impl Message for Stray {
        const SUBSYSTEM: Subsystem = Subsystem::Parts;
        type Reply = ();
    }

    #[tokio::test]
    async fn each_request_reaches_its_subsystems_service() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let secret = ClusterSecret::new(b"k");
        let services = Services::default().with(Arc::new(EchoService));
        tokio::spawn(serve(listener, secret.clone(), services.handler()));
        let client = RpcClient::new(addr, 7, secret);
        let within = Duration::from_secs(5);
        assert_eq!(call(&client, &Echo::Say("hi".into()), within).await.unwrap(), Ok("7: hi".to_string()));
        assert_eq!(call(&client, &Echo::Refuse, within).await.unwrap(), Err(Refusal("no".into())));
        // No service for the subsystem, and a message its service cannot
        // read: refused, with the reason.
        let stray = call(&client, &Stray, within).await.unwrap().unwrap_err();
        assert!(stray.0.contains("no subsystem of this node"), "{stray}");
        let garbled = client.call(vec![Subsystem::Node as u8, 0xff, 0xff], within).await.unwrap();
        let refused = answer::<Echo>(&garbled).unwrap().unwrap_err();
        assert!(refused.0.starts_with("malformed request"), "{refused}");
    }
}
