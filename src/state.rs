//! What every handler shares: built once by `startup.rs`, handed out as `web::Data<AppState>`.
//! Imports only low layers (config, db, keys, clients) and the capabilities' caches.

use crate::auth::secrets::CsrfKey;
use crate::catalog::RuntimeCatalog;
use crate::config::Config;
use crate::db::Db;
use crate::documents::cache::DocumentsCache;
use crate::sandbox::connections::cache::{ClientCache, HealthCache};
use crate::sandbox::hosts::daytona::client::DaytonaClient;
use crate::sandbox::hosts::daytona::workspaces::known::KnownSandboxes;
use crate::sandbox::log::LogStore;
use crate::sandbox::operations::cache::{SearchCache, VocabularyCache};
use crate::sandbox::recording::Recorder;
use crate::sandbox::snapshots::uploads::Uploads;
use crate::sandbox::workspaces::cache::{OpenLocks, ResolveCache};
use crate::tokens::cache::TokenCallers;
use crate::vault::crypto::MasterKey;

/// Everything a handler may need, shared by all workers.
pub struct AppState {
    pub config: Config,
    pub db: Db,
    pub vault_key: MasterKey,
    pub csrf_key: CsrfKey,
    /// The runtime catalog this deployment ships, validated at start-up.
    pub catalog: RuntimeCatalog,
    /// The sandboxd release this platform speaks to (`catalog/sandboxd.version`).
    pub sandboxd_version: String,
    /// One HTTP client for every outbound call (connection pooling).
    pub http: reqwest::Client,
    /// The operation log's store: its writes, and its settled readers.
    pub log: LogStore,
    /// Buffers operation rows and commits them in batches (through `log`).
    pub recorder: Recorder,
    /// One lock per workspace, so concurrent first operations open one session.
    pub open_locks: OpenLocks,
    /// A test hook that holds an open between its host call and its row (unarmed outside tests).
    pub open_hold: crate::sandbox::workspaces::hold::OpenHold,
    /// Resolved runs, for a few seconds.
    pub resolve_cache: ResolveCache,
    /// Built sandboxd clients, for a few seconds.
    pub client_cache: ClientCache,
    /// Built Daytona clients, for a few seconds.
    pub daytona_clients: ClientCache<DaytonaClient>,
    /// What this console knows of Daytona sandboxes (toolbox URLs, roots, last keep-awake).
    pub daytona_sandboxes: KnownSandboxes,
    /// Recently authenticated API tokens, for a few seconds.
    pub token_callers: TokenCallers,
    /// Snapshots on their way to the object store in the background.
    pub snapshot_uploads: Uploads,
    /// A test hook that holds a snapshot at a point (unarmed outside tests).
    pub snapshot_hold: crate::sandbox::snapshots::hold::SnapshotHold,
    /// Each host's health for the Connections table, for a few seconds.
    pub health_cache: HealthCache,
    /// Each organization's operation vocabulary (the log's filter choices), for a minute.
    pub operation_vocabulary: VocabularyCache,
    /// Which trigrams each organization's recent search terms are narrowed by, for a minute.
    pub operation_searches: SearchCache,
    /// Documents' thumbnails and text previews.
    pub documents_cache: DocumentsCache,
    /// The Docker engine, read-only (discovery, doctor, live usage); none when not configured.
    pub docker: Option<crate::docker::Engine>,
    /// Where workspace snapshots are stored (a local folder or an S3-compatible store).
    pub snapshots: crate::sandbox::snapshots::objects::Objects,
    /// Each sweep's last run on this console (the health report).
    pub sweeps: crate::instruments::SweepRuns,
    /// Outgoing mail (password-reset links); none without `AGENTICOS_SMTP_URL`.
    pub mailer: Option<std::sync::Arc<crate::mail::Mailer>>,
}
