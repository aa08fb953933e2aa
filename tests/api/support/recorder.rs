//! A listener that records what reaches it, for the tests that check what the console sends to an
//! address that is no sandbox service.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A tiny HTTP server on 127.0.0.1:0 that records every request head it is sent and answers
/// FastAPI's bare 404.
pub(crate) struct Recorder {
    pub(crate) url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    pub(crate) async fn start() -> Recorder {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://127.0.0.1:{}", listener.local_addr().expect("addr").port());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    seen.lock().expect("lock").push(String::from_utf8_lossy(&head).to_string());
                    let body = r#"{"detail":"Not Found"}"#;
                    let answer = format!(
                        "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(answer.as_bytes()).await;
                });
            }
        });
        Recorder { url, requests }
    }

    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("lock").clone()
    }

    /// Fails when any request that reached this address carried a token header or a token value.
    pub(crate) fn assert_no_token(&self, tokens: &[&str]) {
        for r in self.requests() {
            let lower = r.to_ascii_lowercase();
            assert!(!lower.contains("x-sandbox-token"), "a token header reached the listener:\n{r}");
            for t in tokens {
                assert!(!r.contains(t), "a token value reached the listener:\n{r}");
            }
        }
    }
}
