//! Workspaces for runs (DESIGN.md §7-8): which workspace a run gets (its session key), opening it
//! lazily on the first operation, and every operation through one recording wrapper.

use std::time::{Duration, Instant};

use super::document::Document;
use super::error::WorkspaceError;
use super::key::{self, Carrier, Scope, Subject};
use super::model::{Entry, ExecResult, Resolved, WorkspaceState};
use super::paths::{self, WorkspacePath};
use super::store::{self, NewWorkspace};
use crate::access::Caller;
use crate::agents::model::{Agent, Backend, Run, StartedBy};
use crate::agents::store as agents;
use crate::db;
use crate::sandbox::client::{
    OpenSession, RunRequest, SandboxdClient, SandboxdError, OPEN_WAIT, OPEN_WAIT_WHILE_BUILDING,
};
use crate::sandbox::connections::model::ConnectionKind;
use crate::sandbox::connections::service as connections;
use crate::sandbox::connections::store as connection_store;
use crate::sandbox::recording::{clip_target, Operation, Record};
use crate::state::AppState;

type Result<T> = std::result::Result<T, WorkspaceError>;

pub const READ_MAX: usize = 8 * 1024 * 1024;
pub const EXEC_TIMEOUT_DEFAULT: u64 = 120;
pub const EXEC_TIMEOUT_MAX: u64 = 3600;

fn ensure_caller(caller: &Caller) -> Result<()> {
    if caller.role.can_see_sandboxes() {
        Ok(())
    } else {
        Err(WorkspaceError::Refused("Agent runtimes use a token with the operator role or above.".into()))
    }
}

/// Resolves a run's workspace (creating its row, never asking a host).
pub async fn resolve(st: &AppState, caller: &Caller, run_id: &str) -> Result<Resolved> {
    ensure_caller(caller)?;
    if let Some(r) = st.resolve_cache.get(&caller.org_id, run_id) {
        return Ok(r);
    }
    let r = resolve_in(st, &caller.org_id, run_id).await?;
    st.resolve_cache.put(&r);
    Ok(r)
}

/// [`resolve`] for a caller whose access was decided elsewhere (a member of the run's
/// conversation, DESIGN.md §9); still confined to `org_id`.
async fn resolve_in(st: &AppState, org_id: &str, run_id: &str) -> Result<Resolved> {
    let org_id = org_id.to_string();
    let mut c = st.db.conn().await?;
    let run = agents::get_run(&mut c, &org_id, run_id)
        .await?
        .ok_or_else(|| WorkspaceError::NotFound("There is no such run.".into()))?;
    let agent = agents::get_agent(&mut c, &org_id, &run.agent_id)
        .await?
        .ok_or_else(|| WorkspaceError::NotFound("This run's agent was deleted.".into()))?;
    let conversation = match &run.conversation_id {
        Some(id) => agents::get_conversation(&mut c, &org_id, id).await?,
        None => None,
    };

    let (carrier, backend, connection) = match agent.backend {
        Backend::State => (Carrier::Document, "state", None),
        Backend::Service => {
            let conn = match &agent.connection_id {
                Some(id) => connection_store::get(&mut c, &org_id, id).await?,
                None => connection_store::list(&mut c, &org_id).await?.into_iter().find(|c| c.is_default),
            };
            let conn = conn.ok_or_else(|| {
                WorkspaceError::Refused(
                    "This agent needs a sandbox host, but the organization has no connection. Register one under Sandboxes.".into(),
                )
            })?;
            if conn.kind == ConnectionKind::Daytona {
                return Err(WorkspaceError::Refused(
                    "Daytona workspaces are not supported yet; give this agent a sandboxd connection.".into(),
                ));
            }
            // A switched-off connection is refused where new work starts (`ensure_open`), not
            // here: finishing a run must still reach it (off stops new work, not the bill).
            (Carrier::Container, "sandboxd", Some(conn))
        }
    };

    let scope = agent.scope;
    let mut owner_label = None;
    let mut user_id = None;
    let channel_key = conversation.as_ref().and_then(|c| c.channel_key.clone());
    let identity;
    let subject = match scope {
        Scope::Run => Subject::Id(&run.id),
        Scope::Agent => Subject::Id(&agent.id),
        Scope::Conversation => Subject::Id(run.conversation_id.as_deref().ok_or_else(|| {
            WorkspaceError::Refused("The conversation scope needs a conversation, and this run has none.".into())
        })?),
        Scope::Channel => {
            identity = channel_key.clone().ok_or_else(|| {
                WorkspaceError::Refused(
                    "The channel scope needs a channel, and this run's conversation has none.".into(),
                )
            })?;
            Subject::Hashed { agent_id: &agent.id, identity: &identity }
        }
        Scope::User => {
            identity = match (run.started_by, &run.user_id, &run.channel_sender) {
                (StartedBy::Member | StartedBy::Api, Some(u), _) => {
                    user_id = Some(u.clone());
                    owner_label = agents::email_of(&mut c, u).await?;
                    format!("user:{u}")
                }
                (StartedBy::Trigger, Some(u), _) if run.trigger_as_creator => {
                    user_id = Some(u.clone());
                    owner_label = agents::email_of(&mut c, u).await?;
                    format!("user:{u}")
                }
                (StartedBy::Channel, _, Some(sender)) => {
                    owner_label = Some(sender.clone());
                    format!("channel-sender:{sender}")
                }
                (StartedBy::Widget, _, _) => {
                    return Err(WorkspaceError::Refused(
                        "The user scope belongs to a signed-in person; a widget visitor's run gets no user workspace.".into(),
                    ))
                }
                (StartedBy::Trigger, _, _) => {
                    return Err(WorkspaceError::Refused(
                        "The user scope belongs to a signed-in person; a trigger's run gets no user workspace unless it runs as its creator."
                            .into(),
                    ))
                }
                _ => return Err(WorkspaceError::Refused("The user scope needs the person this run acts for, and it names none.".into())),
            };
            Subject::Hashed { agent_id: &agent.id, identity: &identity }
        }
    };
    let session_key = key::session_key(carrier, scope, &org_id, connection.as_ref().map(|c| c.id.as_str()), subject);
    let new = NewWorkspace {
        session_key: &session_key,
        backend,
        scope,
        connection_id: connection.as_ref().map(|c| c.id.as_str()),
        agent_id: &agent.id,
        conversation_id: run
            .conversation_id
            .as_deref()
            .filter(|_| matches!(scope, Scope::Conversation | Scope::Channel)),
        run_id: Some(run.id.as_str()).filter(|_| scope == Scope::Run),
        user_id: user_id.as_deref(),
        owner_label: owner_label.as_deref(),
        channel_key: channel_key.as_deref().filter(|_| scope == Scope::Channel),
    };
    let workspace = store::upsert(&mut c, &org_id, &new, db::now_ms())
        .await?
        .ok_or_else(|| WorkspaceError::Internal(anyhow::anyhow!("workspace row vanished")))?;
    Ok(Resolved { run, agent, workspace, connection, org_id })
}

// ---------------------------------------------------------------------------------------------
// Opening (sandboxd)

struct Session {
    client: SandboxdClient,
    id: String,
}

async fn client_of(st: &AppState, r: &Resolved) -> Result<SandboxdClient> {
    let conn = r.connection.as_ref().ok_or_else(|| WorkspaceError::Internal(anyhow::anyhow!("no connection")))?;
    connections::client_for(st, &r.org_id, conn).await.map_err(|e| WorkspaceError::from(crate::web::AppError::from(e)))
}

/// Opens (or attaches to) the run's session on its first operation; later operations reuse it.
async fn ensure_open(st: &AppState, r: &mut Resolved) -> Result<Session> {
    if let Some(conn) = r.connection.as_ref().filter(|c| !c.is_enabled) {
        return Err(WorkspaceError::Refused(format!(
            "The connection “{}” is switched off: no new work starts there.",
            conn.name
        )));
    }
    let client = client_of(st, r).await?;
    if r.run.workspace_opened && r.workspace.state == WorkspaceState::Open {
        if let Some(id) = r.workspace.session_ref.clone() {
            return Ok(Session { client, id });
        }
    }
    let lock = st.open_locks.get(&r.workspace.id);
    let _guard = lock.lock().await;
    let mut c = st.db.conn().await?;
    // Someone may have opened it while this request waited.
    r.workspace =
        store::get(&mut c, &r.org_id, &r.workspace.id).await?.ok_or_else(|| WorkspaceError::NotFound("gone".into()))?;
    r.run =
        agents::get_run(&mut c, &r.org_id, &r.run.id).await?.ok_or_else(|| WorkspaceError::NotFound("gone".into()))?;
    if r.workspace.state == WorkspaceState::Lost {
        return Err(WorkspaceError::Lost);
    }
    if r.run.workspace_opened && r.workspace.state == WorkspaceState::Open {
        if let Some(id) = r.workspace.session_ref.clone() {
            return Ok(Session { client, id });
        }
    }
    drop(c);
    let runtime = r.agent.runtime.clone().or_else(|| r.connection.as_ref().and_then(|c| c.default_runtime.clone()));
    let first_open_ever = r.workspace.session_ref.is_none();
    // A runtime the host builds on first use may take minutes: wait up to 10 minutes, and say so.
    let policy = client.policy().await?;
    let alias = runtime.clone().unwrap_or_else(|| policy.default_runtime.clone());
    let builds = policy.runtimes.iter().any(|p| p.alias == alias && p.builds);
    let wait = if builds { OPEN_WAIT_WHILE_BUILDING } else { OPEN_WAIT };
    if builds {
        let mut c = st.db.conn().await?;
        store::set_state(&mut c, &r.workspace.id, WorkspaceState::Preparing, db::now_ms()).await?;
    }
    let result = open_on_host(&client, r, runtime.as_deref(), wait).await;
    let mut c = st.db.conn().await?;
    let session_id = match result {
        Ok(id) => id,
        Err(WorkspaceError::Lost) => {
            store::set_lost(&mut c, &r.workspace.id, &r.run.id, db::now_ms()).await?;
            st.resolve_cache.forget_workspace(&r.workspace.id);
            tracing::warn!(event = "workspace_lost", workspace_id = %r.workspace.id, "the host no longer has this workspace's files");
            return Err(WorkspaceError::Lost);
        }
        Err(e @ WorkspaceError::Host(SandboxdError::VersionMismatch { .. })) if r.workspace.session_ref.is_some() => {
            // An older host refuses to attach by reference: forget it, so the next turn opens by name.
            store::forget_ref(&mut c, &r.workspace.id, db::now_ms()).await?;
            return Err(e);
        }
        Err(e) => {
            let back = if r.workspace.session_ref.is_some() { WorkspaceState::Open } else { WorkspaceState::NotOpened };
            store::set_state(&mut c, &r.workspace.id, back, db::now_ms()).await?;
            return Err(e);
        }
    };
    // Skills (every run) and the manifest's files (a new workspace) land just before the operation.
    write_agent_files(&client, &session_id, &r.agent, first_open_ever).await?;
    store::set_open(&mut c, &r.workspace.id, &session_id, Some(alias.as_str()), db::now_ms()).await?;
    agents::mark_workspace_opened(&mut c, &r.run.id).await?;
    r.run.workspace_opened = true;
    r.workspace.state = WorkspaceState::Open;
    r.workspace.session_ref = Some(session_id.clone());
    st.resolve_cache.put(r);
    Ok(Session { client, id: session_id })
}

async fn open_on_host(client: &SandboxdClient, r: &Resolved, runtime: Option<&str>, wait: Duration) -> Result<String> {
    let tenant = Some(r.org_id.clone());
    if let Some(reference) = &r.workspace.session_ref {
        let request = OpenSession {
            session_id: Some(reference.clone()),
            runtime: None,
            tenant: tenant.clone(),
            reuse: true,
            attach: true,
        };
        match client.open_session(&request, wait).await {
            Ok(created) => return Ok(created.session.session_id),
            // Attaching found nothing: the files are gone. Never silently replace them.
            Err(SandboxdError::NotFound { .. }) => return Err(WorkspaceError::Lost),
            Err(SandboxdError::VersionMismatch { missing, expected }) => {
                // An older host refuses to attach by reference: forget it and reopen by name.
                tracing::warn!(event = "sandboxd_version_mismatch", address = %client.base(), "re-attaching by reference refused");
                return Err(WorkspaceError::Host(SandboxdError::VersionMismatch { missing, expected }));
            }
            Err(e) => return Err(e.into()),
        }
    }
    let request = OpenSession {
        session_id: Some(r.workspace.session_key.clone()),
        runtime: runtime.map(str::to_string),
        tenant,
        reuse: true,
        attach: false,
    };
    let started = Instant::now();
    let mut pause = Duration::from_millis(50);
    loop {
        match client.open_session(&request, wait).await {
            Ok(created) => return Ok(created.session.session_id),
            // Another replica or request is opening the same name right now: wait for it.
            Err(SandboxdError::Conflict { detail })
                if detail.starts_with("Session is opening") && started.elapsed() < wait =>
            {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

async fn write_agent_files(client: &SandboxdClient, session_id: &str, agent: &Agent, manifest_too: bool) -> Result<()> {
    let skills = agent.skills.iter().map(|f| (format!("skills/{}", f.path), f));
    let manifest = agent.manifest_files.iter().filter(|_| manifest_too).map(|f| (f.path.clone(), f));
    for (path, f) in skills.chain(manifest) {
        let p = paths::normalise(&path).map_err(WorkspaceError::BadPath)?;
        if f.is_dir {
            client.mkdir(session_id, &p.absolute()).await?;
        } else {
            client.write_file(session_id, &p.absolute(), f.content.as_bytes()).await?;
        }
    }
    Ok(())
}

/// Runs `op` on the open session; a session the host closed meanwhile is re-attached once.
async fn on_session<T, F, Fut>(st: &AppState, r: &mut Resolved, op: F) -> Result<T>
where
    F: Fn(SandboxdClient, String) -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, SandboxdError>>,
{
    let s = ensure_open(st, r).await?;
    match op(s.client.clone(), s.id.clone()).await {
        Err(SandboxdError::NotFound { detail }) if detail.starts_with("No such session") => {
            // The host closed the session (idle, restart); its files may remain: attach again.
            let mut c = st.db.conn().await?;
            agents::reset_workspace_opened(&mut c, &r.run.id).await?;
            drop(c);
            st.resolve_cache.forget_workspace(&r.workspace.id);
            r.run.workspace_opened = false;
            let s = ensure_open(st, r).await?;
            Ok(op(s.client, s.id).await?)
        }
        other => Ok(other?),
    }
}

// ---------------------------------------------------------------------------------------------
// State documents

async fn mutate_document<T>(st: &AppState, r: &Resolved, f: impl Fn(&mut Document) -> Result<T>) -> Result<T> {
    let limit = st.config.sandboxd.state_limit_bytes;
    for _ in 0..8 {
        let mut c = st.db.conn().await?;
        let (text, version) = store::document(&mut c, &r.workspace.id).await?;
        let mut doc = Document::parse(text.as_deref())?;
        let before = doc.usage();
        let out = f(&mut doc)?;
        let after = doc.usage();
        if after > limit && after > before {
            return Err(WorkspaceError::TooLarge(format!(
                "This workspace would hold {after} bytes, over its storage limit of {limit} bytes (files and empty folders count). Nothing was written."
            )));
        }
        if store::replace_document(&mut c, &r.workspace.id, version, &doc.to_json(), db::now_ms()).await? {
            return Ok(out);
        }
    }
    Err(WorkspaceError::Internal(anyhow::anyhow!("the state document kept changing; try again")))
}

async fn read_document(st: &AppState, r: &Resolved) -> Result<Document> {
    let mut c = st.db.conn().await?;
    let (text, _) = store::document(&mut c, &r.workspace.id).await?;
    Document::parse(text.as_deref())
}

// ---------------------------------------------------------------------------------------------
// Recording wrapper

async fn recorded<T>(
    st: &AppState,
    r: &Resolved,
    op: Operation,
    target: &str,
    result: Result<T>,
    started: Instant,
    ok_detail: impl Fn(&T) -> String,
) -> Result<T> {
    // A refusal before anything reached the host is not an operation.
    if matches!(&result, Err(WorkspaceError::BadPath(_) | WorkspaceError::Refused(_) | WorkspaceError::NoCommands)) {
        return result;
    }
    let (ok, detail) = match &result {
        Ok(v) => (true, ok_detail(v)),
        Err(e) => (false, e.detail().to_string()),
    };
    st.recorder
        .record(Record {
            organization_id: r.org_id.clone(),
            workspace_id: r.workspace.id.clone(),
            session_key: r.workspace.session_key.clone(),
            connection_id: r.connection.as_ref().map(|c| c.id.clone()),
            agent_id: Some(r.agent.id.clone()),
            run_id: r.run.id.clone(),
            operation: op,
            target: clip_target(target),
            ok,
            detail,
            duration_ms: started.elapsed().as_millis() as i64,
            created_at: db::now_ms(),
            seq: st.recorder.next_seq(),
        })
        .await;
    result
}

fn path(raw: &str) -> Result<WorkspacePath> {
    paths::normalise(raw).map_err(WorkspaceError::BadPath)
}

fn is_state(r: &Resolved) -> bool {
    r.agent.backend == Backend::State
}

fn entries(list: Vec<crate::sandbox::client::FileEntry>) -> Vec<Entry> {
    list.into_iter()
        .map(|e| {
            let rel = paths::normalise(&e.path).map(|p| p.relative().to_string()).unwrap_or(e.path);
            Entry { name: e.name, path: rel, is_dir: e.is_dir, size: e.size }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The operations

pub async fn read(st: &AppState, caller: &Caller, run_id: &str, raw: &str) -> Result<Vec<u8>> {
    let p = path(raw)?;
    let mut r = resolve(st, caller, run_id).await?;
    let started = Instant::now();
    let result = if is_state(&r) {
        read_document(st, &r).await.and_then(|d| d.read(&p))
    } else {
        let abs = p.absolute();
        on_session(st, &mut r, |c, id| {
            let abs = abs.clone();
            async move { c.read_file(&id, &abs).await }
        })
        .await
    };
    let result = result.and_then(|b| {
        if b.len() > READ_MAX {
            Err(WorkspaceError::TooLarge(format!("The file is larger than {} MiB.", READ_MAX / 1024 / 1024)))
        } else {
            Ok(b)
        }
    });
    recorded(st, &r, Operation::Read, &p.display(), result, started, |b| format!("{} bytes", b.len())).await
}

pub async fn write(st: &AppState, caller: &Caller, run_id: &str, raw: &str, bytes: &[u8]) -> Result<()> {
    let p = path(raw)?;
    if p.is_root() {
        return Err(WorkspaceError::BadPath("Name a file to write, not the workspace root.".into()));
    }
    let mut r = resolve(st, caller, run_id).await?;
    let started = Instant::now();
    let result = if is_state(&r) {
        mutate_document(st, &r, |d| d.write(&p, bytes)).await
    } else {
        let abs = p.absolute();
        on_session(st, &mut r, |c, id| {
            let abs = abs.clone();
            async move { c.write_file(&id, &abs, bytes).await }
        })
        .await
    };
    let n = bytes.len();
    recorded(st, &r, Operation::Write, &p.display(), result, started, |_| format!("{n} bytes")).await
}

pub async fn ls(st: &AppState, caller: &Caller, run_id: &str, raw: &str) -> Result<Vec<Entry>> {
    let p = path(raw)?;
    let mut r = resolve(st, caller, run_id).await?;
    let started = Instant::now();
    let result = if is_state(&r) {
        read_document(st, &r).await.and_then(|d| d.ls(&p))
    } else {
        let abs = p.absolute();
        on_session(st, &mut r, |c, id| {
            let abs = abs.clone();
            async move { c.list(&id, &abs).await }
        })
        .await
        .map(entries)
    };
    recorded(st, &r, Operation::Ls, &p.display(), result, started, |v| format!("{} entries", v.len())).await
}

pub async fn mkdir(st: &AppState, caller: &Caller, run_id: &str, raw: &str) -> Result<()> {
    let p = path(raw)?;
    let mut r = resolve(st, caller, run_id).await?;
    let started = Instant::now();
    let result = if is_state(&r) {
        mutate_document(st, &r, |d| d.mkdir(&p)).await
    } else {
        let abs = p.absolute();
        on_session(st, &mut r, |c, id| {
            let abs = abs.clone();
            async move { c.mkdir(&id, &abs).await }
        })
        .await
    };
    recorded(st, &r, Operation::Mkdir, &p.display(), result, started, |_| String::new()).await
}

pub async fn remove(st: &AppState, caller: &Caller, run_id: &str, raw: &str) -> Result<()> {
    let p = path(raw)?;
    if p.is_root() {
        return Err(WorkspaceError::BadPath("The workspace root cannot be removed.".into()));
    }
    let mut r = resolve(st, caller, run_id).await?;
    let started = Instant::now();
    let result = if is_state(&r) {
        mutate_document(st, &r, |d| d.remove(&p)).await
    } else {
        let abs = p.absolute();
        on_session(st, &mut r, |c, id| {
            let abs = abs.clone();
            async move { c.remove(&id, &abs).await }
        })
        .await
    };
    recorded(st, &r, Operation::Remove, &p.display(), result, started, |_| String::new()).await
}

/// A question, not an operation: not recorded.
pub async fn stat(st: &AppState, caller: &Caller, run_id: &str, raw: &str) -> Result<Entry> {
    let p = path(raw)?;
    let mut r = resolve(st, caller, run_id).await?;
    if is_state(&r) {
        return read_document(st, &r).await.and_then(|d| d.stat(&p));
    }
    let abs = p.absolute();
    let e = on_session(st, &mut r, |c, id| {
        let abs = abs.clone();
        async move { c.stat(&id, &abs).await }
    })
    .await?;
    Ok(Entry { name: e.name, path: p.relative().to_string(), is_dir: e.is_dir, size: e.size })
}

/// What to execute: an argv, or a command line for `/bin/sh -c`.
pub struct ExecInput {
    pub argv: Option<Vec<String>>,
    pub command: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub env: std::collections::BTreeMap<String, String>,
}

pub async fn exec(st: &AppState, caller: &Caller, run_id: &str, input: ExecInput) -> Result<ExecResult> {
    let argv = match (input.argv, input.command) {
        (Some(a), None) if !a.is_empty() && !a[0].is_empty() => a,
        (None, Some(c)) if !c.trim().is_empty() => vec!["/bin/sh".into(), "-c".into(), c],
        _ => {
            return Err(WorkspaceError::BadPath(
                "Send either `argv` (a program and its arguments) or `command` (a shell line).".into(),
            ))
        }
    };
    if argv.iter().any(|a| a.contains('\0')) {
        return Err(WorkspaceError::BadPath("A command cannot contain a NUL byte.".into()));
    }
    let timeout = input.timeout_seconds.unwrap_or(EXEC_TIMEOUT_DEFAULT);
    if timeout == 0 || timeout > EXEC_TIMEOUT_MAX {
        return Err(WorkspaceError::BadPath(format!("The timeout is 1 to {EXEC_TIMEOUT_MAX} seconds.")));
    }
    for name in input.env.keys() {
        let mut chars = name.chars();
        if !chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(WorkspaceError::BadPath(format!("`{name}` is not an environment variable name.")));
        }
    }
    let mut r = resolve(st, caller, run_id).await?;
    if is_state(&r) {
        return Err(WorkspaceError::NoCommands);
    }
    if !r.agent.shell_enabled {
        return Err(WorkspaceError::Refused("This agent's shell is switched off in its sandbox settings.".into()));
    }
    let target = shell_join(&argv);
    let started = Instant::now();
    let env = input.env;
    let result = on_session(st, &mut r, |c, id| {
        let mut req = RunRequest::new(argv.clone()).timeout(Duration::from_secs(timeout));
        for (k, v) in &env {
            req = req.env(k.clone(), v.clone());
        }
        async move { c.run(&id, &req).await }
    })
    .await
    .map(|o| ExecResult {
        stdout: o.stdout,
        stderr: o.stderr,
        exit_code: o.exit_code,
        timed_out: o.timed_out,
        output_limited: o.output_limited,
    });
    recorded(st, &r, Operation::Execute, &target, result, started, |o| {
        if o.timed_out {
            "timed out".into()
        } else if o.output_limited {
            "output limit".into()
        } else {
            format!("exit {}", o.exit_code.unwrap_or(-1))
        }
    })
    .await
}

/// The command as people read it: `/bin/sh -c` lines as the line, argv words quoted when needed.
fn shell_join(argv: &[String]) -> String {
    if argv.len() == 3 && argv[0] == "/bin/sh" && argv[1] == "-c" {
        return argv[2].clone();
    }
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The workspace's state for this run, from our rows only (never a host call).
pub async fn state(st: &AppState, caller: &Caller, run_id: &str) -> Result<(Resolved, WorkspaceState)> {
    ensure_caller(caller)?;
    // Read fresh: this is what people and runtimes check, not a hot path.
    state_in_org(st, &caller.org_id, run_id).await
}

/// The state of a run's workspace for someone allowed to see the run's conversation (checked by
/// the caller of this function, e.g. a member of it); confined to `org_id`, never a host call.
pub async fn state_in_org(st: &AppState, org_id: &str, run_id: &str) -> Result<(Resolved, WorkspaceState)> {
    let r = resolve_in(st, org_id, run_id).await?;
    let s = r.workspace.state;
    Ok((r, s))
}

/// The runtime a run resolves to and its briefing paragraph (none for an alias the catalog does
/// not ship, and none for a document workspace).
pub async fn briefing(st: &AppState, caller: &Caller, run_id: &str) -> Result<(Option<String>, Option<String>)> {
    let r = resolve(st, caller, run_id).await?;
    if is_state(&r) {
        return Ok((None, None));
    }
    let runtime = r
        .agent
        .runtime
        .clone()
        .or_else(|| r.connection.as_ref().and_then(|c| c.default_runtime.clone()))
        .unwrap_or_else(|| st.catalog.default_runtime().alias.clone());
    let text = st.catalog.briefing(&runtime);
    Ok((Some(runtime), text))
}

/// Ends a run: its operations are committed, a `run`-scoped session is purged, and a lost
/// reference is forgotten so the next turn starts fresh.
pub async fn finish(st: &AppState, caller: &Caller, run_id: &str) -> Result<Run> {
    ensure_caller(caller)?;
    st.resolve_cache.forget_run(&caller.org_id, run_id);
    st.recorder.flush_run(run_id).await;
    let mut c = st.db.conn().await?;
    let run = agents::get_run(&mut c, &caller.org_id, run_id)
        .await?
        .ok_or_else(|| WorkspaceError::NotFound("There is no such run.".into()))?;
    drop(c);
    if let Ok(r) = resolve_in(st, &caller.org_id, run_id).await {
        st.resolve_cache.forget_workspace(&r.workspace.id);
        let mut c = st.db.conn().await?;
        if r.workspace.state == WorkspaceState::Lost && r.workspace.lost_run_id.as_deref() == Some(run_id) {
            store::forget_ref(&mut c, &r.workspace.id, db::now_ms()).await?;
        } else if r.agent.scope == Scope::Run && r.workspace.state != WorkspaceState::NotOpened {
            if is_state(&r) {
                store::clear_document(&mut c, &r.workspace.id, db::now_ms()).await?;
            } else if let Some(reference) = &r.workspace.session_ref {
                let client = client_of(st, &r).await?;
                match client.delete_session(reference, true).await {
                    Ok(()) | Err(SandboxdError::NotFound { .. }) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, workspace_id = %r.workspace.id, "purging a finished run's session failed")
                    }
                }
            }
            store::forget_ref(&mut c, &r.workspace.id, db::now_ms()).await?;
        }
    }
    let mut c = st.db.conn().await?;
    agents::finish_run(&mut c, &caller.org_id, run_id, db::now_ms()).await?;
    let run = agents::get_run(&mut c, &caller.org_id, run_id).await?.unwrap_or(run);
    Ok(run)
}

#[cfg(test)]
mod tests {
    #[test]
    fn commands_are_shown_as_people_type_them() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(super::shell_join(&v(&["/bin/sh", "-c", "cat a | wc -l"])), "cat a | wc -l");
        assert_eq!(super::shell_join(&v(&["cat", "my file.txt"])), "cat 'my file.txt'");
        assert_eq!(super::shell_join(&v(&["echo", "it's"])), "echo 'it'\\''s'");
    }
}
