//! The wire protocol's simple query flow, written out: tokio-postgres's `simple_query` does not say a statement's
//! command tag, takes no `COPY … FROM stdin` data and cannot give up on a stuck session.

use super::*;

/// A result as it came.
pub(super) enum Raw {
    Rows { cols: usize, tag: String, rows: Vec<Vec<Option<String>>> },
    Command { tag: String },
    Error { state: String, message: String },
    Timeout,
}

impl Raw {
    pub(super) fn into_block(self, ordered: bool) -> Block {
        match self {
            Raw::Rows { cols, tag, rows } => Block::Rows { cols, tag, body: Body::new(&rows, ordered) },
            Raw::Command { tag } => Block::Command { tag },
            Raw::Error { state, message } => Block::Error { state, message },
            Raw::Timeout => Block::Timeout,
        }
    }
}

pub(super) enum Failure {
    /// Neither finished nor cancelled in time.
    Stuck,
    Lost(String),
}

pub(super) enum ReadError {
    Timeout,
    Closed(String),
}

pub(super) struct Conn {
    pub(super) stream: TcpStream,
    pub(super) target: Target,
    /// Bytes read and not yet taken, from `pos` on.
    pub(super) buf: Vec<u8>,
    pub(super) pos: usize,
    /// The process id and secret key, for cancelling.
    pub(super) key: [u8; 8],
    pub(super) parameters: HashMap<String, String>,
}

/// A message: its type byte and body.
pub(super) fn message(tag: Option<u8>, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 5);
    out.extend(tag);
    out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

pub(super) fn cstr(body: &[u8]) -> (String, &[u8]) {
    let end = body.iter().position(|b| *b == 0).unwrap_or(body.len());
    (String::from_utf8_lossy(&body[..end]).into_owned(), body.get(end + 1..).unwrap_or(&[]))
}

/// The SQLSTATE and message of an ErrorResponse.
pub(super) fn error_fields(mut body: &[u8]) -> (String, String) {
    let (mut state, mut text) = (String::new(), String::new());
    while let Some((&field, rest)) = body.split_first() {
        if field == 0 {
            break;
        }
        let (value, rest) = cstr(rest);
        match field {
            b'C' => state = value,
            b'M' => text = value,
            _ => {}
        }
        body = rest;
    }
    (state, text)
}

impl Conn {
    pub(super) fn connect(target: &Target, dbname: &str) -> Result<Conn, String> {
        let stream = TcpStream::connect((target.host.as_str(), target.port)).map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut conn =
            Conn { stream, target: target.clone(), buf: Vec::new(), pos: 0, key: [0; 8], parameters: HashMap::new() };
        let mut body = 196_608u32.to_be_bytes().to_vec();
        for (key, value) in [
            ("user", target.user.as_str()),
            ("database", dbname),
            ("client_encoding", "UTF8"),
            ("application_name", "tessera_regress"),
        ] {
            body.extend_from_slice(key.as_bytes());
            body.push(0);
            body.extend_from_slice(value.as_bytes());
            body.push(0);
        }
        body.push(0);
        conn.send(&message(None, &body)).map_err(|e| format!("sending the startup message: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (tag, body) = conn.read(deadline).map_err(|e| match e {
                ReadError::Timeout => "no answer to the startup message".to_string(),
                ReadError::Closed(reason) => reason,
            })?;
            match tag {
                b'R' if body[..4] == [0, 0, 0, 0] => {}
                b'R' => return Err("the server asks for a password; this harness has none".to_string()),
                b'K' => conn.key.copy_from_slice(&body[..8]),
                b'S' => {
                    let (name, rest) = cstr(&body);
                    conn.parameters.insert(name, cstr(rest).0);
                }
                b'E' => return Err(error_fields(&body).1),
                b'Z' => return Ok(conn),
                _ => {}
            }
        }
    }

    pub(super) fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    pub(super) fn read(&mut self, deadline: Instant) -> Result<(u8, Vec<u8>), ReadError> {
        loop {
            let available = &self.buf[self.pos..];
            if available.len() >= 5 {
                let len = u32::from_be_bytes(available[1..5].try_into().unwrap()) as usize;
                if available.len() > len {
                    let tag = available[0];
                    let body = available[5..1 + len].to_vec();
                    self.pos += 1 + len;
                    return Ok((tag, body));
                }
            }
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(ReadError::Timeout);
            }
            self.stream.set_read_timeout(Some(deadline - now)).map_err(|e| ReadError::Closed(e.to_string()))?;
            let mut chunk = [0u8; 64 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(ReadError::Closed("the server closed the connection".to_string())),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(ReadError::Closed(e.to_string())),
            }
        }
    }

    /// Asks the server to cancel the running statement, on a connection of its own.
    pub(super) fn cancel(&self) {
        let mut body = 80_877_102u32.to_be_bytes().to_vec();
        body.extend_from_slice(&self.key);
        if let Ok(mut stream) = TcpStream::connect((self.target.host.as_str(), self.target.port)) {
            let _ = stream.write_all(&message(None, &body));
        }
    }

    /// Runs `sql` (one statement, or several joined by `;`) and returns each result; `copy` is sent if the server
    /// asks for COPY data.
    pub(super) fn query(&mut self, sql: &str, copy: Option<&str>, timeout: Duration) -> Result<Vec<Raw>, Failure> {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.send(&message(Some(b'Q'), &body)).map_err(|e| Failure::Lost(e.to_string()))?;
        let mut deadline = Instant::now() + timeout;
        let mut cancelled = false;
        let mut results = Vec::new();
        let mut rows: Option<(usize, Vec<Vec<Option<String>>>)> = None;
        loop {
            let (tag, body) = match self.read(deadline) {
                Ok(message) => message,
                Err(ReadError::Timeout) if !cancelled => {
                    self.cancel();
                    cancelled = true;
                    deadline = Instant::now() + CANCEL_GRACE;
                    continue;
                }
                Err(ReadError::Timeout) => return Err(Failure::Stuck),
                Err(ReadError::Closed(reason)) => return Err(Failure::Lost(reason)),
            };
            match tag {
                b'T' => rows = Some((u16::from_be_bytes([body[0], body[1]]) as usize, Vec::new())),
                b'D' => {
                    let count = u16::from_be_bytes([body[0], body[1]]) as usize;
                    let mut at = 2;
                    let mut row = Vec::with_capacity(count);
                    for _ in 0..count {
                        let len = i32::from_be_bytes(body[at..at + 4].try_into().unwrap());
                        at += 4;
                        if len < 0 {
                            row.push(None);
                        } else {
                            let len = len as usize;
                            row.push(Some(String::from_utf8_lossy(&body[at..at + len]).into_owned()));
                            at += len;
                        }
                    }
                    rows.get_or_insert((count, Vec::new())).1.push(row);
                }
                // COPY … TO stdout: each line a row of one column.
                b'H' => rows = Some((1, Vec::new())),
                b'd' => {
                    let line = String::from_utf8_lossy(&body);
                    let line = line.strip_suffix('\n').unwrap_or(&line).to_string();
                    rows.get_or_insert((1, Vec::new())).1.push(vec![Some(line)]);
                }
                b'G' => {
                    let sent = match copy {
                        Some(data) => {
                            let mut out = Vec::new();
                            for chunk in data.as_bytes().chunks(64 * 1024) {
                                out.extend(message(Some(b'd'), chunk));
                            }
                            out.extend(message(Some(b'c'), &[]));
                            self.send(&out)
                        }
                        None => self.send(&message(Some(b'f'), b"no COPY data in the file\0")),
                    };
                    sent.map_err(|e| Failure::Lost(e.to_string()))?;
                }
                b'C' => {
                    let tag = cstr(&body).0;
                    results.push(match rows.take() {
                        Some((cols, rows)) => Raw::Rows { cols, tag, rows },
                        None => Raw::Command { tag },
                    });
                }
                b'I' => results.push(Raw::Command { tag: "EMPTY".to_string() }),
                b'E' => {
                    rows = None;
                    let (state, message) = error_fields(&body);
                    results.push(Raw::Error { state, message });
                }
                b'Z' => return Ok(if cancelled { vec![Raw::Timeout] } else { results }),
                // Notices, parameter changes, notifications, copy-done.
                _ => {}
            }
        }
    }

    /// A statement whose rows do not matter, for setting up and tearing down.
    pub(super) fn simple(&mut self, sql: &str) -> Result<(), String> {
        match self.query(sql, None, Duration::from_secs(120)) {
            Ok(results) => match results.into_iter().find_map(|r| match r {
                Raw::Error { state, message } => Some(format!("{state} {message}")),
                Raw::Timeout => Some("timed out".to_string()),
                _ => None,
            }) {
                Some(error) => Err(error),
                None => Ok(()),
            },
            Err(Failure::Stuck) => Err("timed out".to_string()),
            Err(Failure::Lost(reason)) => Err(reason),
        }
    }
}
