//! The server's sockets and answers (issue 26): every accepted connection has `TCP_NODELAY`, so an
//! answer written in two parts (a compressed one: headers, then body) is not held back by Nagle's
//! algorithm until the client's delayed ACK (about 40 ms); and an answer too small to gain from
//! compression goes out as it is, in one write with its length, even to a client that accepts gzip.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{spawn_app, Backend};

/// The inode of this process's TCP socket whose local port is `local_port` and whose peer's port
/// is `peer_port` (`/proc/self/net/tcp` and `tcp6`: the ports are hexadecimal after the colon).
fn socket_inode(local_port: u16, peer_port: u16) -> Option<String> {
    let port_of = |address: &str| address.rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 9 && port_of(fields[1]) == Some(local_port) && port_of(fields[2]) == Some(peer_port) {
                return Some(fields[9].to_string());
            }
        }
    }
    None
}

/// `TCP_NODELAY` of the server's end of the connection whose client end is `client` (the app runs
/// in this process, so its accepted socket is one of this process's descriptors: found by its
/// inode, then duplicated through a pidfd of this process, so no raw descriptor is borrowed).
fn server_side_nodelay(server_port: u16, client: std::net::SocketAddr) -> Option<bool> {
    let inode = socket_inode(server_port, client.port())?;
    let link = format!("socket:[{inode}]");
    for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else { continue };
        if target.to_string_lossy() != link {
            continue;
        }
        let fd: i32 = entry.file_name().to_string_lossy().parse().ok()?;
        let me = rustix::process::pidfd_open(rustix::process::getpid(), rustix::process::PidfdFlags::empty()).ok()?;
        let copy = rustix::process::pidfd_getfd(&me, fd, rustix::process::PidfdGetfdFlags::empty()).ok()?;
        return socket2::SockRef::from(&copy).tcp_nodelay().ok();
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_accepted_connection_sends_at_once() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let mut client = tokio::net::TcpStream::connect(("127.0.0.1", app.port)).await.expect("connect");
    client
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: gzip\r\n\r\n")
        .await
        .expect("request");
    let mut answer = vec![0u8; 1024];
    let n = client.read(&mut answer).await.expect("answer");
    assert!(answer[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer[..n]));
    let mine = client.local_addr().expect("local address");
    assert_eq!(
        server_side_nodelay(app.port, mine),
        Some(true),
        "the server's socket of this connection has TCP_NODELAY"
    );
}

/// The head and body of one answer read off a raw connection (`Content-Length` framed or the
/// whole of a `Connection: close` answer).
async fn raw_get(port: u16, path: &str) -> (String, Vec<u8>) {
    let mut client = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n");
    client.write_all(request.as_bytes()).await.expect("request");
    let mut answer = Vec::new();
    client.read_to_end(&mut answer).await.expect("answer");
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
    (String::from_utf8_lossy(&answer[..split]).to_lowercase(), answer[split..].to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_answer_goes_out_as_it_is_and_a_large_one_compressed() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    // Small (`/healthz`, a few bytes): no encoding named, its length given, its bytes as they are.
    let (head, body) = raw_get(app.port, "/healthz").await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains("content-encoding"), "a small answer is not encoded, nor marked identity:\n{head}");
    assert!(head.contains(&format!("content-length: {}\r\n", body.len())), "{head}");
    assert!((body.len() as u64) < agenticos::web::middleware::COMPRESS_FROM);
    // Large (the first owner's sign-up page, a fresh console's first page): gzip, and it says so.
    let (head, body) = raw_get(app.port, "/setup").await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-encoding: gzip\r\n"), "{head}");
    assert!(head.contains("vary: accept-encoding"), "{head}");
    let body = if head.contains("transfer-encoding: chunked") { dechunk(&body) } else { body };
    let mut page = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&body[..]), &mut page).expect("gzip");
    assert!(page.len() as u64 >= agenticos::web::middleware::COMPRESS_FROM && page.contains("<form"), "{page}");
}

/// A chunked body's data.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = raw.windows(2).position(|w| w == b"\r\n").expect("a chunk size");
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..eol]).expect("hex").trim(), 16).expect("size");
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[eol + 2 + size + 2..];
    }
}
