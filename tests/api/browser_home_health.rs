//! Issue 49 in real Chromium, at 1280 and 390 px: Home's "Is everything OK?" reads the host's last
//! known state as the background check keeps it. A killed host is named without anyone opening the
//! Connections page, and stays named on every reload; once it is back, Home says yes again. axe
//! finds no serious or critical violation on Home in either state and width.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::browser::{self, Browser};
use crate::browser_axe::violations;
use crate::db_test;
use crate::peer::{Peer, PeerOptions};
use crate::support::browser_sign_in::sign_in;
use crate::support::Org;

/// Reloads Home until `script` is true of it, within `within`.
async fn home_until(b: &Browser, base: &str, what: &str, script: &str, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        b.goto(&format!("{base}/")).await?;
        b.wait_for("#health-verdict").await?;
        if b.client.execute(script, vec![]).await? == Value::Bool(true) {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "Home never showed {what}: {}", b.text("#everything-ok").await?);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

db_test! {
    async fn home_names_a_killed_host_from_the_background_check_and_says_yes_once_it_is_back(app: TestApp)
        settings(&[("AGENTICOS_HOST_CHECK_SECONDS", "1")]) -> anyhow::Result<()>
    {
        if !browser::browser_or_skip("home_names_a_killed_host_from_the_background_check_and_says_yes_once_it_is_back") {
            return Ok(());
        }
        let mut peer = Peer::start(PeerOptions::default()).await?;
        let o = Org::new(&app).await;
        let id = o.connect(&peer).await;
        agenticos::startup::spawn_host_checks(app.state.clone());
        let b = Browser::start().await?;
        b.client.set_window_size(1280, 900).await?;
        sign_in(&b, &app.address).await?;
        let base = app.address.clone();
        let yes = "return document.querySelector('#health-verdict').textContent.trim().startsWith('Yes')";
        home_until(&b, &base, "yes", yes, Duration::from_secs(20)).await?;

        peer.stop_now();
        // Named from its last known state (not only beside its capacity card), nobody having
        // opened the Connections page.
        let named = format!(
            "return document.querySelector('#health-verdict').textContent.includes('Not quite') \
             && !!document.querySelector('#health-connection-{id}') && !document.querySelector('#health-unreadable-{id}') \
             && document.querySelector('#health-hosts').textContent.includes('1 no answer')"
        );
        home_until(&b, &base, "the host named", &named, Duration::from_secs(20)).await?;
        assert!(b.text(&format!("#health-connection-{id}")).await?.contains("answer"));
        let mut bad = Vec::new();
        for (width, height) in [(1280, 900), (390, 844)] {
            b.client.set_window_size(width, height).await?;
            home_until(&b, &base, "the host still named", &named, Duration::from_secs(5)).await?;
            bad.extend(violations(&b, &base, &format!("owner at {width} px, host down:"), "/").await?);
        }

        peer.start_again().await?;
        home_until(&b, &base, "yes once the host is back", yes, Duration::from_secs(20)).await?;
        for (width, height) in [(390, 844), (1280, 900)] {
            b.client.set_window_size(width, height).await?;
            bad.extend(violations(&b, &base, &format!("owner at {width} px, host back:"), "/").await?);
        }
        assert!(bad.is_empty(), "axe found:\n{}", bad.join("\n"));
        b.close().await
    }
}
