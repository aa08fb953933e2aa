//! `agenticos docker-proxy`: the one process that holds the Docker engine's socket when the
//! console reads the engine (docs/design.md §1; docs/operating.md, "The Docker proxy"). It passes the
//! read calls of `src/docker/` ([`allowlist`]) with the environment and command lines taken out
//! of their answers ([`redact`]), and refuses everything else with 403 and a JSON `message` (the
//! engine's own error shape, which the docker CLI and bollard show). Nothing is sent on a
//! refusal: the engine never sees it.

pub mod allowlist;
pub mod engine;
pub mod redact;

use std::path::{Path, PathBuf};

use actix_web::http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING, UPGRADE};
use actix_web::http::StatusCode;
use actix_web::web::Data;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer};

use allowlist::ReadCall;
use engine::{Answer, EngineSocket};

/// The engine's socket when `--engine` is not given.
pub const DEFAULT_ENGINE: &str = "/var/run/docker.sock";

/// Where the proxy listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// `host:port` (`127.0.0.1:0` picks a free port; the address is printed).
    Tcp(std::net::SocketAddr),
    /// A Unix socket path (`/run/agenticos/docker.sock` or `unix:///…`), created with mode 0660.
    Unix(PathBuf),
}

impl Listen {
    pub fn parse(text: &str) -> Result<Listen, String> {
        if let Some(path) = socket_path(text) {
            return Ok(Listen::Unix(path));
        }
        let text = text.strip_prefix("tcp://").unwrap_or(text);
        text.parse().map(Listen::Tcp).map_err(|_| {
            format!("--listen `{text}` is neither host:port (e.g. 127.0.0.1:2375) nor an absolute socket path")
        })
    }
}

/// `/path` or `unix:///path` as a path.
pub fn socket_path(text: &str) -> Option<PathBuf> {
    let path = text.strip_prefix("unix://").unwrap_or(text);
    path.starts_with('/').then(|| PathBuf::from(path))
}

/// Serves until stopped (SIGINT, SIGTERM), passing allowed calls to the engine at `engine`.
pub async fn serve(listen: Listen, engine: &Path) -> anyhow::Result<()> {
    let socket = Data::new(EngineSocket::new(engine));
    let app = {
        let socket = socket.clone();
        move || App::new().app_data(socket.clone()).default_service(actix_web::web::to(pass))
    };
    // actix stops on SIGINT and SIGTERM, finishing the requests under way.
    let server = HttpServer::new(app).workers(1);
    let (server, address) = match &listen {
        Listen::Tcp(address) => {
            let server = server.bind(address).map_err(|e| anyhow::anyhow!("cannot listen on {address}: {e}"))?;
            let bound = server.addrs().first().map_or(address.to_string(), |a| a.to_string());
            (server, format!("tcp://{bound}"))
        }
        Listen::Unix(path) => {
            remove_stale_socket(path)?;
            let server =
                server.bind_uds(path).map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", path.display()))?;
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))?;
            (server, format!("unix://{}", path.display()))
        }
    };
    let server = server.run();
    println!("docker-proxy is serving on {address}: the console's read calls pass to {}", engine.display());
    server.await?;
    Ok(())
}

/// An earlier run's socket file is removed; any other file at the path is left and refused.
fn remove_stale_socket(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::FileTypeExt as _;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => Ok(std::fs::remove_file(path)?),
        Ok(_) => anyhow::bail!("{} exists and is not a socket; choose another --listen path", path.display()),
        Err(_) => Ok(()),
    }
}

/// One request: refused (403), or passed to the engine and its answer sent back redacted.
async fn pass(request: HttpRequest, socket: Data<EngineSocket>) -> HttpResponse {
    let uri = request.uri();
    let method = request.method().as_str();
    let call = match judge(&request) {
        Ok(_) if has_body(&request) => {
            Err(format!("{method} {} is refused: a request with a body never passes", uri.path()))
        }
        judged => judged,
    };
    let call = match call {
        Ok(call) => call,
        Err(why) => {
            tracing::warn!(event = "docker_proxy_refused", method, path = uri.path(), "{why}");
            return message(StatusCode::FORBIDDEN, &why);
        }
    };
    let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str());
    let method = hyper::Method::from_bytes(method.as_bytes()).unwrap_or(hyper::Method::GET);
    match socket.send(method, path_and_query).await {
        Ok(answer) => respond(call, answer),
        Err(why) => {
            tracing::warn!(event = "docker_proxy_engine_failed", path = uri.path(), "{why}");
            message(StatusCode::BAD_GATEWAY, &why)
        }
    }
}

fn judge(request: &HttpRequest) -> Result<ReadCall, String> {
    let headers = request.headers();
    let connection_upgrade =
        headers.get_all(CONNECTION).any(|v| v.to_str().unwrap_or_default().to_ascii_lowercase().contains("upgrade"));
    let upgrade = headers.contains_key(UPGRADE) || connection_upgrade;
    let uri = request.uri();
    allowlist::judge(request.method().as_str(), uri.path(), uri.query(), upgrade)
}

fn has_body(request: &HttpRequest) -> bool {
    let length = request.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok());
    request.headers().contains_key(TRANSFER_ENCODING) || length.is_some_and(|l| l.trim() != "0")
}

/// The engine's answer, its headers but the connection's own, a successful body redacted.
fn respond(call: ReadCall, answer: Answer) -> HttpResponse {
    let status = StatusCode::from_u16(answer.status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut response = HttpResponse::build(status);
    let hop_by_hop = ["connection", "keep-alive", "transfer-encoding", "content-length", "upgrade", "trailer", "te"];
    for (name, value) in &answer.headers {
        if !hop_by_hop.contains(&name.as_str()) {
            response.append_header((name.as_str(), value.as_bytes()));
        }
    }
    let body = if answer.status.is_success() { redact::redacted(call, answer.body) } else { answer.body };
    response.body(body)
}

/// A refusal or failure as the engine shapes its errors: `{"message": "…"}`.
fn message(status: StatusCode, text: &str) -> HttpResponse {
    HttpResponse::build(status).json(serde_json::json!({ "message": format!("agenticos docker-proxy: {text}") }))
}
