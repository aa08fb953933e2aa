//! How a call reaches a host and its whole answer comes back.
//!
//! Two ways, with the same answers and errors:
//!
//! - [`lean`]: a plain `http://` host through a keep-alive HTTP/1.1 connection of the calling
//!   thread, on hyper's connection API (no pool layer, no URL re-parsing, no proxy lookup). The
//!   console's workspace routes use it (see `SandboxdClient::with_thread_pools`).
//! - reqwest, for `https://` hosts, when a proxy is configured in the environment, and for a
//!   client built with its own `reqwest::Client`.
//!
//! Neither follows a redirect: the token header must not travel to another address.

use bytes::Bytes;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;

use super::error::SandboxdError;

/// A host's whole answer: status, headers and body.
pub(super) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Through reqwest: the answer read whole. A timeout set on the request covers the body too.
pub(super) async fn through_reqwest(request: reqwest::RequestBuilder) -> Result<Answer, SandboxdError> {
    let response = request.send().await.map_err(SandboxdError::from_transport)?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.bytes().await.map_err(SandboxdError::from_transport)?;
    Ok(Answer { status, headers, body })
}

/// Whether the environment names a proxy for plain HTTP (which reqwest honours and [`lean`]
/// would not).
/// The settings of every reqwest client of the sandboxd client but its pool's: no redirects
/// (reqwest would carry the token header to wherever one points), a 5 s connect timeout.
pub(super) fn http_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(std::time::Duration::from_secs(5))
        .user_agent(concat!("agenticos/", env!("CARGO_PKG_VERSION")))
}

/// A client that keeps no connection idle: each request goes out on a connection of its own
/// ([`http_builder`]'s settings otherwise), for a call that must not be sent on a connection the
/// host may be closing. One per process: it pools nothing, so nothing of it outlives the runtime
/// that sent a request.
pub(super) fn unpooled() -> reqwest::Client {
    static UNPOOLED: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    UNPOOLED
        .get_or_init(|| http_builder().pool_max_idle_per_host(0).build().unwrap_or_else(|_| reqwest::Client::new()))
        .clone()
}

pub(super) fn proxy_configured() -> bool {
    ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

pub(super) mod lean {
    //! A keep-alive HTTP/1.1 connection per thread and host.
    //!
    //! A connection is taken from the calling thread's idle list (or opened), carries one
    //! request, and goes back only after its answer was read whole; any error drops it, and so
    //! does an answer that may have come before a large body was sent whole ([`EARLY_ANSWER`]).
    //! An idle
    //! connection is used for at most [`IDLE_MAX`] (sandboxd's uvicorn closes one idle for 5 s),
    //! and a request the connection turned down unsent (the host closed it meanwhile) is sent
    //! once more on a new one.

    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::time::{Duration, Instant};

    use bytes::Bytes;
    use http_body_util::{BodyExt as _, Full};
    use hyper::client::conn::http1::{self, SendRequest};
    use hyper_util::rt::TokioIo;
    use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE, HOST, USER_AGENT};
    use reqwest::Method;
    use url::Url;

    use super::Answer;
    use crate::sandbox::hosts::error::error_chain;
    use crate::sandbox::hosts::sandboxd::client::error::SandboxdError;

    /// The longest an idle connection is kept, here and in the reqwest pool (sandboxd's uvicorn
    /// closes one idle for 5 s). 3 s short of that: on a loaded machine a request taken from the
    /// pool at 4 s was now and then written after uvicorn had closed its connection (a long
    /// `POST /run` in a full test run: "connection closed before message completed", a POST
    /// that cannot be sent again), since the time between taking a connection and writing on it
    /// is the scheduler's. It still happened once at 2 s (the cause not found: no keep-alive
    /// timer could fire by then), so a `POST /run` now takes no idle connection at all
    /// (`Request::fresh`).
    pub(in crate::sandbox::hosts::sandboxd::client) const IDLE_MAX: Duration = Duration::from_secs(2);
    /// The longest a new connection may take to open.
    const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
    /// Idle connections kept per host and thread.
    const IDLE_PER_HOST: usize = 8;

    type Sender = SendRequest<Full<Bytes>>;

    /// A request body at least this large may still be on its way when the host answers: sandboxd
    /// refuses a native write (409) before it reads the body, and its server stops reading at 64
    /// KiB until the answer is out. hyper then keeps the connection in a state that is never ready
    /// again (hyperium/hyper#4176): the next request on it waited for its whole timeout (a 504
    /// after 60 s, one test run in three). Such a connection is closed after an answer that is not
    /// a success, never kept.
    const EARLY_ANSWER: usize = 64 * 1024;

    /// A connection: the handle that sends on it and its task, closed by aborting it.
    struct Connection {
        sender: Sender,
        task: tokio::task::AbortHandle,
    }

    thread_local! {
        static IDLE: RefCell<HashMap<String, Vec<(Connection, Instant)>>> = RefCell::new(HashMap::new());
    }

    /// One request.
    pub(in crate::sandbox::hosts::sandboxd::client) struct Request<'a> {
        pub method: Method,
        /// An `http://` URL (see [`usable`]).
        pub url: &'a Url,
        /// The token header, if any (marked sensitive).
        pub token: Option<(&'static str, HeaderValue)>,
        pub content_type: Option<&'static str>,
        pub body: Bytes,
        pub timeout: Duration,
        /// On a new connection, never an idle one (kept idle afterwards like any other).
        pub fresh: bool,
    }

    /// `host:port` of an `http://` URL without user info: what [`send`] can reach.
    pub(in crate::sandbox::hosts::sandboxd::client) fn usable(url: &Url) -> Option<String> {
        if url.scheme() != "http" || !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        let host = match url.host()? {
            url::Host::Domain(d) => d.to_string(),
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => format!("[{ip}]"),
        };
        Some(format!("{host}:{}", url.port_or_known_default()?))
    }

    /// Sends `r` and reads its answer whole, all within `r.timeout`.
    pub(in crate::sandbox::hosts::sandboxd::client) async fn send(r: Request<'_>) -> Result<Answer, SandboxdError> {
        let authority = usable(r.url).ok_or_else(|| SandboxdError::Unreachable {
            reason: "the address is not a plain http:// address".to_owned(),
        })?;
        match tokio::time::timeout(r.timeout, exchange(&authority, &r)).await {
            Ok(answer) => answer,
            Err(_) => Err(SandboxdError::Timeout),
        }
    }

    async fn exchange(authority: &str, r: &Request<'_>) -> Result<Answer, SandboxdError> {
        let idle = if r.fresh { None } else { take_idle(authority) };
        let mut conn = match idle {
            Some(c) => c,
            None => connect(authority).await?,
        };
        // Ready once its connection has finished the previous answer (a task of this thread).
        if conn.sender.ready().await.is_err() {
            conn = connect(authority).await?;
        }
        let response = match conn.sender.try_send_request(build(authority, r)?).await {
            Ok(response) => response,
            Err(mut e) => {
                if e.take_message().is_none() {
                    return Err(transport(e.into_error()));
                }
                // Turned down before anything was written (the host closed the idle connection
                // meanwhile): once more, on a new connection.
                conn = connect(authority).await?;
                conn.sender.send_request(build(authority, r)?).await.map_err(transport)?
            }
        };
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_err(transport)?.to_bytes();
        if r.body.len() >= EARLY_ANSWER && !parts.status.is_success() {
            conn.task.abort();
        } else {
            put_idle(authority, conn);
        }
        Ok(Answer { status: parts.status, headers: parts.headers, body })
    }

    fn build(authority: &str, r: &Request<'_>) -> Result<hyper::Request<Full<Bytes>>, SandboxdError> {
        let path_and_query = match r.url.query() {
            Some(q) => format!("{}?{q}", r.url.path()),
            None => r.url.path().to_owned(),
        };
        let mut headers = HeaderMap::with_capacity(5);
        headers.insert(HOST, HeaderValue::from_str(authority).map_err(|_| invalid_address())?);
        headers.insert(USER_AGENT, HeaderValue::from_static(concat!("agenticos/", env!("CARGO_PKG_VERSION"))));
        if let Some((name, value)) = &r.token {
            headers.insert(*name, value.clone());
        }
        if let Some(ct) = r.content_type {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(ct));
        }
        let mut request = hyper::Request::builder()
            .method(r.method.clone())
            .uri(path_and_query)
            .body(Full::new(r.body.clone()))
            .map_err(|_| invalid_address())?;
        *request.headers_mut() = headers;
        Ok(request)
    }

    fn invalid_address() -> SandboxdError {
        SandboxdError::Unreachable { reason: "the address cannot be asked over HTTP".to_owned() }
    }

    fn transport(e: hyper::Error) -> SandboxdError {
        SandboxdError::Unreachable { reason: error_chain(&e) }
    }

    async fn connect(authority: &str) -> Result<Connection, SandboxdError> {
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(authority)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(SandboxdError::Unreachable { reason: format!("tcp connect error: {e}") }),
            Err(_) => return Err(SandboxdError::Timeout),
        };
        let _ = stream.set_nodelay(true);
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await.map_err(transport)?;
        // Driven by the calling runtime: on an actix worker, its own thread.
        let task = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(target: "sandboxd", error = %e, "a host connection ended");
            }
        })
        .abort_handle();
        Ok(Connection { sender, task })
    }

    fn take_idle(authority: &str) -> Option<Connection> {
        IDLE.with(|idle| {
            let mut idle = idle.borrow_mut();
            let list = idle.get_mut(authority)?;
            while let Some((conn, since)) = list.pop() {
                if since.elapsed() < IDLE_MAX && !conn.sender.is_closed() {
                    return Some(conn);
                }
            }
            None
        })
    }

    fn put_idle(authority: &str, conn: Connection) {
        if conn.sender.is_closed() {
            return;
        }
        IDLE.with(|idle| {
            let mut idle = idle.borrow_mut();
            let list = idle.entry(authority.to_owned()).or_default();
            list.retain(|(c, since)| since.elapsed() < IDLE_MAX && !c.sender.is_closed());
            if list.len() < IDLE_PER_HOST {
                list.push((conn, Instant::now()));
            }
        });
    }

    #[cfg(test)]
    mod tests {
        use super::{send, usable, Request};
        use bytes::Bytes;
        use reqwest::Method;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        use std::time::Duration;
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        use url::Url;

        /// A host that answers each connection's first request after its head, never reading a
        /// body: the first connection `409`, later ones `204`. Its sockets are held open.
        async fn answering_before_the_body() -> (String, Arc<AtomicUsize>) {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let address = listener.local_addr().expect("address").to_string();
            let accepted = Arc::new(AtomicUsize::new(0));
            let count = accepted.clone();
            tokio::spawn(async move {
                let mut held = Vec::new();
                while let Ok((mut socket, _)) = listener.accept().await {
                    let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                    let mut head = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => break,
                            Ok(k) => head.extend_from_slice(&chunk[..k]),
                        }
                    }
                    let answer: &[u8] = if n == 1 {
                        b"HTTP/1.1 409 Conflict\r\ncontent-length: 0\r\n\r\n"
                    } else {
                        b"HTTP/1.1 204 No Content\r\n\r\n"
                    };
                    let _ = socket.write_all(answer).await;
                    held.push(socket);
                }
            });
            (address, accepted)
        }

        #[tokio::test]
        async fn a_connection_answered_before_its_large_body_was_sent_is_not_used_again() {
            let (address, accepted) = answering_before_the_body().await;
            let url = Url::parse(&format!("http://{address}/sessions/s/files/write")).expect("url");
            let request = |body: Bytes| Request {
                method: Method::POST,
                url: &url,
                token: None,
                content_type: None,
                body,
                timeout: Duration::from_secs(5),
                fresh: false,
            };
            // More than the loopback's socket buffers hold, so most of it is unsent at the answer.
            let first = send(request(Bytes::from(vec![b'x'; 32 << 20]))).await.expect("answered");
            assert_eq!(first.status, 409);
            let second = send(request(Bytes::from_static(b"{}"))).await;
            assert_eq!(
                second.map(|a| a.status).ok(),
                Some(reqwest::StatusCode::NO_CONTENT),
                "the next request waited on the first connection"
            );
            assert_eq!(accepted.load(Ordering::SeqCst), 2, "the second request went on a connection of its own");
        }

        /// A keep-alive host answering every request `204`; counts the connections it accepted.
        async fn keep_alive_host() -> (String, Arc<AtomicUsize>) {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let address = listener.local_addr().expect("address").to_string();
            let accepted = Arc::new(AtomicUsize::new(0));
            let count = accepted.clone();
            tokio::spawn(async move {
                while let Ok((mut socket, _)) = listener.accept().await {
                    count.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(async move {
                        let mut seen = Vec::new();
                        let mut chunk = [0u8; 4096];
                        loop {
                            match socket.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(k) => seen.extend_from_slice(&chunk[..k]),
                            }
                            // Bodiless requests: one answer per head.
                            while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                                seen.drain(..end + 4);
                                if socket.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").await.is_err() {
                                    return;
                                }
                            }
                        }
                    });
                }
            });
            (address, accepted)
        }

        #[tokio::test]
        async fn a_fresh_request_never_takes_an_idle_connection() {
            let (address, accepted) = keep_alive_host().await;
            let url = Url::parse(&format!("http://{address}/sessions/s/run")).expect("url");
            let request = |fresh| Request {
                method: Method::GET,
                url: &url,
                token: None,
                content_type: None,
                body: Bytes::new(),
                timeout: Duration::from_secs(5),
                fresh,
            };
            for _ in 0..2 {
                assert_eq!(send(request(false)).await.expect("answered").status, 204);
            }
            assert_eq!(accepted.load(Ordering::SeqCst), 1, "kept alive: one connection for both");
            for expected in [2, 3] {
                assert_eq!(send(request(true)).await.expect("answered").status, 204);
                assert_eq!(accepted.load(Ordering::SeqCst), expected, "a fresh request opens its own");
            }
        }

        #[tokio::test]
        async fn the_unpooled_client_opens_a_connection_per_request() {
            let (address, accepted) = keep_alive_host().await;
            let url = format!("http://{address}/sessions/s/run");
            let pooled = crate::sandbox::hosts::sandboxd::client::SandboxdClient::default_http().expect("client");
            for _ in 0..2 {
                assert_eq!(pooled.get(&url).send().await.expect("answered").status(), 204);
            }
            assert_eq!(accepted.load(Ordering::SeqCst), 1, "the default client keeps its connection");
            for expected in [2, 3] {
                assert_eq!(super::super::unpooled().get(&url).send().await.expect("answered").status(), 204);
                assert_eq!(accepted.load(Ordering::SeqCst), expected, "the unpooled client opens one per request");
            }
        }

        #[test]
        fn only_plain_http_without_credentials_is_usable() {
            let u = |s: &str| usable(&Url::parse(s).unwrap());
            assert_eq!(u("http://127.0.0.1:8080/x").as_deref(), Some("127.0.0.1:8080"));
            assert_eq!(u("http://sandboxd/").as_deref(), Some("sandboxd:80"));
            assert_eq!(u("http://[::1]:9/").as_deref(), Some("[::1]:9"));
            assert_eq!(u("https://sandboxd:8443/"), None);
            assert_eq!(u("http://user:pw@sandboxd:8080/"), None);
        }
    }
}
