//! The `agenticos` command line: `serve` (default), `migrate`, `admin create-owner`,
//! `admin create-token`, `admin reset-password`, `sandbox-runtimes`, `sandbox-token`, `doctor`, `sweep`, `backup`,
//! `docker-proxy`, `healthcheck`, `--version`.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use secrecy::SecretString;

use crate::config::Config;
use crate::startup::{self, Application};

pub const USAGE: &str = "\
agenticos — the sandbox control plane

USAGE:
    agenticos [serve]                 run the console and API (default)
    agenticos migrate                 apply database migrations and exit
    agenticos admin create-owner --email EMAIL --organization NAME [--password-stdin]
                                      create an owner and an organization; without
                                      --password-stdin a new account gets a one-time
                                      password (printed once), and its first sign-in
                                      must choose its own
    agenticos admin create-token --organization ORG --role ROLE --name NAME [--description TEXT]
                                 [--email EMAIL]
                                      create an API token in organization ORG (its name or
                                      id) and print it once. It is created by EMAIL, who must
                                      be an owner or admin there (default: the organization's
                                      first owner), can carry no role above theirs, and is
                                      in the audit log as created on the command line
    agenticos admin reset-password --email EMAIL [--link] [--clear-2fa]
                                      the way back for a locked-out account (a sole owner
                                      without mail): print a one-time password (shown once;
                                      the first sign-in with it chooses a new one), or with
                                      --link a reset link on AGENTICOS_PUBLIC_URL (works once,
                                      for an hour). Every sign-in of the account ends, its
                                      lock-out ends, and the audit log records it. With
                                      --clear-2fa its two-factor sign-in is switched off too
                                      (a lost phone and lost recovery codes)
    agenticos sandbox-runtimes [--write | --check] [--repo DIR]
                                      print the SANDBOXD_RUNTIMES value the sandboxd hosts
                                      need (from the runtime catalog); --write rewrites it in
                                      every compose file of the repository, --check exits 1
                                      naming each compose file that has drifted. The
                                      repository is DIR, or the parent of AGENTICOS_CATALOG_DIR
    agenticos sandbox-token [--env-file PATH]
                                      write a new random SANDBOXD_TOKEN to the env file docker
                                      compose reads (default ./.env), once; refuses when the
                                      file already has one. The token is not printed
    agenticos doctor                  check every registered connection: reachable,
                                      credential present and accepted, runtimes allowed,
                                      routes present; exits 1 when one is unhealthy
    agenticos sweep [--orphans [--purge]]
                                      run the sweeps once: the operation log's retention
                                      (rows older than OPERATION_RETENTION_DAYS), sandbox-destroy-retry (every due
                                      tombstone: destroy the removed sandbox, or schedule the
                                      next attempt) and expired sign-ins; exits 1 while a
                                      tombstone waits, due or not. --orphans instead
                                      lists each organization's host sessions that no
                                      workspace, tombstone or open names and that were idle
                                      AGENTICOS_ORPHAN_MIN_AGE_SECONDS (600); --purge purges
                                      them, each decided again under the claim an open takes
                                      (audited). Exits 1 when something failed
    agenticos backup --to FILE        copy the SQLite database, consistently, while the console
                                      serves, into FILE (a new file: an existing one is never
                                      written over); on PostgreSQL it says to use pg_dump.
                                      Back up the vault key too (docs/operating.md, Backups)
    agenticos docker-proxy --listen ADDR [--engine SOCKET]
                                      pass only the console's Docker read calls (container
                                      list, inspect, stats) from ADDR (host:port or a socket
                                      path) to the engine at SOCKET (default
                                      /var/run/docker.sock); everything else is refused with
                                      403. Point DOCKER_HOST of the console at ADDR
    agenticos healthcheck             ask this machine's console (AGENTICOS_BIND's port) for
                                      /readyz: exit 0 when it answers 200, 1 otherwise (the
                                      container's health check: the image has no curl)
    agenticos --version               print the version
    agenticos help                    this text

Configuration comes from the environment; see docs/operating.md (Configuration).";

/// Runs the command line; returns the process exit code.
pub async fn run(args: Vec<String>) -> i32 {
    if matches!(args.get(1).map(String::as_str), Some("--version" | "version")) && args.len() == 2 {
        println!("agenticos {}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("agenticos: {e}");
            return 2;
        }
    };
    let words: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let result = match words.as_slice() {
        [] | ["serve"] => serve(config).await.map(|()| 0),
        ["migrate"] => migrate(config).await.map(|()| 0),
        ["admin", "create-owner", rest @ ..] => create_owner(config, rest).await.map(|()| 0),
        ["admin", "create-token", rest @ ..] => {
            match Flags::parse(rest, &[], &["--organization", "--role", "--name", "--description", "--email"]) {
                Ok(flags) => create_token(config, &flags).await.map(|()| 0),
                Err(e) => return usage_error(&e),
            }
        }
        ["admin", "reset-password", rest @ ..] => match Flags::parse(rest, &["--link", "--clear-2fa"], &["--email"]) {
            Ok(flags) => reset_password(config, &flags).await.map(|()| 0),
            Err(e) => return usage_error(&e),
        },
        ["sandbox-runtimes", rest @ ..] => match Flags::parse(rest, &["--write", "--check"], &["--repo"]) {
            Ok(flags) => sandbox_runtimes(&config, &flags),
            Err(e) => return usage_error(&e),
        },
        ["sandbox-token", rest @ ..] => match Flags::parse(rest, &[], &["--env-file"]) {
            Ok(flags) => sandbox_token(&flags).map(|()| 0),
            Err(e) => return usage_error(&e),
        },
        ["doctor"] => doctor(config).await,
        ["healthcheck"] => Ok(healthcheck(&config).await),
        ["backup", rest @ ..] => match Flags::parse(rest, &[], &["--to"]) {
            Ok(flags) => match flags.value("--to") {
                Some(to) => backup(config, Path::new(to)).await.map(|()| 0),
                None => return usage_error("backup needs --to FILE"),
            },
            Err(e) => return usage_error(&e),
        },
        ["docker-proxy", rest @ ..] => match Flags::parse(rest, &[], &["--listen", "--engine"]) {
            Ok(flags) => match docker_proxy_options(&flags) {
                Ok((listen, engine)) => docker_proxy(config, listen, engine).await.map(|()| 0),
                Err(e) => return usage_error(&e),
            },
            Err(e) => return usage_error(&e),
        },
        ["sweep", rest @ ..] => match Flags::parse(rest, &["--orphans", "--purge"], &[]) {
            Ok(flags) if flags.has("--purge") && !flags.has("--orphans") => {
                return usage_error("--purge goes with --orphans")
            }
            Ok(flags) => sweep(config, flags.has("--orphans"), flags.has("--purge")).await,
            Err(e) => return usage_error(&e),
        },
        ["help"] | ["--help"] | ["-h"] => {
            println!("{USAGE}");
            Ok(0)
        }
        _ => return usage_error(&format!("unknown command `{}`", words.join(" "))),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("agenticos: {e:#}");
            1
        }
    }
}

fn usage_error(message: &str) -> i32 {
    eprintln!("agenticos: {message}\n\n{USAGE}");
    2
}

/// A command's flags: switches (`--write`) and flags with a value (`--repo DIR`). Anything else is
/// a usage error.
struct Flags<'a> {
    switches: Vec<&'a str>,
    values: Vec<(&'a str, &'a str)>,
}

impl<'a> Flags<'a> {
    fn parse(rest: &[&'a str], switches: &[&str], valued: &[&str]) -> Result<Flags<'a>, String> {
        let mut flags = Flags { switches: Vec::new(), values: Vec::new() };
        let mut words = rest.iter();
        while let Some(word) = words.next() {
            if switches.contains(word) {
                flags.switches.push(word);
            } else if valued.contains(word) {
                let value = words.next().ok_or_else(|| format!("{word} needs a value"))?;
                flags.values.push((word, value));
            } else {
                return Err(format!("unknown argument `{word}`"));
            }
        }
        Ok(flags)
    }

    fn has(&self, switch: &str) -> bool {
        self.switches.contains(&switch)
    }

    fn value(&self, name: &str) -> Option<&'a str> {
        self.values.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    crate::telemetry::init(&config.log, std::io::stdout);
    let bind = config.http.bind;
    let app = Application::build(config).await?;
    let state = app.state();
    startup::spawn_sweeps(state.clone());
    startup::spawn_destroy_retry(state.clone());
    startup::spawn_host_checks(state.clone());
    startup::spawn_operation_sweep(state.clone());
    startup::spawn_search_indexing(state.clone());
    tracing::info!(address = %bind, "agenticos is serving; open http://{bind}/ in a browser");
    app.run_until_stopped().await?;
    // Every acknowledged operation is committed before its answer; this waits for the in-flight ones.
    state.recorder.flush_all().await;
    // And moved into the log from SQLite's inbox, so the file holds it where every reader looks.
    if let Err(e) = state.log.index_search().await {
        tracing::error!(error = %e, event = "operations_not_moved", "failed to move the operation log's inbox at shutdown");
    }
    Ok(())
}

/// `GET /readyz` of the console on this machine (the port of `AGENTICOS_BIND`, on loopback when it
/// binds every address): 0 when it answers 200 within 5 seconds, else 1, with why on stderr.
async fn healthcheck(config: &Config) -> i32 {
    let mut address = config.http.bind;
    if address.ip().is_unspecified() {
        address.set_ip(if address.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    let url = format!("http://{address}/readyz");
    let answer = match reqwest::Client::builder().no_proxy().timeout(std::time::Duration::from_secs(5)).build() {
        Ok(client) => client.get(&url).send().await,
        Err(e) => Err(e),
    };
    match answer {
        Ok(r) if r.status().is_success() => 0,
        Ok(r) => {
            eprintln!("agenticos: {url} answered {}", r.status());
            1
        }
        Err(e) => {
            eprintln!("agenticos: {url} did not answer: {e}");
            1
        }
    }
}

async fn migrate(config: Config) -> anyhow::Result<()> {
    crate::telemetry::init(&config.log, std::io::stderr);
    let db = crate::db::Db::connect(&config.database.url, 2).await?;
    db.migrate().await?;
    println!("migrations applied");
    Ok(())
}

fn flag<'a>(rest: &[&'a str], name: &str) -> Option<&'a str> {
    rest.iter().position(|w| *w == name).and_then(|i| rest.get(i + 1).copied())
}

async fn create_owner(config: Config, rest: &[&str]) -> anyhow::Result<()> {
    use crate::auth::service as auth;
    crate::telemetry::init(&config.log, std::io::stderr);
    let email = flag(rest, "--email").ok_or_else(|| anyhow::anyhow!("--email is required"))?;
    let org = flag(rest, "--organization").ok_or_else(|| anyhow::anyhow!("--organization is required"))?;
    let state = startup::AppState::build(config).await?;
    // A password read from stdin is the person's own; otherwise a one-time password is issued,
    // and whoever signs in with it must choose their own first.
    let result = if rest.contains(&"--password-stdin") {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        let password = SecretString::from(line.trim_end_matches(['\r', '\n']).to_string());
        auth::create_owner(&state.db, email, password, org)
            .await
            .map(|org_id| auth::OwnerCreated { org_id, one_time_password: None })
    } else {
        auth::create_owner_with_one_time_password(&state.db, email, org).await
    };
    match result {
        Ok(created) => {
            println!("owner {email} created in organization {org} ({})", created.org_id);
            match created.one_time_password {
                Some(password) => {
                    println!("one-time password (shown once): {password}");
                    println!("at the first sign-in with it, {email} chooses their own password");
                }
                None if !rest.contains(&"--password-stdin") => {
                    println!("{email} already had an account: its password is unchanged");
                }
                None => {}
            }
            Ok(())
        }
        Err(crate::auth::error::AuthError::Invalid(f)) => {
            let lines: Vec<String> = f.0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
            anyhow::bail!("{}", lines.join("; "))
        }
        Err(e) => Err(e.into()),
    }
}

/// `admin create-token`: an API token created by an owner or admin of the organization, printed once.
async fn create_token(config: Config, flags: &Flags<'_>) -> anyhow::Result<()> {
    crate::telemetry::init(&config.log, std::io::stderr);
    let required = |name: &str| flags.value(name).ok_or_else(|| anyhow::anyhow!("{name} is required"));
    let (org, role, name) = (required("--organization")?, required("--role")?, required("--name")?);
    let state = startup::AppState::build(config).await?;
    let fields = |f: crate::validate::FieldErrors| {
        let lines: Vec<String> = f.0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
        anyhow::anyhow!("{}", lines.join("; "))
    };
    let caller = match crate::orgs::service::command_line_caller(&state.db, org, flags.value("--email")).await {
        Ok(c) => c,
        Err(crate::orgs::error::OrgError::Invalid(f)) => return Err(fields(f)),
        Err(e) => return Err(e.into()),
    };
    let input = crate::tokens::service::NewToken {
        name: name.to_string(),
        role: role.to_string(),
        description: flags.value("--description").unwrap_or_default().to_string(),
    };
    match crate::tokens::service::create(&state.db, &caller, input).await {
        Ok(created) => {
            let t = &created.token;
            println!("token “{}” ({}) created in {} by {}", t.name, t.role, caller.org_name, caller.email);
            println!("API token (shown once): {}", created.value);
            Ok(())
        }
        Err(crate::tokens::error::TokenError::Invalid(f)) => Err(fields(f)),
        Err(e) => Err(e.into()),
    }
}

/// `admin reset-password`: a one-time password or a reset link for an account, printed once.
async fn reset_password(config: Config, flags: &Flags<'_>) -> anyhow::Result<()> {
    use crate::auth::admin_reset::{self, Way};
    crate::telemetry::init(&config.log, std::io::stderr);
    let email = flags.value("--email").ok_or_else(|| anyhow::anyhow!("--email is required"))?;
    let way = if flags.has("--link") {
        let public_url = config.http.public_url.clone();
        Way::Link(Box::new(move |token: &str| crate::web::paths::password_reset_link(&public_url, token)))
    } else {
        Way::OneTimePassword
    };
    let db = crate::db::Db::connect(&config.database.url, 2).await?;
    db.migrate().await?;
    let result = admin_reset::reset_password(&db, email, way, flags.has("--clear-2fa")).await;
    db.close().await;
    match result {
        Ok(done) => {
            let ended = crate::words::count(done.sessions_ended as usize, "sign-in", "sign-ins");
            if flags.has("--link") {
                println!("reset link for {} (works once, within the next hour): {}", done.email, done.secret);
                println!("whoever opens it chooses the new password; {ended} ended");
            } else {
                println!("one-time password for {} (shown once): {}", done.email, done.secret);
                println!("at the first sign-in with it, {} chooses their own password; {ended} ended", done.email);
            }
            if flags.has("--clear-2fa") {
                match done.two_factor_cleared {
                    true => println!("two-factor sign-in of {} is off; they may enrol again", done.email),
                    false => println!("two-factor sign-in of {} was off already", done.email),
                }
            }
            Ok(())
        }
        Err(crate::auth::error::AuthError::Invalid(f)) => {
            let lines: Vec<String> = f.0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
            anyhow::bail!("{}", lines.join("; "))
        }
        Err(e) => Err(e.into()),
    }
}

/// `sandbox-runtimes`: print, write or check the `SANDBOXD_RUNTIMES` value of the catalog.
fn sandbox_runtimes(config: &Config, flags: &Flags<'_>) -> anyhow::Result<i32> {
    use crate::catalog::{repo, RuntimeCatalog, RUNTIMES_VARIABLE};
    if flags.has("--write") && flags.has("--check") {
        anyhow::bail!("choose one of --write and --check");
    }
    // The repository: --repo, or the parent of the catalog directory.
    let (root, catalog_dir) = match flags.value("--repo") {
        Some(repo) => (PathBuf::from(repo), Path::new(repo).join("catalog")),
        None => {
            let dir = &config.sandboxd.catalog_dir;
            let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            (parent.to_path_buf(), dir.clone())
        }
    };
    let value = RuntimeCatalog::load(catalog_dir.join("sandbox_runtimes.json"))?.sandboxd_runtimes_value();

    if flags.has("--check") {
        let problems = repo::compose_drift_problems(&root, &value);
        if problems.is_empty() {
            println!("every compose file in {} matches the catalog", root.display());
            return Ok(0);
        }
        for problem in problems {
            eprintln!("{problem}");
        }
        return Ok(1);
    }
    if flags.has("--write") {
        let files = repo::compose_files(&root)?;
        if files.is_empty() {
            anyhow::bail!("{}", repo::no_compose_file(&root));
        }
        // Every file is read and rewritten in memory first: one that cannot be fixed leaves all as they were.
        let mut rewrites = Vec::new();
        for file in files {
            let text =
                std::fs::read_to_string(&file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
            let rewritten = repo::rewrite_compose(&text, &value);
            if repo::compose_drift(&rewritten, &value) {
                anyhow::bail!(
                    "{} sets no {} for --write to replace; add `{}: ''` to its sandboxd service first",
                    file.display(),
                    RUNTIMES_VARIABLE,
                    RUNTIMES_VARIABLE
                );
            }
            rewrites.push((file, text, rewritten));
        }
        for (file, text, rewritten) in rewrites {
            if rewritten == text {
                println!("{}: already up to date", file.display());
            } else {
                std::fs::write(&file, rewritten)
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
                println!("{}: {} rewritten", file.display(), RUNTIMES_VARIABLE);
            }
        }
        return Ok(0);
    }
    println!("{value}");
    Ok(0)
}

/// `sandbox-token`: write a new `SANDBOXD_TOKEN` to the env file, once. The token is not shown.
fn sandbox_token(flags: &Flags<'_>) -> anyhow::Result<()> {
    use crate::sandbox::env_file::{self, TokenWritten, TOKEN_VARIABLE};
    let path = PathBuf::from(flags.value("--env-file").unwrap_or("./.env"));
    let how = match env_file::write_token(&path)? {
        TokenWritten::Created => "created it with mode 0600",
        TokenWritten::Appended => "appended a line",
        TokenWritten::Filled => "filled in its empty line",
    };
    println!(
        "wrote a new {TOKEN_VARIABLE} to {} ({how}); it is not shown here. docker compose passes it to sandboxd \
         and the app: run `docker compose up -d` to start them with it.",
        path.display()
    );
    if env_file::is_readable_by_others(&path) {
        eprintln!("warning: other users can read {0}; run `chmod 600 {0}`", path.display());
    }
    Ok(())
}

/// `doctor`: check every registered connection; 1 when one is unhealthy.
/// `agenticos sweep`: the sweeps once, or the orphans (listed, or purged).
async fn sweep(config: Config, orphans: bool, purge: bool) -> anyhow::Result<i32> {
    crate::telemetry::init(&config.log, std::io::stderr);
    let window = config.auth.login_window_minutes;
    let state = startup::AppState::build(config).await?;
    if !orphans {
        let days = state.config.sandboxd.operation_retention_days;
        let n = crate::sandbox::operations::sweep::sweep(&state.log, days, crate::db::now_ms()).await?;
        println!("operation log: deleted {n} rows older than {days} days");
        let report = crate::sandbox::tombstones::sweep::sweep(&state, crate::db::now_ms()).await?;
        println!(
            "sandbox-destroy-retry: {} destroyed, {} still pending (retried later), {} in use by a live workspace \
             (not destroyed), {} being opened (retried later)",
            report.destroyed, report.failed, report.retired, report.deferred
        );
        let claims =
            crate::sandbox::workspaces::claims::delete_expired(&mut *state.db.conn().await?, crate::db::now_ms())
                .await?;
        println!("session claims: {claims} expired removed");
        let snapshots = crate::sandbox::snapshots::service::sweep(&state, crate::db::now_ms()).await?;
        println!("snapshots of deleted workspaces: {snapshots} deleted from the store");
        let expired = crate::auth::service::sweep(&state.db, window).await?;
        println!("sign-ins: {expired} expired removed");
        // A tombstone not yet due is a sandbox that may still run (and bill) at its provider:
        // a script running the sweep learns of it from the exit code, not only from a failure now.
        let (waiting, next) = crate::sandbox::tombstones::service::waiting_everywhere(&state).await?;
        if waiting > 0 {
            let when = next.map(crate::words::utc_time).unwrap_or_default();
            println!(
                "sandbox-destroy-retry: {} still to destroy (next attempt {when})",
                crate::words::count(waiting as usize, "sandbox", "sandboxes")
            );
        }
        return Ok(if report.failed > 0 || waiting > 0 { 1 } else { 0 });
    }
    let found = crate::sandbox::running::orphans::everywhere(&state).await?;
    for p in &found.problems {
        println!("not read: {p}");
    }
    for o in &found.orphans {
        println!("orphaned: {} / {} / {}", o.organization, o.connection_name, o.session_id);
    }
    println!("{} orphaned", crate::words::count(found.orphans.len(), "session", "sessions"));
    let mut failed = !found.problems.is_empty();
    if purge {
        let done = crate::sandbox::running::orphans::purge(&state, &found.orphans).await?;
        for s in &done.spared {
            println!("spared: {s}");
        }
        for p in &done.problems {
            println!("not purged: {p}");
        }
        println!("{} purged", done.purged);
        failed |= !done.problems.is_empty();
    }
    Ok(if failed { 1 } else { 0 })
}

async fn doctor(config: Config) -> anyhow::Result<i32> {
    crate::telemetry::init(&config.log, std::io::stderr);
    let state = startup::AppState::build(config).await?;
    let report = crate::sandbox::doctor::run(&state).await?;
    print!("{}", report.render());
    Ok(if report.is_healthy() { 0 } else { 1 })
}

/// `backup --to FILE`: the SQLite database copied, and what else to keep.
async fn backup(config: Config, to: &Path) -> anyhow::Result<()> {
    crate::telemetry::init(&config.log, std::io::stderr);
    let done = crate::backup::backup(&config, to).await?;
    println!("backed up {} to {} ({} bytes, a consistent copy)", done.database.display(), to.display(), done.bytes);
    println!("keep the vault key with it ({}): without it the vault's secrets cannot be read", done.vault_key);
    if let Some(dir) = done.snapshots {
        println!("workspace snapshots are files in {}: copy that folder too", dir.display());
    }
    Ok(())
}

/// `docker-proxy`'s `--listen` (required) and `--engine` (default `/var/run/docker.sock`).
fn docker_proxy_options(flags: &Flags<'_>) -> Result<(crate::docker_proxy::Listen, PathBuf), String> {
    use crate::docker_proxy::{socket_path, Listen, DEFAULT_ENGINE};
    let listen = Listen::parse(flags.value("--listen").ok_or("docker-proxy needs --listen ADDR")?)?;
    let engine = flags.value("--engine").unwrap_or(DEFAULT_ENGINE);
    let engine = socket_path(engine).ok_or_else(|| format!("--engine `{engine}` is not an absolute socket path"))?;
    Ok((listen, engine))
}

async fn docker_proxy(config: Config, listen: crate::docker_proxy::Listen, engine: PathBuf) -> anyhow::Result<()> {
    crate::telemetry::init(&config.log, std::io::stderr);
    crate::docker_proxy::serve(listen, &engine).await
}
