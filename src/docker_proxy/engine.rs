//! One passed request to the engine's socket and its whole answer back: a new connection per
//! request (the console makes a few a minute), no body sent, the answer bounded in size and time.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::header::{HeaderMap, HOST};
use hyper::StatusCode;
use hyper_util::rt::TokioIo;

/// The longest a request to the engine may take, answer included (a stats sample takes ~2 s).
pub const ENGINE_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer passed back.
pub const ANSWER_MAX_BYTES: usize = 16 * 1024 * 1024;

/// The engine's whole answer.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// The engine behind its Unix socket.
#[derive(Debug, Clone)]
pub struct EngineSocket {
    path: PathBuf,
}

impl EngineSocket {
    pub fn new(path: &Path) -> EngineSocket {
        EngineSocket { path: path.to_path_buf() }
    }

    /// `method` `path_and_query` with no body, within [`ENGINE_TIMEOUT`]; the error in words.
    pub async fn send(&self, method: hyper::Method, path_and_query: &str) -> Result<Answer, String> {
        match tokio::time::timeout(ENGINE_TIMEOUT, self.exchange(method, path_and_query)).await {
            Ok(answer) => answer,
            Err(_) => Err("the Docker engine did not answer in time".to_string()),
        }
    }

    async fn exchange(&self, method: hyper::Method, path_and_query: &str) -> Result<Answer, String> {
        let stream = tokio::net::UnixStream::connect(&self.path)
            .await
            .map_err(|e| format!("cannot reach the Docker engine at {}: {e}", self.path.display()))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("the Docker engine's connection failed: {e}"))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(event = "docker_proxy_engine_connection", error = %e);
            }
        });
        let request = hyper::Request::builder()
            .method(method)
            .uri(path_and_query)
            .header(HOST, "docker")
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("the request cannot be sent: {e}"))?;
        let response =
            sender.send_request(request).await.map_err(|e| format!("the Docker engine's answer failed: {e}"))?;
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, ANSWER_MAX_BYTES)
            .collect()
            .await
            .map_err(|e| format!("the Docker engine's answer could not be read whole: {e}"))?
            .to_bytes();
        Ok(Answer { status: parts.status, headers: parts.headers, body })
    }
}
