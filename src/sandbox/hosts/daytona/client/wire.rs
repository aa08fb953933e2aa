//! The shapes we send to and read from Daytona (`api.json`, `toolbox.json` in
//! `tests/peer/daytona/specs/`), only the fields we use; every field read is optional where the
//! documents allow a daemon or API version to leave it out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `SandboxState`. A state this client does not know reads as [`SandboxState::Unknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxState {
    Creating,
    Restoring,
    Destroyed,
    Destroying,
    Started,
    Stopped,
    Starting,
    Stopping,
    Error,
    BuildFailed,
    PendingBuild,
    BuildingSnapshot,
    PullingSnapshot,
    Archived,
    Archiving,
    Resizing,
    Snapshotting,
    Forking,
    Pausing,
    Paused,
    Resuming,
    #[serde(other)]
    Unknown,
}

impl SandboxState {
    /// The state's own word (`build_failed`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Creating => "creating",
            Self::Restoring => "restoring",
            Self::Destroyed => "destroyed",
            Self::Destroying => "destroying",
            Self::Started => "started",
            Self::Stopped => "stopped",
            Self::Starting => "starting",
            Self::Stopping => "stopping",
            Self::Error => "error",
            Self::BuildFailed => "build_failed",
            Self::PendingBuild => "pending_build",
            Self::BuildingSnapshot => "building_snapshot",
            Self::PullingSnapshot => "pulling_snapshot",
            Self::Archived => "archived",
            Self::Archiving => "archiving",
            Self::Resizing => "resizing",
            Self::Snapshotting => "snapshotting",
            Self::Forking => "forking",
            Self::Pausing => "pausing",
            Self::Paused => "paused",
            Self::Resuming => "resuming",
            Self::Unknown => "unknown",
        }
    }

    /// A state no wait ends: the sandbox failed or is gone.
    pub fn is_failed(self) -> bool {
        matches!(self, Self::Error | Self::BuildFailed | Self::Destroyed | Self::Destroying)
    }

    /// A state `start` moves on: stopped, archived, paused.
    pub fn needs_start(self) -> bool {
        matches!(self, Self::Stopped | Self::Archived | Self::Paused)
    }

    /// Building an image (so opening may take minutes).
    pub fn is_building(self) -> bool {
        matches!(self, Self::PendingBuild | Self::BuildingSnapshot | Self::PullingSnapshot)
    }
}

/// `Sandbox` (and `SandboxListItem`, its subset).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sandbox {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub organization_id: Option<String>,
    #[serde(default)]
    pub state: Option<SandboxState>,
    #[serde(default)]
    pub desired_state: Option<SandboxState>,
    #[serde(default)]
    pub error_reason: Option<String>,
    /// In `error`, whether `POST /sandbox/{id}/recover` may bring it back.
    #[serde(default)]
    pub recoverable: Option<bool>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Where this sandbox's toolbox is: `{toolboxProxyUrl}/{id}/files/…`.
    #[serde(default)]
    pub toolbox_proxy_url: Option<String>,
    #[serde(default)]
    pub snapshot: Option<String>,
    #[serde(default)]
    pub cpu: Option<f64>,
    /// GiB.
    #[serde(default)]
    pub memory: Option<f64>,
    /// GiB.
    #[serde(default)]
    pub disk: Option<f64>,
    #[serde(default)]
    pub auto_stop_interval: Option<f64>,
    #[serde(default)]
    pub auto_delete_interval: Option<f64>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub last_activity_at: Option<String>,
    #[serde(default)]
    pub daemon_version: Option<String>,
}

impl Sandbox {
    /// The state, `unknown` when Daytona sent none.
    pub fn state(&self) -> SandboxState {
        self.state.unwrap_or(SandboxState::Unknown)
    }
}

/// `BuildInfo` of a create "from an image": `FROM <image>`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BuildInfo {
    pub dockerfile_content: String,
}

/// `CreateSandbox`: only what we set (no resources with a snapshot: that is a 400).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CreateSandbox {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_info: Option<BuildInfo>,
    /// Minutes without activity before it stops; 0 = never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_stop_interval: Option<i64>,
    /// Minutes stopped before it is archived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_archive_interval: Option<i64>,
    /// Minutes stopped before it is deleted; -1 = never, 0 = on stop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_delete_interval: Option<i64>,
}

impl CreateSandbox {
    /// `runtime` as Daytona takes it: an image reference (with a tag or a registry path and a
    /// `:`) is built from `FROM <image>`; anything else names a snapshot.
    pub fn with_runtime(mut self, runtime: Option<&str>, as_image: bool) -> Self {
        match runtime {
            Some(image) if as_image => {
                self.build_info = Some(BuildInfo { dockerfile_content: format!("FROM {image}\n") });
            }
            Some(snapshot) => self.snapshot = Some(snapshot.to_owned()),
            None => {}
        }
        self
    }
}

/// `PaginatedSandboxes` of the cursor list.
///
/// A self-hosted Daytona older than v0.180 answers `GET /sandbox` with a bare array of every
/// sandbox (no cursor): read as one page without a next.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", from = "PageOrArray")]
pub struct SandboxPage {
    pub items: Vec<Sandbox>,
    #[serde(default)]
    pub next_cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum PageOrArray {
    #[serde(rename_all = "camelCase")]
    Page {
        items: Vec<Sandbox>,
        #[serde(default)]
        next_cursor: Option<String>,
    },
    Array(Vec<Sandbox>),
}

impl From<PageOrArray> for SandboxPage {
    fn from(p: PageOrArray) -> Self {
        match p {
            PageOrArray::Page { items, next_cursor } => SandboxPage { items, next_cursor },
            PageOrArray::Array(items) => SandboxPage { items, next_cursor: None },
        }
    }
}

/// `SnapshotDto`, what the probe reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub error_reason: Option<String>,
}

/// `FileInfo` of the toolbox.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileInfo {
    pub name: String,
    #[serde(default)]
    pub size: Option<i64>,
    #[serde(default)]
    pub is_dir: bool,
    /// Go's `FileMode` string: `-rw-r--r--`, `drwxr-xr-x`, `Lrwxrwxrwx` for a link.
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub modified_at: Option<String>,
    /// The full path (newer daemons).
    #[serde(default)]
    pub path: Option<String>,
}

impl FileInfo {
    /// A symbolic link (Go writes `L` first for one).
    pub fn is_link(&self) -> bool {
        self.mode.as_deref().is_some_and(|m| m.starts_with('L'))
    }

    /// A device, pipe or socket (Go's `D`, `p`, `S`, `c` mode letters).
    pub fn is_special(&self) -> bool {
        self.mode.as_deref().and_then(|m| m.chars().next()).is_some_and(|c| matches!(c, 'D' | 'p' | 'S' | 'c'))
    }
}

/// `ExecuteRequest`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteRequest {
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub envs: BTreeMap<String, String>,
    /// Seconds; always sent (the daemon applies none otherwise).
    pub timeout: u64,
}

/// `ExecuteResponse`: stdout and stderr together in `result`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteResponse {
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The SDK's fallback when `exitCode` is missing.
    #[serde(default)]
    pub code: Option<i32>,
    #[serde(default)]
    pub result: String,
    /// `result` was longer than the limit the reader keeps ([`super::Toolbox::execute`]): only
    /// its beginning is here.
    #[serde(skip)]
    pub output_limited: bool,
}

impl ExecuteResponse {
    pub fn exit(&self) -> Option<i32> {
        self.exit_code.or(self.code)
    }
}

/// `{dir}` of `/work-dir`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Dir {
    pub dir: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_reads_as_a_page_or_as_an_old_servers_bare_array() {
        let page: SandboxPage = serde_json::from_str(r#"{"items":[{"id":"a"}],"nextCursor":"c"}"#).unwrap();
        assert_eq!((page.items.len(), page.next_cursor.as_deref()), (1, Some("c")));
        let old: SandboxPage = serde_json::from_str(r#"[{"id":"a"},{"id":"b"}]"#).unwrap();
        assert_eq!((old.items.len(), old.next_cursor), (2, None));
    }

    #[test]
    fn a_sandbox_reads_with_unknown_states_and_missing_fields() {
        let s: Sandbox = serde_json::from_str(
            r#"{"id":"i","name":"n","state":"build_failed","errorReason":"boom","labels":{"a":"b"},"toolboxProxyUrl":"https://proxy/toolbox","cpu":1,"memory":2,"disk":3}"#,
        )
        .unwrap();
        assert_eq!(s.state(), SandboxState::BuildFailed);
        assert!(s.state().is_failed());
        let later: Sandbox = serde_json::from_str(r#"{"id":"i","state":"hibernating"}"#).unwrap();
        assert_eq!(later.state(), SandboxState::Unknown);
    }

    #[test]
    fn a_create_sends_camel_case_and_only_what_is_set() {
        let mut labels = BTreeMap::new();
        labels.insert("agenticos.io/scope".to_string(), "run".to_string());
        let c = CreateSandbox {
            name: Some("x".into()),
            labels,
            auto_stop_interval: Some(15),
            auto_delete_interval: Some(0),
            ..Default::default()
        }
        .with_runtime(Some("python:3.12"), true);
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            serde_json::json!({"name":"x","labels":{"agenticos.io/scope":"run"},"buildInfo":{"dockerfileContent":"FROM python:3.12\n"},"autoStopInterval":15,"autoDeleteInterval":0})
        );
        let s = CreateSandbox::default().with_runtime(Some("fake-python"), false);
        assert_eq!(serde_json::to_value(&s).unwrap(), serde_json::json!({"snapshot":"fake-python"}));
    }

    #[test]
    fn file_modes_say_links_and_special_files() {
        let f = |mode: &str| FileInfo {
            name: "n".into(),
            size: None,
            is_dir: false,
            mode: Some(mode.into()),
            modified_at: None,
            path: None,
        };
        assert!(f("Lrwxrwxrwx").is_link());
        assert!(!f("-rw-r--r--").is_link());
        assert!(f("prw-r--r--").is_special());
        assert!(!f("drwxr-xr-x").is_special());
    }
}
