//! The `agenticos` command line: `serve` (default), `migrate`, `admin create-owner`.

use std::io::BufRead;

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
                                      --password-stdin a one-time password is printed
    agenticos help                    this text

Configuration comes from the environment; see README.md.";

/// Runs the command line; returns the process exit code.
pub async fn run(args: Vec<String>) -> i32 {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("agenticos: {e}");
            return 2;
        }
    };
    let words: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let result = match words.as_slice() {
        [] | ["serve"] => serve(config).await,
        ["migrate"] => migrate(config).await,
        ["admin", "create-owner", rest @ ..] => create_owner(config, rest).await,
        ["help"] | ["--help"] | ["-h"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => {
            eprintln!("agenticos: unknown command `{}`\n\n{USAGE}", words.join(" "));
            return 2;
        }
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("agenticos: {e:#}");
            1
        }
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    crate::telemetry::init(&config.log, std::io::stdout);
    let bind = config.http.bind;
    let app = Application::build(config).await?;
    let state = app.state();
    startup::spawn_sweeps(state.clone());
    crate::sandbox::recording::spawn_flusher(state.clone());
    tracing::info!(address = %bind, "agenticos is serving; open http://{bind}/ in a browser");
    app.run_until_stopped().await?;
    // Operations buffered since the last flush are committed before the process ends.
    state.recorder.flush_all().await;
    Ok(())
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
    crate::telemetry::init(&config.log, std::io::stderr);
    let email = flag(rest, "--email").ok_or_else(|| anyhow::anyhow!("--email is required"))?;
    let org = flag(rest, "--organization").ok_or_else(|| anyhow::anyhow!("--organization is required"))?;
    let (password, generated) = if rest.contains(&"--password-stdin") {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        (line.trim_end_matches(['\r', '\n']).to_string(), false)
    } else {
        (crate::auth::secrets::one_time_password(), true)
    };
    let state = startup::AppState::build(config).await?;
    match crate::auth::service::create_owner(&state.db, email, SecretString::from(password.clone()), org).await {
        Ok(org_id) => {
            println!("owner {email} created in organization {org} ({org_id})");
            if generated {
                println!("one-time password (shown once): {password}");
            }
            Ok(())
        }
        Err(crate::auth::service::AuthError::Invalid(f)) => {
            let lines: Vec<String> = f.0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
            anyhow::bail!("{}", lines.join("; "))
        }
        Err(e) => Err(e.into()),
    }
}
