//! Builds the application: state, routes, middleware, the listener.

use std::net::TcpListener;

use actix_web::dev::Server;
use actix_web::middleware::{from_fn, Compress};
use actix_web::web::{self, Data};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer};

use crate::auth::secrets::CsrfKey;
use crate::catalog::RuntimeCatalog;
use crate::config::{Config, VaultKeySource};
use crate::db::Db;
use crate::monitoring::sweeps;
use crate::sandbox::hosts::sandboxd::client::SandboxdClient;
use crate::sandbox::log::LogStore;
use crate::sandbox::recording::Recorder;
pub use crate::state::AppState;
use crate::vault::crypto::{self, MasterKey};
use crate::web::{self as w, middleware as mw};

impl AppState {
    /// Connects and migrates the database and loads (or creates) the vault key.
    pub async fn build(config: Config) -> anyhow::Result<AppState> {
        // A catalog with a hole in it stops start-up, naming the entry and the rule.
        let catalog = RuntimeCatalog::load(config.sandboxd.catalog_dir.join("sandbox_runtimes.json"))?;
        let sandboxd_version =
            crate::catalog::read_version_file(&config.sandboxd.catalog_dir.join("sandboxd.version"))?;
        let http = SandboxdClient::default_http()?;
        let vault_key = load_vault_key(&config)?;
        let db = Db::connect(&config.database.url, config.database.max_connections).await?;
        db.migrate().await?;
        let csrf_key = CsrfKey::derive(vault_key.bytes());
        let log = LogStore::new(db.clone());
        let recorder = Recorder::new(log.clone(), config.sandboxd.recording_durable);
        let docker = crate::docker::Engine::from_config(&config.docker)?;
        let snapshots = crate::sandbox::snapshots::objects::Objects::from_config(&config.snapshots)?;
        let mailer = match &config.mail.smtp_url {
            Some(url) => Some(crate::mail::Mailer::new(secrecy::ExposeSecret::expose_secret(url), &config.mail.from)?),
            None => None,
        };
        if config.metrics.enabled {
            crate::instruments::install()?;
        }
        Ok(AppState {
            config,
            db,
            vault_key,
            csrf_key,
            catalog,
            sandboxd_version,
            http,
            log,
            recorder,
            open_locks: Default::default(),
            open_hold: Default::default(),
            resolve_cache: Default::default(),
            client_cache: Default::default(),
            daytona_clients: Default::default(),
            daytona_sandboxes: Default::default(),
            token_callers: Default::default(),
            snapshot_uploads: Default::default(),
            snapshot_hold: Default::default(),
            health_cache: Default::default(),
            operation_vocabulary: Default::default(),
            operation_searches: Default::default(),
            documents_cache: Default::default(),
            docker,
            snapshots,
            sweeps: Default::default(),
            mailer,
        })
    }
}

pub fn load_vault_key(config: &Config) -> anyhow::Result<MasterKey> {
    match &config.vault.key {
        VaultKeySource::Inline(s) => {
            use secrecy::ExposeSecret;
            crypto::parse_master_key(s.expose_secret()).map_err(|e| anyhow::anyhow!("AGENTICOS_VAULT_KEY: {e}"))
        }
        VaultKeySource::File(p) => crypto::load_or_create_key_file(p),
    }
}

pub struct Application {
    port: u16,
    server: Server,
    /// `/metrics` on its own address (`AGENTICOS_METRICS_BIND`), and that address's port.
    metrics: Option<(u16, Server)>,
    state: Data<AppState>,
}

impl Application {
    pub async fn build(config: Config) -> anyhow::Result<Application> {
        let listener = TcpListener::bind(config.http.bind)
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.http.bind))?;
        let state = Data::new(AppState::build(config).await?);
        Self::with_listener(state, listener)
    }

    pub fn with_listener(state: Data<AppState>, listener: TcpListener) -> anyhow::Result<Application> {
        let port = listener.local_addr()?.port();
        let workers = state.config.http.workers;
        let app_state = state.clone();
        let mut server = HttpServer::new(move || {
            App::new()
                .app_data(app_state.clone())
                .app_data(w::extract::json_config())
                .app_data(w::extract::form_config())
                .app_data(w::extract::query_config())
                .app_data(web::PayloadConfig::new(crate::sandbox::workspaces::backend::WRITE_MAX))
                .configure(routes)
                .default_service(web::to(not_found))
                .wrap(from_fn(mw::csrf_guard))
                .wrap(from_fn(mw::keep_page_url))
                .wrap(from_fn(w::edge::input_guard))
                .wrap(from_fn(mw::api_problems))
                .wrap(from_fn(w::error_frame::framed_errors))
                .wrap(mw::security_headers())
                .wrap(from_fn(mw::small_answers_plain))
                .wrap(Compress::default())
                .wrap(from_fn(mw::plain_answers_unmarked))
                .wrap(from_fn(mw::request_context))
        })
        // Every accepted connection sends at once (TCP_NODELAY): a compressed answer goes out as
        // headers and body in two writes, and with Nagle's algorithm the second waited for the
        // client's delayed ACK, about 40 ms, on every answer to a client that accepts gzip.
        .on_connect(|connection, _| {
            if let Some(tcp) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() {
                if let Err(e) = tcp.set_nodelay(true) {
                    tracing::warn!(error = %e, "TCP_NODELAY could not be set on a connection");
                }
            }
        })
        .shutdown_timeout(10);
        if let Some(n) = workers {
            server = server.workers(n);
        }
        let server = server.listen(listener)?.run();
        let metrics = metrics_server(&state)?;
        Ok(Application { port, server, metrics, state })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port `/metrics` is served on by itself, when `AGENTICOS_METRICS_BIND` is set.
    pub fn metrics_port(&self) -> Option<u16> {
        self.metrics.as_ref().map(|(port, _)| *port)
    }

    pub fn state(&self) -> Data<AppState> {
        self.state.clone()
    }

    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        match self.metrics {
            Some((_, metrics)) => {
                let metrics_handle = metrics.handle();
                let served = tokio::select! {
                    served = self.server => served,
                    served = metrics => served,
                };
                metrics_handle.stop(true).await;
                served
            }
            None => self.server.await,
        }
    }
}

/// The listener of `/metrics` alone, when metrics are on and `AGENTICOS_METRICS_BIND` is set.
fn metrics_server(state: &Data<AppState>) -> anyhow::Result<Option<(u16, Server)>> {
    let metrics = &state.config.metrics;
    let Some(bind) = metrics.bind.filter(|_| metrics.enabled) else { return Ok(None) };
    let listener =
        TcpListener::bind(bind).map_err(|e| anyhow::anyhow!("AGENTICOS_METRICS_BIND: cannot listen on {bind}: {e}"))?;
    let port = listener.local_addr()?.port();
    let app_state = state.clone();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(app_state.clone())
            .configure(crate::monitoring::own_address_routes)
            .default_service(web::to(HttpResponse::NotFound))
    })
    .workers(1)
    .shutdown_timeout(5)
    .listen(listener)?
    .run();
    Ok(Some((port, server)))
}

/// Every route of the product.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz)).route("/readyz", web::get().to(readyz));
    crate::api::configure(cfg);
    w::assets::routes(cfg);
    crate::auth::routes(cfg);
    crate::account::routes(cfg);
    crate::dashboard::routes(cfg);
    // Before any `/sandboxes/{id}` route: `/sandboxes/running` is not a connection id.
    crate::sandbox::running::routes(cfg);
    crate::sandbox::operations::routes(cfg);
    crate::sandbox::policy::routes(cfg);
    crate::orgs::routes(cfg);
    crate::tokens::routes(cfg);
    crate::vault::routes(cfg);
    crate::audit::routes(cfg);
    crate::sandbox::connections::routes(cfg);
    crate::agents::routes(cfg);
    crate::documents::routes(cfg);
    crate::sandbox::snapshots::pages::routes(cfg);
    crate::reference::routes(cfg);
    crate::monitoring::routes(cfg);
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ok" }))
}

/// How long `/readyz` waits for the database before it answers 503: well inside a load
/// balancer's or compose healthcheck's timeout.
const READY_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

async fn readyz(st: Data<AppState>) -> HttpResponse {
    if st.db.ping(READY_WITHIN).await {
        HttpResponse::Ok().json(serde_json::json!({ "status": "ready", "database": "ok" }))
    } else {
        HttpResponse::ServiceUnavailable()
            .insert_header(("Retry-After", "5"))
            .json(serde_json::json!({ "status": "not ready", "database": "unreachable" }))
    }
}

async fn not_found(req: HttpRequest) -> Result<HttpResponse, w::PageError> {
    if req.path().starts_with("/api/") {
        return Ok(w::route::not_found(req).await);
    }
    Err(w::AppError::new(w::Kind::NotFound, "There is no page at this address.").into())
}

/// Hourly housekeeping while serving: expired sign-ins and stale failure records.
pub fn spawn_sweeps(state: Data<AppState>) {
    every(state, 3600, |st| async move { sweeps::sign_ins(&st, crate::db::now_ms()).await });
}

/// Daily while serving (first right after start-up): the operation log's retention sweep.
pub fn spawn_operation_sweep(state: Data<AppState>) {
    every(state, 86_400, |st| async move { sweeps::operation_log(&st, crate::db::now_ms()).await });
}

/// While serving, on a database whose log store works behind its writer (SQLite: every second),
/// the recorder's inbox is moved into the operation log and the log's rows queued for the search
/// index are moved into it (`sandbox::log::sqlite`); the store does it too after enough rows, and
/// before every read of the log.
pub fn spawn_search_indexing(state: Data<AppState>) {
    let Some(tick) = state.log.tick() else { return };
    every(state, tick.as_secs(), |st| async move {
        if let Err(e) = st.log.index_search().await {
            tracing::error!(error = %e, event = "operations_not_moved", "failed to move the operation log's inbox or index it for search");
        }
    });
}

/// The `sandbox-destroy-retry` sweep every minute while serving: each due tombstone this replica
/// can claim is destroyed or rescheduled (docs/design.md §10), then the snapshot store's.
pub fn spawn_destroy_retry(state: Data<AppState>) {
    every(state, 60, |st| async move { sweeps::destroy_retry(&st, crate::db::now_ms()).await });
}

/// The background check of every switched-on host, every `AGENTICOS_HOST_CHECK_SECONDS` (the
/// first right away): each due host this replica can claim is asked and its state kept
/// (`sandbox::connections::checks`).
pub fn spawn_host_checks(state: Data<AppState>) {
    let seconds = state.config.sandboxd.host_check_seconds;
    every(state, seconds, move |st| async move {
        let interval = std::time::Duration::from_secs(seconds);
        match crate::sandbox::connections::checks::round(&st, crate::db::now_ms(), interval).await {
            Ok(r) => tracing::debug!(checked = r.checked, skipped = r.skipped, "host checks done"),
            Err(e) => tracing::warn!(error = %e, "the host checks could not run"),
        }
    });
}

/// Runs `sweep` every `seconds` (the first right away); each run is kept as the sweep's last.
fn every<F, Fut>(state: Data<AppState>, seconds: u64, sweep: F)
where
    F: Fn(Data<AppState>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(seconds));
        loop {
            tick.tick().await;
            sweep(state.clone()).await;
        }
    });
}
