//! `agenticos backup --to FILE`: a consistent copy of the SQLite database, taken while the console
//! serves (`VACUUM INTO`, one read transaction), into a new file only. On PostgreSQL it takes
//! nothing and says to use `pg_dump` (docs/operating.md, "Backups"): the server's own tool, in the
//! server's version, which this binary does not ship.

use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use crate::config::{Config, SnapshotStoreConfig, VaultKeySource};
use crate::db::{sqlite_file, Db, DbKind};

/// What a backup wrote, and what else to keep beside it.
#[derive(Debug)]
pub struct Backup {
    /// The database copied.
    pub database: PathBuf,
    pub bytes: u64,
    /// Where the vault key is, in words (a file, or the environment).
    pub vault_key: String,
    /// The snapshot folder, when snapshots are kept on this machine.
    pub snapshots: Option<PathBuf>,
}

/// Why no backup was written, in words for the operator.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{0} already exists: a backup never writes over a file; give a new file name (the date in it, say)")]
    Exists(PathBuf),
    #[error(
        "DATABASE_URL is a PostgreSQL database: back it up with PostgreSQL's own tool, e.g. \
         `pg_dump --format=custom --file agenticos.dump \"$DATABASE_URL\"` (docs/operating.md, Backups); \
         `agenticos backup` copies SQLite databases"
    )]
    Postgres,
    #[error("there is no SQLite database at {0}: nothing to back up (is DATABASE_URL the console's?)")]
    NoDatabase(PathBuf),
    #[error("an in-memory database cannot be backed up")]
    InMemory,
    #[error("cannot write the backup {0}: {1}")]
    Write(PathBuf, String),
}

/// Copies the configured SQLite database into `to`, a file that must not exist yet (created with
/// mode 0600: the copy holds password hashes and the vault's sealed secrets). A failed copy
/// leaves no file behind.
pub async fn backup(config: &Config, to: &Path) -> Result<Backup, BackupError> {
    let url = &config.database.url;
    if !url.starts_with("sqlite:") {
        return Err(BackupError::Postgres);
    }
    let database = sqlite_file(url).ok_or(BackupError::InMemory)?;
    if !database.is_file() {
        return Err(BackupError::NoDatabase(database));
    }
    // Created here, exclusively: no race with another file of the same name. VACUUM INTO writes
    // into an empty file.
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(to) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => return Err(BackupError::Exists(to.to_path_buf())),
        Err(e) => return Err(BackupError::Write(to.to_path_buf(), e.to_string())),
    }
    let copied = copy(url, to).await;
    if let Err(e) = copied {
        let _ = std::fs::remove_file(to);
        return Err(BackupError::Write(to.to_path_buf(), format!("{e:#}")));
    }
    let bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
    let vault_key = match &config.vault.key {
        VaultKeySource::Inline(_) => "AGENTICOS_VAULT_KEY in the environment".to_string(),
        VaultKeySource::File(path) => format!("the file {}", path.display()),
    };
    let snapshots = match &config.snapshots.store {
        SnapshotStoreConfig::Local(dir) => Some(dir.clone()),
        SnapshotStoreConfig::S3 { .. } => None,
    };
    Ok(Backup { database, bytes, vault_key, snapshots })
}

async fn copy(url: &str, to: &Path) -> anyhow::Result<()> {
    let db = Db::connect(url, 1).await?;
    debug_assert_eq!(db.kind(), DbKind::Sqlite);
    let copied = db.sqlite_copy_into(to).await;
    db.close().await;
    copied
}
