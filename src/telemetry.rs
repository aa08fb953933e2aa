//! Logging: structured (text or JSON) lines, one span per request carrying its request id.
//! Nothing secret is ever a field: tokens, passwords and secret values are never logged.

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// Installs the global subscriber writing to `writer`. A second call is a no-op (tests).
pub fn init<W>(log: &LogConfig, writer: W)
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_new(&log.filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let registry = tracing_subscriber::registry().with(filter);
    let _ = match log.format {
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_writer(writer),
            )
            .try_init(),
        LogFormat::Text => {
            registry.with(tracing_subscriber::fmt::layer().with_ansi(false).with_writer(writer)).try_init()
        }
    };
}

/// Runs CPU-heavy work (argon2) off the async threads, keeping the current span.
pub async fn spawn_blocking<F, R>(f: F) -> anyhow::Result<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let span = tracing::Span::current();
    Ok(tokio::task::spawn_blocking(move || span.in_scope(f)).await?)
}
