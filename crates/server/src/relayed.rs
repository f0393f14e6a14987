//! The sessions a gateway relays, by their cancel keys. A client sends a
//! cancel request to the node it connected to; when that node relayed the
//! session to its database's primary, the request must follow the session
//! there. So the relay watches the first messages the primary sends for
//! its BackendKeyData (process id and secret key) and records where the
//! session runs until the relay ends.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// A cancel key: (process id, secret key).
pub(crate) type CancelKey = (i32, Vec<u8>);

/// Where each relayed session runs, by its cancel key; and where each
/// session handed over to a new primary went (`handoff`), by the key its
/// client still holds, with the key it has there.
#[derive(Default)]
pub(crate) struct Relayed(Mutex<HashMap<CancelKey, String>>, Mutex<HashMap<CancelKey, (String, CancelKey)>>);

impl Relayed {
    /// The PostgreSQL address of the primary a relayed session with this
    /// key runs on.
    pub(crate) fn target(&self, pid: i32, key: &[u8]) -> Option<String> {
        self.0.lock().get(&(pid, key.to_vec())).cloned()
    }

    /// Where a session handed over from this node runs, and its key there.
    pub(crate) fn moved(&self, pid: i32, key: &[u8]) -> Option<(String, CancelKey)> {
        self.1.lock().get(&(pid, key.to_vec())).cloned()
    }
}

/// A session handed over to another node, known by its old key until the
/// relay ends (dropped).
pub(crate) struct MovedKey {
    relayed: Arc<Relayed>,
    old: CancelKey,
}

impl MovedKey {
    pub(crate) fn new(relayed: Arc<Relayed>, old: CancelKey, addr: String, new: CancelKey) -> MovedKey {
        relayed.1.lock().insert(old.clone(), (addr, new));
        MovedKey { relayed, old }
    }
}

impl Drop for MovedKey {
    fn drop(&mut self) {
        self.relayed.1.lock().remove(&self.old);
    }
}

/// Sends a cancel request for the session with `key` to the PostgreSQL
/// listener at `addr` (best effort, as cancel requests are).
pub(crate) async fn send_cancel(addr: &str, key: &CancelKey) {
    use tokio::io::AsyncWriteExt;
    let mut request = ((12 + key.1.len()) as u32).to_be_bytes().to_vec();
    request.extend_from_slice(&80_877_102u32.to_be_bytes());
    request.extend_from_slice(&key.0.to_be_bytes());
    request.extend_from_slice(&key.1);
    let connect = tokio::net::TcpStream::connect(addr);
    if let Ok(Ok(mut stream)) = tokio::time::timeout(std::time::Duration::from_secs(2), connect).await {
        let _ = stream.write_all(&request).await;
        let _ = stream.shutdown().await;
    }
}

/// The largest message the watch looks through before giving up (the
/// messages before BackendKeyData are small: authentication, parameters).
const MAX_WATCHED: usize = 64 << 10;

/// Watches one relayed session's first messages from the primary; forgets
/// the session's key when dropped (the relay ended).
pub(crate) struct KeyWatch {
    relayed: Arc<Relayed>,
    addr: String,
    buf: Vec<u8>,
    done: bool,
    seen: Option<(i32, Vec<u8>)>,
}

impl KeyWatch {
    pub(crate) fn new(relayed: Arc<Relayed>, addr: &str) -> KeyWatch {
        KeyWatch { relayed, addr: addr.to_string(), buf: Vec::new(), done: false, seen: None }
    }

    /// Looks at bytes the primary sent, until the session's key has been
    /// seen (or the session started or failed without one).
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        if self.done {
            return;
        }
        self.buf.extend_from_slice(bytes);
        while self.buf.len() >= 5 {
            let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
            if !(4..=MAX_WATCHED).contains(&len) {
                return self.finish();
            }
            if self.buf.len() < 1 + len {
                return;
            }
            let kind = self.buf[0];
            if kind == b'K' && len >= 12 {
                let pid = i32::from_be_bytes([self.buf[5], self.buf[6], self.buf[7], self.buf[8]]);
                let key = self.buf[9..1 + len].to_vec();
                self.relayed.0.lock().insert((pid, key.clone()), self.addr.clone());
                self.seen = Some((pid, key));
                return self.finish();
            }
            // ReadyForQuery or an error: no key is coming.
            if kind == b'Z' || kind == b'E' {
                return self.finish();
            }
            self.buf.drain(..1 + len);
        }
    }

    fn finish(&mut self) {
        self.done = true;
        self.buf = Vec::new();
    }
}

impl Drop for KeyWatch {
    fn drop(&mut self) {
        if let Some(seen) = self.seen.take() {
            self.relayed.0.lock().remove(&seen);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![kind];
        out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn a_relayed_sessions_key_is_found_in_pieces_and_forgotten_at_its_end() {
        let relayed = Arc::new(Relayed::default());
        let mut watch = KeyWatch::new(relayed.clone(), "127.0.0.1:5433");
        let mut stream = message(b'R', &0u32.to_be_bytes());
        stream.extend(message(b'S', b"server_version\x0016\x00"));
        let mut key = 77i32.to_be_bytes().to_vec();
        key.extend_from_slice(&[1, 2, 3, 4]);
        stream.extend(message(b'K', &key));
        stream.extend(message(b'Z', b"I"));
        for piece in stream.chunks(3) {
            watch.feed(piece);
        }
        assert_eq!(relayed.target(77, &[1, 2, 3, 4]).as_deref(), Some("127.0.0.1:5433"));
        assert_eq!(relayed.target(77, &[1, 2, 3, 5]), None);
        drop(watch);
        assert_eq!(relayed.target(77, &[1, 2, 3, 4]), None);
    }

    #[test]
    fn a_session_refused_before_its_key_records_nothing() {
        let relayed = Arc::new(Relayed::default());
        let mut watch = KeyWatch::new(relayed.clone(), "a");
        watch.feed(&message(b'E', b"SFATAL\x00"));
        watch.feed(&message(b'K', &[0u8; 8]));
        assert!(relayed.0.lock().is_empty());
    }
}
