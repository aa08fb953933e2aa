//! Outgoing mail: one plain-text message at a time over SMTP (lettre), for password-reset links.
//! The SMTP URL may hold a password: it lives in the configuration as a secret and no message,
//! log line or error here repeats it.

use std::sync::Arc;
use std::time::Duration;

use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Body, Mailbox, Message};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

/// How long one SMTP conversation may take, connecting included.
const SMTP_TIMEOUT: Duration = Duration::from_secs(20);

/// Why `AGENTICOS_SMTP_URL` is refused, in words that do not repeat it (it may hold a password).
pub fn check_smtp_url(raw: &str) -> Result<(), String> {
    let url = url::Url::parse(raw)
        .map_err(|_| "not a URL like smtp://mail.example.com or smtps://user:password@mail.example.com".to_string())?;
    if !matches!(url.scheme(), "smtp" | "smtps") {
        return Err(format!("the scheme `{}` is neither smtp nor smtps", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("the URL names no host".to_string());
    }
    let tls = url.query_pairs().find(|(k, _)| k == "tls").map(|(_, v)| v.into_owned());
    if url.scheme() == "smtp" && !matches!(tls.as_deref(), None | Some("required" | "opportunistic")) {
        return Err("`tls` must be `required` (STARTTLS) or `opportunistic`".to_string());
    }
    AsyncSmtpTransport::<Tokio1Executor>::from_url(raw)
        .map(|_| ())
        .map_err(|_| "the URL could not be read as an SMTP server's (check the user name and password encoding)".into())
}

/// Sends mail through the configured SMTP server.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Mailer {
    /// The mailer of `smtp_url` (`AGENTICOS_SMTP_URL`) sending as `from` (`AGENTICOS_MAIL_FROM`).
    pub fn new(smtp_url: &str, from: &str) -> anyhow::Result<Arc<Mailer>> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp_url)
            .map_err(|_| anyhow::anyhow!("AGENTICOS_SMTP_URL could not be read as an SMTP server's URL"))?
            .timeout(Some(SMTP_TIMEOUT))
            .build();
        let from = from.parse().map_err(|_| anyhow::anyhow!("AGENTICOS_MAIL_FROM is not an address"))?;
        Ok(Arc::new(Mailer { transport, from }))
    }

    /// Sends one plain-text message to `to`. The error says what failed, not the server's URL.
    pub async fn send(&self, to: &str, subject: &str, text: String) -> anyhow::Result<()> {
        let to: Mailbox = to.parse().map_err(|_| anyhow::anyhow!("the recipient is not a mail address"))?;
        // Seven-bit where the text allows it, so that a link arrives as written.
        let body = Body::new_with_encoding(text, ContentTransferEncoding::SevenBit).unwrap_or_else(Body::new);
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(subject)
            .header(ContentType::TEXT_PLAIN)
            .body(body)?;
        self.transport.send(message).await.map_err(|e| anyhow::anyhow!("the SMTP server refused or failed: {e}"))?;
        Ok(())
    }
}
