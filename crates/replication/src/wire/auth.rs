//! Authentication of peers, and the protocol version they speak.
//!
//! Every node of a cluster is given the same secret. Before anything else
//! the server sends a random challenge; the client answers with
//! `HMAC-SHA256(secret, "client" ‖ challenge)` and a challenge of its own,
//! which the server answers in turn with `HMAC-SHA256(secret, "server" ‖
//! challenge)`. Either side closes the connection when the other's proof is
//! wrong, so a process without the secret can neither join the cluster nor
//! pose as one of its nodes. (This authenticates peers; it does not encrypt
//! the traffic.)
//!
//! The challenge and the hello also carry the version of what nodes send
//! each other ([`PROTOCOL_VERSION`]). Nodes of different versions refuse
//! each other at the handshake, with a message that names both versions,
//! rather than failing later on a message one of them cannot decode.

use std::sync::Arc;

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

use super::frame::{Wire, receive, send};
use crate::error::{ReplicationError, Result};

/// The version of the messages nodes send each other: the requests and
/// replies of every subsystem (`wire::service`), the log entries and the
/// snapshots. Raise it with any change to their encoding.
pub const PROTOCOL_VERSION: u32 = 6;

/// The shared secret that admits a node to the cluster.
#[derive(Clone)]
pub struct ClusterSecret(Arc<hmac::Key>);

impl ClusterSecret {
    pub fn new(secret: &[u8]) -> ClusterSecret {
        ClusterSecret(Arc::new(hmac::Key::new(hmac::HMAC_SHA256, secret)))
    }

    pub(crate) fn prove(&self, role: &[u8], nonce: &[u8; 32]) -> Vec<u8> {
        let mut ctx = hmac::Context::with_key(&self.0);
        ctx.update(role);
        ctx.update(nonce);
        ctx.sign().as_ref().to_vec()
    }

    fn check(&self, role: &[u8], nonce: &[u8; 32], proof: &[u8]) -> bool {
        let mut msg = role.to_vec();
        msg.extend_from_slice(nonce);
        hmac::verify(&self.0, &msg, proof).is_ok()
    }

    /// Signs `message` for `purpose` (a node vouching for something to
    /// another node, outside the RPC handshake: a session it hands over).
    pub fn sign(&self, purpose: &[u8], message: &[u8]) -> Vec<u8> {
        let mut ctx = hmac::Context::with_key(&self.0);
        ctx.update(purpose);
        ctx.update(&[0]);
        ctx.update(message);
        ctx.sign().as_ref().to_vec()
    }

    /// Whether `proof` is [`ClusterSecret::sign`]'s for `purpose` and
    /// `message` (compared in constant time).
    pub fn verify(&self, purpose: &[u8], message: &[u8], proof: &[u8]) -> bool {
        let mut msg = purpose.to_vec();
        msg.push(0);
        msg.extend_from_slice(message);
        hmac::verify(&self.0, &msg, proof).is_ok()
    }
}

impl std::fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterSecret(..)")
    }
}

/// The messages of the handshake.
#[derive(Serialize, Deserialize)]
pub(crate) enum Handshake {
    Challenge { version: u32, nonce: [u8; 32] },
    Hello { node: u64, version: u32, challenge: [u8; 32], proof: Vec<u8> },
    Welcome { proof: Vec<u8> },
    Refused(String),
}

pub(crate) fn nonce() -> [u8; 32] {
    let mut n = [0u8; 32];
    SystemRandom::new().fill(&mut n).expect("the system random source works");
    n
}

/// Why nodes of two protocol versions cannot talk.
fn mismatch(theirs: u32, ours: u32) -> String {
    format!(
        "it speaks cluster protocol version {theirs} and this node version {ours}: every node of a cluster must run a release of the same protocol version"
    )
}

/// The server's side: challenges the peer, checks its proof and version,
/// proves itself in turn. Returns the peer's node id.
pub(crate) async fn accept_peer(wire: &mut Wire, secret: &ClusterSecret, version: u32) -> Result<u64> {
    let challenge = nonce();
    send(wire, &Handshake::Challenge { version, nonce: challenge }).await?;
    let Handshake::Hello { node, version: theirs_v, challenge: theirs, proof } = receive(wire).await? else {
        return Err(ReplicationError::Refused("expected a hello".into()));
    };
    if theirs_v != version {
        let why = mismatch(theirs_v, version);
        let _ = send(wire, &Handshake::Refused(why.clone())).await;
        return Err(ReplicationError::Refused(format!("node {node}: {why}")));
    }
    if !secret.check(b"client", &challenge, &proof) {
        let _ = send(wire, &Handshake::Refused("wrong cluster secret".into())).await;
        return Err(ReplicationError::Refused(format!("node {node} presented a wrong cluster secret")));
    }
    send(wire, &Handshake::Welcome { proof: secret.prove(b"server", &theirs) }).await?;
    Ok(node)
}

/// The client's side: answers the challenge of the server at `addr` as
/// node `me`, and checks the server's proof.
pub(crate) async fn introduce(
    wire: &mut Wire,
    addr: &str,
    me: u64,
    secret: &ClusterSecret,
    version: u32,
) -> Result<()> {
    let challenge = match receive(wire).await {
        Ok(Handshake::Challenge { version: theirs, nonce }) if theirs == version => nonce,
        Ok(Handshake::Challenge { version: theirs, .. }) => {
            return Err(ReplicationError::Refused(format!("{addr}: {}", mismatch(theirs, version))));
        }
        Ok(_) => return Err(ReplicationError::Refused("expected a challenge".into())),
        // A node of an older release, whose challenge this one cannot read.
        Err(ReplicationError::Codec(e)) => {
            return Err(ReplicationError::Refused(format!(
                "{addr}: its handshake cannot be read ({e}): it runs a release of another cluster protocol version than this node's ({version})"
            )));
        }
        Err(e) => return Err(e),
    };
    let ours = nonce();
    let proof = secret.prove(b"client", &challenge);
    send(wire, &Handshake::Hello { node: me, version, challenge: ours, proof }).await?;
    match receive(wire).await? {
        Handshake::Welcome { proof } if secret.check(b"server", &ours, &proof) => Ok(()),
        Handshake::Welcome { .. } => Err(ReplicationError::Refused(format!("{addr} does not know the cluster secret"))),
        Handshake::Refused(why) => Err(ReplicationError::Refused(format!("{addr} refused this node: {why}"))),
        _ => Err(ReplicationError::Refused("unexpected handshake message".into())),
    }
}
