//! Signing in through the real sign-in page of a [`Browser`].

use crate::browser::Browser;
use crate::helpers::{OWNER_EMAIL, OWNER_PASSWORD};

/// Opens `<base>/login` and submits `email` and `password`; where that lands is the caller's to
/// wait for (the console, or a page that asks for a new password).
pub(crate) async fn submit_sign_in(b: &Browser, base: &str, email: &str, password: &str) -> anyhow::Result<()> {
    b.goto(&format!("{base}/login")).await?;
    b.fill("#email", email).await?;
    b.fill("#password", password).await?;
    b.click("button[type=submit]").await
}

/// Signs in as `email` and waits for the console's navigation.
pub(crate) async fn sign_in_as(b: &Browser, base: &str, email: &str, password: &str) -> anyhow::Result<()> {
    submit_sign_in(b, base, email, password).await?;
    b.wait_for("nav.sidebar-nav").await?;
    Ok(())
}

/// Signs in as the owner (`setup_owner`'s) and waits for the console's navigation.
pub(crate) async fn sign_in(b: &Browser, base: &str) -> anyhow::Result<()> {
    sign_in_as(b, base, OWNER_EMAIL, OWNER_PASSWORD).await
}
