//! The server's sockets (issue 26): every accepted connection has `TCP_NODELAY`, so an answer
//! written in two parts (a compressed one: headers, then body) is not held back by Nagle's
//! algorithm until the client's delayed ACK (about 40 ms).

use std::os::fd::BorrowedFd;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{spawn_app, Backend};

/// `TCP_NODELAY` of the server's end of the connection whose client end is `client` (the app runs
/// in this process, so its accepted socket is one of this process's descriptors).
fn server_side_nodelay(server_port: u16, client: std::net::SocketAddr) -> Option<bool> {
    for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        // SAFETY: the descriptor is only asked about (getsockname, getpeername, getsockopt) and
        // never closed; one closed meanwhile answers an error, which is skipped.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let socket = socket2::SockRef::from(&borrowed);
        let local = socket.local_addr().ok().and_then(|a| a.as_socket());
        let peer = socket.peer_addr().ok().and_then(|a| a.as_socket());
        if local.map(|a| a.port()) == Some(server_port) && peer == Some(client) {
            return socket.tcp_nodelay().ok();
        }
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
