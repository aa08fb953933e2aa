//! A local SMTP sink for the password-reset tests: one listener on `127.0.0.1:0` for the whole
//! test binary, on a thread of its own (each test has its own runtime), that speaks just enough of
//! RFC 5321 (EHLO/HELO, MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP, QUIT) for a real client,
//! the console's lettre, to deliver to it, and keeps every message. Not a mail server: it relays
//! nothing. Tests tell their mail apart by recipient (each uses an address of its own).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One message as the sink received it.
#[derive(Debug, Clone)]
pub struct Mail {
    pub from: String,
    pub to: Vec<String>,
    /// Headers and body, CRLF line ends, dot-unstuffed.
    pub data: String,
}

impl Mail {
    /// The value of header `name` (case-insensitive), unfolded.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or_default().replace("\r\n ", " ").replace("\r\n\t", " ");
        head.lines().find_map(|l| {
            l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string())
        })
    }

    /// The body after the headers, decoded when it is quoted-printable (RFC 2045: soft line
    /// breaks joined, `=XX` octets restored).
    pub fn body(&self) -> String {
        let raw = self.data.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
        let qp = self.header("Content-Transfer-Encoding").is_some_and(|e| e.eq_ignore_ascii_case("quoted-printable"));
        if !qp {
            return raw;
        }
        let joined = raw.replace("=\r\n", "");
        let bytes = joined.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            let octet = (bytes[i] == b'=' && i + 2 < bytes.len())
                .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok())
                .flatten()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match octet {
                Some(b) => {
                    out.push(b);
                    i += 3;
                }
                None => {
                    out.push(bytes[i]);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

type Store = Arc<(Mutex<Vec<Mail>>, Condvar)>;

struct Sink {
    url: String,
    store: Store,
}

fn sink() -> &'static Sink {
    static SINK: OnceLock<Sink> = OnceLock::new();
    SINK.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("the SMTP sink binds");
        let url = format!("smtp://127.0.0.1:{}", listener.local_addr().expect("its address").port());
        let store: Store = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        let accepted = store.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let store = accepted.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &store);
                });
            }
        });
        Sink { url, store }
    })
}

/// The sink's address as `AGENTICOS_SMTP_URL` takes it (plain SMTP, no TLS).
pub fn url() -> &'static str {
    &sink().url
}

/// Every message delivered to `to` so far.
pub fn mails_to(to: &str) -> Vec<Mail> {
    let (mails, _) = &*sink().store;
    mails
        .lock()
        .expect("sink lock")
        .iter()
        .filter(|m| m.to.iter().any(|t| t.eq_ignore_ascii_case(to)))
        .cloned()
        .collect()
}

/// Waits (up to 30 s, woken by each delivery) until `count` messages were delivered to `to`.
pub async fn wait_for_mails(to: &str, count: usize) -> Vec<Mail> {
    let to = to.to_string();
    tokio::task::spawn_blocking(move || {
        let (mails, delivered) = &*sink().store;
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut guard = mails.lock().expect("sink lock");
        loop {
            let mine: Vec<Mail> =
                guard.iter().filter(|m| m.to.iter().any(|t| t.eq_ignore_ascii_case(&to))).cloned().collect();
            if mine.len() >= count {
                return mine;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "{} of {count} mails to {to} arrived within 30 s", mine.len());
            guard = delivered.wait_timeout(guard, left).expect("sink lock").0;
        }
    })
    .await
    .expect("the wait ran")
}

/// The address inside `<…>` of a MAIL FROM or RCPT TO argument.
fn address(arg: &str) -> String {
    let inner = arg.split_once('<').and_then(|(_, r)| r.split_once('>')).map(|(a, _)| a).unwrap_or(arg);
    inner.trim().to_ascii_lowercase()
}

fn serve(stream: TcpStream, store: &Store) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut out = stream.try_clone()?;
    let mut input = BufReader::new(stream);
    out.write_all(b"220 sink.test ESMTP test sink\r\n")?;
    let (mut from, mut to) = (String::new(), Vec::new());
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let command = line.trim_end().to_string();
        let upper = command.to_ascii_uppercase();
        let reply: &[u8] = if upper.starts_with("EHLO") {
            b"250-sink.test\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n"
        } else if upper.starts_with("HELO") || upper == "NOOP" {
            b"250 OK\r\n"
        } else if upper.starts_with("MAIL FROM:") {
            from = address(&command[10..]);
            to.clear();
            b"250 OK\r\n"
        } else if upper.starts_with("RCPT TO:") {
            to.push(address(&command[8..]));
            b"250 OK\r\n"
        } else if upper == "DATA" {
            out.write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n")?;
            let mut data = String::new();
            loop {
                line.clear();
                if input.read_line(&mut line)? == 0 {
                    return Ok(());
                }
                if line == ".\r\n" || line == ".\n" {
                    break;
                }
                data.push_str(line.strip_prefix('.').filter(|_| line.starts_with("..")).unwrap_or(&line));
            }
            let (mails, delivered) = &**store;
            mails.lock().expect("sink lock").push(Mail { from: from.clone(), to: std::mem::take(&mut to), data });
            delivered.notify_all();
            b"250 OK queued\r\n"
        } else if upper == "RSET" {
            (from, to) = (String::new(), Vec::new());
            b"250 OK\r\n"
        } else if upper == "QUIT" {
            out.write_all(b"221 Bye\r\n")?;
            return Ok(());
        } else {
            b"502 Command not implemented\r\n"
        };
        out.write_all(reply)?;
    }
}
