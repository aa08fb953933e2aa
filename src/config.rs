//! The one place that reads the environment. Every variable, its default and its meaning is
//! listed in docs/operating.md; `Config::from_env` reports every problem at once.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use secrecy::SecretString;

/// The whole configuration of one process.
#[derive(Debug, Clone)]
pub struct Config {
    pub http: HttpConfig,
    pub database: DatabaseConfig,
    pub vault: VaultConfig,
    pub log: LogConfig,
    pub auth: AuthConfig,
    pub sandboxd: SandboxdConfig,
    pub docker: DockerConfig,
    pub snapshots: SnapshotConfig,
    pub metrics: MetricsConfig,
    pub mail: MailConfig,
}

/// Outgoing mail, for password-reset links only. Without `AGENTICOS_SMTP_URL` the console sends
/// none, and the forgotten-password page says to ask an owner or admin.
#[derive(Debug, Clone, Default)]
pub struct MailConfig {
    /// `AGENTICOS_SMTP_URL`: `smtp://[user:password@]host[:port]` (plain, port 25; add
    /// `?tls=required` for STARTTLS on 587, or `?tls=opportunistic`) or `smtps://…` (TLS, port
    /// 465). It may hold a password, so it is a secret.
    pub smtp_url: Option<SecretString>,
    /// `AGENTICOS_MAIL_FROM`: the sender, `Name <address>` or an address, default
    /// `agenticos <noreply@HOST>` with the public URL's host (`localhost` for an IP address).
    pub from: String,
}

/// The Docker engine the console reads (discovery, doctor, live usage); see docs/operating.md, "The Docker
/// engine". None of it runs when `host` is none.
#[derive(Debug, Clone, Default)]
pub struct DockerConfig {
    /// `AGENTICOS_DOCKER_SOCKET` (a socket path, written as `unix://<path>`), else `DOCKER_HOST`
    /// (`unix:///path`, `tcp://host:port` or `http://host:port`); neither set: switched off.
    pub host: Option<String>,
    /// `AGENTICOS_SANDBOXD_IMAGE`: the sandboxd image's name (no tag) the engine's containers are
    /// matched by, default `ghcr.io/vstorm-co/sandboxd`; set it where the image is mirrored.
    pub sandboxd_image: String,
}

/// Where workspace snapshots are stored: one object-store interface, a local folder or any
/// S3-compatible store.
#[derive(Debug, Clone)]
pub enum SnapshotStoreConfig {
    /// `AGENTICOS_SNAPSHOT_DIR`, default `snapshots/` in the data folder (the vault key file's
    /// folder, else `./data`): one replica.
    Local(PathBuf),
    /// `AGENTICOS_SNAPSHOT_S3_BUCKET` set: an S3-compatible store (several replicas share it).
    S3 {
        bucket: String,
        /// `AGENTICOS_SNAPSHOT_S3_ENDPOINT`: an S3-compatible server's address; none for AWS.
        endpoint: Option<String>,
        /// `AGENTICOS_SNAPSHOT_S3_REGION`, default `us-east-1`.
        region: String,
        /// `AGENTICOS_SNAPSHOT_S3_ACCESS_KEY_ID` and `AGENTICOS_SNAPSHOT_S3_SECRET_ACCESS_KEY`; when
        /// absent, the usual `AWS_*` environment and instance credentials.
        access_key_id: Option<String>,
        secret_access_key: Option<SecretString>,
        /// `AGENTICOS_SNAPSHOT_S3_PREFIX`: a folder inside the bucket, default none.
        prefix: Option<String>,
    },
}

#[derive(Debug, Clone)]
pub struct SnapshotConfig {
    pub store: SnapshotStoreConfig,
    /// `AGENTICOS_SNAPSHOT_CONNECT_TIMEOUT_SECONDS`: how long connecting to the object store may
    /// take, default 5.
    pub connect_timeout: std::time::Duration,
    /// `AGENTICOS_SNAPSHOT_REQUEST_TIMEOUT_SECONDS`: how long one request to the object store may
    /// take (retries included), default 30.
    pub request_timeout: std::time::Duration,
    /// `AGENTICOS_SNAPSHOT_TIMEOUT_SECONDS`: how long a whole snapshot (reading the workspace and
    /// storing its archive) may take, default 600.
    pub snapshot_timeout: std::time::Duration,
    /// Where an archive taken when a run finished waits for the object store: `pending/` in the
    /// snapshot folder (`AGENTICOS_SNAPSHOT_DIR`, also with an S3 store).
    pub pending_dir: PathBuf,
}

impl SnapshotConfig {
    /// `store` with the default deadlines, its pending archives in `pending/` of a local store's
    /// folder (else of the working folder's `snapshots/`).
    pub fn with_store(store: SnapshotStoreConfig) -> SnapshotConfig {
        let dir = match &store {
            SnapshotStoreConfig::Local(dir) => dir.clone(),
            SnapshotStoreConfig::S3 { .. } => PathBuf::from("./data/snapshots"),
        };
        SnapshotConfig {
            store,
            connect_timeout: std::time::Duration::from_secs(5),
            request_timeout: std::time::Duration::from_secs(30),
            snapshot_timeout: std::time::Duration::from_secs(600),
            pending_dir: dir.join("pending"),
        }
    }
}

/// `GET /metrics` (docs/operating.md, "Metrics"): off unless `AGENTICOS_METRICS=1`, and then never
/// public by accident: on its own address, or on the main one behind a bearer token.
#[derive(Debug, Clone, Default)]
pub struct MetricsConfig {
    /// `AGENTICOS_METRICS=1`.
    pub enabled: bool,
    /// `AGENTICOS_METRICS_BIND`: a second listener that serves only `/metrics` (no token there).
    pub bind: Option<SocketAddr>,
    /// `AGENTICOS_METRICS_TOKEN`: the bearer token `/metrics` on the main address asks for.
    pub token: Option<SecretString>,
}

#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// `AGENTICOS_BIND`, default `127.0.0.1:8000` (8080 belongs to sandboxd).
    pub bind: SocketAddr,
    /// `AGENTICOS_PUBLIC_URL`: where people reach the console; https turns on Secure cookies.
    pub public_url: url::Url,
    /// `AGENTICOS_WORKERS`: HTTP worker threads, default the number of cores.
    pub workers: Option<usize>,
}

impl HttpConfig {
    pub fn secure_cookies(&self) -> bool {
        self.public_url.scheme() == "https"
    }
}

#[derive(Debug, Clone)]
pub struct DatabaseConfig {
    /// `DATABASE_URL`, default `sqlite://./data/agenticos.db`.
    pub url: String,
    /// `AGENTICOS_DB_MAX_CONNECTIONS`, default 10.
    pub max_connections: u32,
}

#[derive(Debug, Clone)]
pub enum VaultKeySource {
    /// `AGENTICOS_VAULT_KEY`: 32 bytes, base64 (standard or url-safe) or 64 hex characters.
    Inline(SecretString),
    /// `AGENTICOS_VAULT_KEY_FILE`, default `./data/vault.key`; created with mode 0600 if missing.
    File(PathBuf),
}

#[derive(Debug, Clone)]
pub struct VaultConfig {
    pub key: VaultKeySource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone)]
pub struct LogConfig {
    /// `AGENTICOS_LOG`, an env-filter directive, default `info`.
    pub filter: String,
    /// `AGENTICOS_LOG_FORMAT`: `text` (default) or `json`.
    pub format: LogFormat,
}

#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// `AGENTICOS_SESSION_HOURS`: how long a sign-in lasts, default 168 (7 days).
    pub session_hours: u32,
    /// `AGENTICOS_LOGIN_MAX_FAILURES`: failures per account in the window before 429, default 5.
    pub login_max_failures: u32,
    /// `AGENTICOS_LOGIN_WINDOW_MINUTES`: the failure window, default 15.
    pub login_window_minutes: u32,
}

#[derive(Debug, Clone)]
pub struct SandboxdConfig {
    /// `SANDBOXD_TOKEN`: this deployment's own sandboxd token (compose hosts only), optional.
    pub token: Option<SecretString>,
    /// `AGENTICOS_CATALOG_DIR`, default `./catalog`.
    pub catalog_dir: PathBuf,
    /// `SANDBOXD_LOCAL_ADDRESSES`: this deployment's own sandboxd addresses (the compose files'),
    /// comma-separated, default `http://sandboxd:8080,http://localhost:8080`. Only these are asked
    /// for `/healthz` unprompted, and only these may be probed with `SANDBOXD_TOKEN`.
    pub local_addresses: Vec<String>,
    /// `AGENTICOS_STATE_LIMIT_BYTES`: the storage limit of one `state` workspace (files and empty
    /// folders), default 4 MiB.
    pub state_limit_bytes: u64,
    /// `OPERATION_RETENTION_DAYS`: how long the operation log keeps a row, default 30 (1 to 3650).
    pub operation_retention_days: u32,
    /// `AGENTICOS_RECORDING_DURABLE`: whether an operation is answered only once its row is
    /// committed (`true`, the default: nothing acknowledged is lost when the console dies).
    /// `false` answers before the commit and exists to measure what durability costs (the
    /// workspace-load bench); never turn it off in production.
    pub recording_durable: bool,
    /// `MANIFEST_GIT_ALLOW_PRIVATE`: whether the console fetches a manifest's `git_repo` from a
    /// host that resolves to a loopback, private, link-local or otherwise internal address
    /// (`true`/`false`, default false: such hosts are refused, against SSRF).
    pub git_allow_private: bool,
    /// `AGENTICOS_ORPHAN_MIN_AGE_SECONDS`: how long a host session must have gone without any
    /// activity (sandboxd: its idle time; Daytona: since its creation) before the orphan sweep may
    /// name or purge it, default 600 (0 to 30 days).
    pub orphan_min_age_seconds: u64,
    /// `AGENTICOS_HOST_CHECK_SECONDS`: how often every switched-on host is checked in the
    /// background (its last known state is what Home, the health report and the metrics read),
    /// default 30 (1 to 3600).
    pub host_check_seconds: u64,
}

/// Every problem found while reading the environment.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration:\n{}", .problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
pub struct ConfigError {
    pub problems: Vec<String>,
}

impl Config {
    pub fn from_env() -> Result<Config, ConfigError> {
        let vars: HashMap<String, String> = std::env::vars().collect();
        Self::from_vars(&vars)
    }

    /// Builds a configuration from a map of variables (tests build `Config` values this way).
    pub fn from_vars(vars: &HashMap<String, String>) -> Result<Config, ConfigError> {
        let mut problems = Vec::new();
        let get = |name: &str| vars.get(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());

        let bind = match get("AGENTICOS_BIND") {
            None => SocketAddr::from(([127, 0, 0, 1], 8000)),
            Some(v) => v.parse().unwrap_or_else(|_| {
                problems.push(format!("AGENTICOS_BIND: `{v}` is not an address like 127.0.0.1:8000"));
                SocketAddr::from(([127, 0, 0, 1], 8000))
            }),
        };
        let default_public = format!("http://{bind}");
        let public_raw = get("AGENTICOS_PUBLIC_URL").unwrap_or(default_public.clone());
        let public_url = match url::Url::parse(&public_raw) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => u,
            _ => {
                problems.push(format!("AGENTICOS_PUBLIC_URL: `{public_raw}` is not an http(s) URL"));
                url::Url::parse(&default_public)
                    .unwrap_or_else(|_| url::Url::parse("http://127.0.0.1:8000").expect("static url"))
            }
        };
        let workers = parse_opt::<usize>(&get, "AGENTICOS_WORKERS", 1..=256, &mut problems);

        let db_url = get("DATABASE_URL").unwrap_or_else(|| "sqlite://./data/agenticos.db".to_string());
        if !(db_url.starts_with("sqlite:") || db_url.starts_with("postgres://") || db_url.starts_with("postgresql://"))
        {
            problems.push("DATABASE_URL: must start with sqlite:, postgres:// or postgresql://".to_string());
        }
        let max_connections =
            parse_opt::<u32>(&get, "AGENTICOS_DB_MAX_CONNECTIONS", 1..=1000, &mut problems).unwrap_or(10);

        let key = match get("AGENTICOS_VAULT_KEY") {
            Some(v) => {
                if crate::vault::crypto::parse_master_key(&v).is_err() {
                    problems.push(
                        "AGENTICOS_VAULT_KEY: must be 32 bytes written as base64 or 64 hex characters".to_string(),
                    );
                }
                VaultKeySource::Inline(SecretString::from(v))
            }
            None => VaultKeySource::File(PathBuf::from(
                get("AGENTICOS_VAULT_KEY_FILE").unwrap_or_else(|| "./data/vault.key".into()),
            )),
        };

        let filter = get("AGENTICOS_LOG").unwrap_or_else(|| "info".into());
        let format = match get("AGENTICOS_LOG_FORMAT").as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(other) => {
                problems.push(format!("AGENTICOS_LOG_FORMAT: `{other}` is neither `text` nor `json`"));
                LogFormat::Text
            }
        };

        let session_hours =
            parse_opt::<u32>(&get, "AGENTICOS_SESSION_HOURS", 1..=24 * 90, &mut problems).unwrap_or(168);
        let login_max_failures =
            parse_opt::<u32>(&get, "AGENTICOS_LOGIN_MAX_FAILURES", 1..=1000, &mut problems).unwrap_or(5);
        let login_window_minutes =
            parse_opt::<u32>(&get, "AGENTICOS_LOGIN_WINDOW_MINUTES", 1..=24 * 60, &mut problems).unwrap_or(15);

        let token = get("SANDBOXD_TOKEN").map(SecretString::from);
        let catalog_dir = PathBuf::from(get("AGENTICOS_CATALOG_DIR").unwrap_or_else(|| "./catalog".into()));
        let state_limit_bytes =
            parse_opt::<u64>(&get, "AGENTICOS_STATE_LIMIT_BYTES", 1..=1024 * 1024 * 1024, &mut problems)
                .unwrap_or(4 * 1024 * 1024);
        let operation_retention_days =
            parse_opt::<u32>(&get, "OPERATION_RETENTION_DAYS", 1..=3650, &mut problems).unwrap_or(30);
        let orphan_min_age_seconds =
            parse_opt::<u64>(&get, "AGENTICOS_ORPHAN_MIN_AGE_SECONDS", 0..=30 * 86_400, &mut problems).unwrap_or(600);
        let host_check_seconds =
            parse_opt::<u64>(&get, "AGENTICOS_HOST_CHECK_SECONDS", 1..=3600, &mut problems).unwrap_or(30);
        let recording_durable = match get("AGENTICOS_RECORDING_DURABLE").as_deref().map(str::trim) {
            None | Some("" | "true" | "1") => true,
            Some("false" | "0") => false,
            Some(other) => {
                problems.push(format!("AGENTICOS_RECORDING_DURABLE: `{other}` is neither true nor false"));
                true
            }
        };
        let git_allow_private = match get("MANIFEST_GIT_ALLOW_PRIVATE").as_deref().map(str::trim) {
            None | Some("" | "false" | "0") => false,
            Some("true" | "1") => true,
            Some(other) => {
                problems.push(format!("MANIFEST_GIT_ALLOW_PRIVATE: `{other}` is neither true nor false"));
                false
            }
        };
        let local_addresses: Vec<String> = get("SANDBOXD_LOCAL_ADDRESSES")
            .unwrap_or_else(|| "http://sandboxd:8080,http://localhost:8080".into())
            .split(',')
            .map(|a| a.trim().trim_end_matches('/').to_string())
            .filter(|a| !a.is_empty())
            .collect();
        for a in &local_addresses {
            if crate::sandbox::connections::address::parse(a).is_err() {
                problems.push(format!("SANDBOXD_LOCAL_ADDRESSES: `{a}` is not an http(s) address"));
            }
        }

        let sandboxd_image =
            get("AGENTICOS_SANDBOXD_IMAGE").unwrap_or_else(|| crate::catalog::repo::SANDBOXD_IMAGE.to_string());
        let last_segment = sandboxd_image.rsplit('/').next().unwrap_or_default();
        if sandboxd_image.contains(['@', ' ']) || last_segment.contains(':') || last_segment.is_empty() {
            problems.push(format!("AGENTICOS_SANDBOXD_IMAGE: `{sandboxd_image}` must be an image name without a tag"));
        }
        let docker = DockerConfig { host: docker_host(&get, &mut problems), sandboxd_image };
        // The data folder: the vault key file's, else `./data`.
        let data_dir = match &key {
            VaultKeySource::File(p) => p.parent().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("./data")),
            VaultKeySource::Inline(_) => PathBuf::from("./data"),
        };
        let snapshots = snapshot_config(&get, &data_dir, &mut problems);
        let metrics = metrics_config(&get, &mut problems);
        let mail = mail_config(&get, &public_url, &mut problems);

        if !problems.is_empty() {
            return Err(ConfigError { problems });
        }
        Ok(Config {
            http: HttpConfig { bind, public_url, workers },
            database: DatabaseConfig { url: db_url, max_connections },
            vault: VaultConfig { key },
            log: LogConfig { filter, format },
            auth: AuthConfig { session_hours, login_max_failures, login_window_minutes },
            sandboxd: SandboxdConfig {
                token,
                catalog_dir,
                local_addresses,
                state_limit_bytes,
                operation_retention_days,
                recording_durable,
                git_allow_private,
                orphan_min_age_seconds,
                host_check_seconds,
            },
            docker,
            snapshots,
            metrics,
            mail,
        })
    }
}

/// `AGENTICOS_DOCKER_SOCKET` (an absolute path) wins over `DOCKER_HOST`; each is checked.
fn docker_host(get: &impl Fn(&str) -> Option<String>, problems: &mut Vec<String>) -> Option<String> {
    if let Some(path) = get("AGENTICOS_DOCKER_SOCKET") {
        let path = path.strip_prefix("unix://").unwrap_or(&path).to_string();
        if !path.starts_with('/') || path.chars().any(char::is_control) {
            problems.push(format!("AGENTICOS_DOCKER_SOCKET: `{path}` is not an absolute socket path"));
            return None;
        }
        return Some(format!("unix://{path}"));
    }
    let host = get("DOCKER_HOST")?;
    let fine = match host.split_once("://") {
        Some(("unix", path)) => path.starts_with('/'),
        Some(("tcp" | "http", rest)) => !rest.is_empty() && !rest.contains(['@', '?', '#']),
        _ => false,
    };
    if !fine || host.chars().any(char::is_control) {
        problems.push(format!(
            "DOCKER_HOST: `{host}` is not unix:///path/to/docker.sock, tcp://host:port or http://host:port"
        ));
        return None;
    }
    Some(host)
}

fn mail_config(get: &impl Fn(&str) -> Option<String>, public_url: &url::Url, problems: &mut Vec<String>) -> MailConfig {
    let smtp_url = get("AGENTICOS_SMTP_URL");
    if let Some(raw) = &smtp_url {
        // Named without the URL itself: it may hold a password.
        if let Err(why) = crate::mail::check_smtp_url(raw) {
            problems.push(format!("AGENTICOS_SMTP_URL: {why}"));
        }
    }
    let from = get("AGENTICOS_MAIL_FROM").unwrap_or_else(|| {
        let host = match public_url.host() {
            Some(url::Host::Domain(d)) if d.contains('.') || d == "localhost" => d.to_string(),
            _ => "localhost".to_string(),
        };
        format!("agenticos <noreply@{host}>")
    });
    if from.parse::<lettre::message::Mailbox>().is_err() {
        problems
            .push(format!("AGENTICOS_MAIL_FROM: `{from}` is not an address like `agenticos <noreply@example.com>`"));
    }
    MailConfig { smtp_url: smtp_url.map(SecretString::from), from }
}

fn metrics_config(get: &impl Fn(&str) -> Option<String>, problems: &mut Vec<String>) -> MetricsConfig {
    let enabled = match get("AGENTICOS_METRICS").as_deref() {
        None | Some("0" | "false") => false,
        Some("1" | "true") => true,
        Some(other) => {
            problems.push(format!("AGENTICOS_METRICS: `{other}` is neither 1 nor 0"));
            false
        }
    };
    let bind = get("AGENTICOS_METRICS_BIND").and_then(|v| match v.parse::<SocketAddr>() {
        Ok(a) => Some(a),
        Err(_) => {
            problems.push(format!("AGENTICOS_METRICS_BIND: `{v}` is not an address like 127.0.0.1:9100"));
            None
        }
    });
    let token = get("AGENTICOS_METRICS_TOKEN");
    if token.as_ref().is_some_and(|t| t.len() < 16) {
        problems.push("AGENTICOS_METRICS_TOKEN: must be at least 16 characters".to_string());
    }
    if enabled && bind.is_none() && token.is_none() {
        problems.push(
            "AGENTICOS_METRICS=1 needs AGENTICOS_METRICS_BIND (an address of its own) or AGENTICOS_METRICS_TOKEN \
             (a bearer token on the main address): /metrics is never public by accident"
                .to_string(),
        );
    }
    MetricsConfig { enabled, bind, token: token.map(SecretString::from) }
}

fn snapshot_config(
    get: &impl Fn(&str) -> Option<String>,
    data_dir: &std::path::Path,
    problems: &mut Vec<String>,
) -> SnapshotConfig {
    let dir = get("AGENTICOS_SNAPSHOT_DIR").map(PathBuf::from).unwrap_or_else(|| data_dir.join("snapshots"));
    let seconds = |name: &str, max: u64, default: u64, problems: &mut Vec<String>| {
        std::time::Duration::from_secs(parse_opt::<u64>(get, name, 1..=max, problems).unwrap_or(default))
    };
    let connect_timeout = seconds("AGENTICOS_SNAPSHOT_CONNECT_TIMEOUT_SECONDS", 600, 5, problems);
    let request_timeout = seconds("AGENTICOS_SNAPSHOT_REQUEST_TIMEOUT_SECONDS", 3600, 30, problems);
    let snapshot_timeout = seconds("AGENTICOS_SNAPSHOT_TIMEOUT_SECONDS", 24 * 3600, 600, problems);
    let pending_dir = dir.join("pending");
    let store = match get("AGENTICOS_SNAPSHOT_S3_BUCKET") {
        None => SnapshotStoreConfig::Local(dir),
        Some(bucket) => {
            let endpoint = get("AGENTICOS_SNAPSHOT_S3_ENDPOINT");
            if let Some(e) = &endpoint {
                if !matches!(url::Url::parse(e).map(|u| u.scheme().to_string()).as_deref(), Ok("http" | "https")) {
                    problems.push(format!("AGENTICOS_SNAPSHOT_S3_ENDPOINT: `{e}` is not an http(s) URL"));
                }
            }
            let access_key_id = get("AGENTICOS_SNAPSHOT_S3_ACCESS_KEY_ID");
            let secret_access_key = get("AGENTICOS_SNAPSHOT_S3_SECRET_ACCESS_KEY").map(SecretString::from);
            if access_key_id.is_some() != secret_access_key.is_some() {
                problems.push(
                    "AGENTICOS_SNAPSHOT_S3_ACCESS_KEY_ID and AGENTICOS_SNAPSHOT_S3_SECRET_ACCESS_KEY go together"
                        .to_string(),
                );
            }
            SnapshotStoreConfig::S3 {
                bucket,
                endpoint,
                region: get("AGENTICOS_SNAPSHOT_S3_REGION").unwrap_or_else(|| "us-east-1".into()),
                access_key_id,
                secret_access_key,
                prefix: get("AGENTICOS_SNAPSHOT_S3_PREFIX").map(|p| p.trim_matches('/').to_string()),
            }
        }
    };
    SnapshotConfig { store, connect_timeout, request_timeout, snapshot_timeout, pending_dir }
}

fn parse_opt<T>(
    get: &impl Fn(&str) -> Option<String>,
    name: &str,
    range: std::ops::RangeInclusive<T>,
    problems: &mut Vec<String>,
) -> Option<T>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    let raw = get(name)?;
    match raw.parse::<T>() {
        Ok(v) if range.contains(&v) => Some(v),
        _ => {
            problems.push(format!("{name}: `{raw}` must be a whole number from {} to {}", range.start(), range.end()));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn mail_is_off_by_default_and_its_sender_follows_the_public_url() {
        let c = Config::from_vars(&vars(&[])).unwrap();
        assert!(c.mail.smtp_url.is_none());
        assert_eq!(c.mail.from, "agenticos <noreply@localhost>");
        let c = Config::from_vars(&vars(&[("AGENTICOS_PUBLIC_URL", "https://console.example.com")])).unwrap();
        assert_eq!(c.mail.from, "agenticos <noreply@console.example.com>");
        for fine in [
            "smtp://mail.example.com",
            "smtp://u%40x:p%3Ass@mail.example.com:2525?tls=required",
            "smtps://u:p@mail.example.com",
        ] {
            let c = Config::from_vars(&vars(&[("AGENTICOS_SMTP_URL", fine)])).unwrap();
            assert!(c.mail.smtp_url.is_some(), "{fine}");
        }
    }

    #[test]
    fn a_bad_smtp_url_or_sender_is_refused_without_repeating_the_url() {
        for (bad, words) in [
            ("http://user:hunter2secret@mail.example.com", "neither smtp nor smtps"),
            ("smtp://user:hunter2secret@mail.example.com?tls=sometimes", "`tls` must be"),
            ("hunter2secret", "not a URL"),
        ] {
            let e = Config::from_vars(&vars(&[("AGENTICOS_SMTP_URL", bad)])).unwrap_err();
            let all = e.problems.join("\n");
            assert!(all.contains(words), "{bad}: {all}");
            assert!(!all.contains("hunter2secret"), "the URL is repeated: {all}");
        }
        let e = Config::from_vars(&vars(&[("AGENTICOS_MAIL_FROM", "not an address")])).unwrap_err();
        assert!(e.problems.join(" ").contains("AGENTICOS_MAIL_FROM"), "{:?}", e.problems);
    }

    #[test]
    fn defaults_run_on_a_fresh_machine() {
        let c = Config::from_vars(&HashMap::new()).expect("defaults are valid");
        assert_eq!(c.http.bind.to_string(), "127.0.0.1:8000");
        assert_eq!(c.database.url, "sqlite://./data/agenticos.db");
        assert!(matches!(c.vault.key, VaultKeySource::File(ref p) if p == &PathBuf::from("./data/vault.key")));
        assert!(!c.http.secure_cookies());
        assert_eq!(c.sandboxd.operation_retention_days, 30);
    }

    #[test]
    fn metrics_are_off_by_default_and_never_on_without_a_bind_or_a_token() {
        assert!(!Config::from_vars(&HashMap::new()).expect("defaults").metrics.enabled);
        let err = Config::from_vars(&vars(&[("AGENTICOS_METRICS", "1")])).expect_err("public by accident");
        assert!(err.to_string().contains("AGENTICOS_METRICS_BIND"), "{err}");
        let short = Config::from_vars(&vars(&[("AGENTICOS_METRICS", "1"), ("AGENTICOS_METRICS_TOKEN", "short")]));
        assert!(short.expect_err("short token").to_string().contains("16 characters"));
        let c = Config::from_vars(&vars(&[("AGENTICOS_METRICS", "1"), ("AGENTICOS_METRICS_BIND", "127.0.0.1:9100")]))
            .expect("valid");
        assert_eq!(c.metrics.bind.map(|a| a.port()), Some(9100));
    }

    #[test]
    fn the_operation_retention_is_a_number_of_days() {
        let c = Config::from_vars(&vars(&[("OPERATION_RETENTION_DAYS", "7")])).expect("valid");
        assert_eq!(c.sandboxd.operation_retention_days, 7);
        for bad in ["0", "-1", "thirty", "3651"] {
            let err = Config::from_vars(&vars(&[("OPERATION_RETENTION_DAYS", bad)])).expect_err(bad);
            assert!(err.to_string().contains("OPERATION_RETENTION_DAYS"), "{err}");
        }
    }

    #[test]
    fn the_snapshot_store_has_deadlines_with_defaults() {
        let c = Config::from_vars(&HashMap::new()).expect("valid");
        let secs = |d: std::time::Duration| d.as_secs();
        let s = &c.snapshots;
        assert_eq!((secs(s.connect_timeout), secs(s.request_timeout), secs(s.snapshot_timeout)), (5, 30, 600));
        let c = Config::from_vars(&vars(&[
            ("AGENTICOS_SNAPSHOT_CONNECT_TIMEOUT_SECONDS", "1"),
            ("AGENTICOS_SNAPSHOT_REQUEST_TIMEOUT_SECONDS", "2"),
            ("AGENTICOS_SNAPSHOT_TIMEOUT_SECONDS", "3"),
        ]))
        .expect("valid");
        let s = &c.snapshots;
        assert_eq!((secs(s.connect_timeout), secs(s.request_timeout), secs(s.snapshot_timeout)), (1, 2, 3));
        let err = Config::from_vars(&vars(&[("AGENTICOS_SNAPSHOT_REQUEST_TIMEOUT_SECONDS", "0")])).expect_err("zero");
        assert!(err.to_string().contains("AGENTICOS_SNAPSHOT_REQUEST_TIMEOUT_SECONDS"), "{err}");
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let err = Config::from_vars(&vars(&[
            ("AGENTICOS_BIND", "nope"),
            ("DATABASE_URL", "mysql://x"),
            ("AGENTICOS_VAULT_KEY", "short"),
            ("AGENTICOS_LOG_FORMAT", "xml"),
            ("AGENTICOS_SESSION_HOURS", "0"),
        ]))
        .expect_err("invalid");
        assert_eq!(err.problems.len(), 5, "{err}");
        let text = err.to_string();
        for name in
            ["AGENTICOS_BIND", "DATABASE_URL", "AGENTICOS_VAULT_KEY", "AGENTICOS_LOG_FORMAT", "AGENTICOS_SESSION_HOURS"]
        {
            assert!(text.contains(name), "{name} missing from: {text}");
        }
    }

    #[test]
    fn the_docker_engine_is_off_unless_a_socket_or_docker_host_is_given() {
        assert!(Config::from_vars(&HashMap::new()).expect("valid").docker.host.is_none());
        let c = Config::from_vars(&vars(&[("DOCKER_HOST", "unix:///var/run/docker.sock")])).expect("valid");
        assert_eq!(c.docker.host.as_deref(), Some("unix:///var/run/docker.sock"));
        let c = Config::from_vars(&vars(&[
            ("DOCKER_HOST", "tcp://10.0.0.1:2375"),
            ("AGENTICOS_DOCKER_SOCKET", "/run/d.sock"),
        ]))
        .expect("valid");
        assert_eq!(c.docker.host.as_deref(), Some("unix:///run/d.sock"), "the socket wins");
        for (name, bad) in [
            ("DOCKER_HOST", "ssh://me@host"),
            ("DOCKER_HOST", "docker.sock"),
            ("AGENTICOS_DOCKER_SOCKET", "run/d.sock"),
        ] {
            let err = Config::from_vars(&vars(&[(name, bad)])).expect_err(bad);
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    #[test]
    fn an_https_public_url_turns_on_secure_cookies() {
        let c = Config::from_vars(&vars(&[("AGENTICOS_PUBLIC_URL", "https://console.example.com")])).expect("valid");
        assert!(c.http.secure_cookies());
    }
}
