//! Network partitions between cluster nodes, made by a proxy on every
//! directed link: node i reaches node j only through its own proxy to j
//! (`--rpc-route`), so cutting a link stops exactly that direction.
//!
//! A cut link drops its live connections and refuses new ones (a refused
//! connect looks, to the node, like an unreachable peer).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// A TCP proxy for one direction between two nodes.
pub(crate) struct Link {
    pub port: u16,
    cut: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl Link {
    /// Listens on a free port and forwards every connection to `target`.
    pub fn start(target: u16) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let live: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (c, l, s) = (cut.clone(), live.clone(), stop.clone());
        thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                if c.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                {
                    let mut live = l.lock().unwrap();
                    live.push(client.try_clone().unwrap());
                    live.push(server.try_clone().unwrap());
                }
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        Link { port, cut, live, stop }
    }

    /// Cuts the link: live connections break, new ones are refused.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for s in self.live.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cut();
        // Wake the accept loop so that it sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}

/// The links of a cluster of `n` nodes: `links[i][j]` carries node i's
/// calls to node j (None on the diagonal).
pub(crate) struct Network {
    pub links: Vec<Vec<Option<Link>>>,
}

impl Network {
    pub fn start(rpc: &[u16]) -> Network {
        let links =
            (0..rpc.len()).map(|i| (0..rpc.len()).map(|j| (i != j).then(|| Link::start(rpc[j]))).collect()).collect();
        Network { links }
    }

    /// `--rpc-route` for node i: every other node through i's own link.
    pub fn routes_of(&self, i: usize, rpc: &[u16]) -> String {
        (0..rpc.len())
            .filter(|&j| j != i)
            .map(|j| format!("127.0.0.1:{}=127.0.0.1:{}", rpc[j], self.links[i][j].as_ref().unwrap().port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Cuts node i off from every other node, both ways.
    pub fn isolate(&self, i: usize) {
        for j in 0..self.links.len() {
            if i != j {
                self.links[i][j].as_ref().unwrap().cut();
                self.links[j][i].as_ref().unwrap().cut();
            }
        }
    }

    pub fn heal_all(&self) {
        for link in self.links.iter().flatten().flatten() {
            link.heal();
        }
    }
}
