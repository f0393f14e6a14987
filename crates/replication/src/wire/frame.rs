//! Framing: length-delimited frames (`tokio-util`'s codec) over TCP. A
//! handshake message is one postcard-encoded frame; after the handshake
//! every frame is an `Envelope`, `id ‖ body`, the body opaque here.

use futures::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;
use tokio_util::bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

use crate::error::{ReplicationError, Result};

/// Largest frame a peer may send (a batch of log entries).
pub const MAX_FRAME: usize = 256 << 20;

/// A call or its reply: `u64 id (little endian) ‖ body`. The body is
/// copied as it is, never encoded byte by byte.
pub(crate) struct Envelope {
    pub id: u64,
    pub body: Vec<u8>,
}

impl Envelope {
    pub fn encode(&self) -> Bytes {
        let mut frame = Vec::with_capacity(8 + self.body.len());
        frame.extend_from_slice(&self.id.to_le_bytes());
        frame.extend_from_slice(&self.body);
        Bytes::from(frame)
    }

    /// A received frame's id and body (the body shares the frame's bytes).
    pub fn decode(mut frame: BytesMut) -> Option<(u64, Bytes)> {
        let id = u64::from_le_bytes(frame.get(..8)?.try_into().ok()?);
        frame.advance(8);
        Some((id, frame.freeze()))
    }
}

/// A connection, framed.
pub(crate) type Wire = Framed<TcpStream, LengthDelimitedCodec>;

pub(crate) fn framed(socket: TcpStream) -> Wire {
    let _ = socket.set_nodelay(true);
    Framed::new(socket, LengthDelimitedCodec::builder().max_frame_length(MAX_FRAME).new_codec())
}

/// Sends one postcard-encoded message as a frame (the handshake's).
pub(crate) async fn send<T: Serialize>(wire: &mut Wire, msg: &T) -> Result<()> {
    let bytes = postcard::to_allocvec(msg).map_err(|e| ReplicationError::Codec(e.to_string()))?;
    wire.send(Bytes::from(bytes)).await.map_err(|e: std::io::Error| ReplicationError::Unreachable(e.to_string()))
}

/// Receives one postcard-encoded message (the handshake's).
pub(crate) async fn receive<T: for<'de> Deserialize<'de>>(wire: &mut Wire) -> Result<T> {
    match wire.next().await {
        Some(Ok(frame)) => postcard::from_bytes(&frame).map_err(|e| ReplicationError::Codec(e.to_string())),
        Some(Err(e)) => Err(ReplicationError::Unreachable(e.to_string())),
        None => Err(ReplicationError::Unreachable("connection closed".into())),
    }
}
