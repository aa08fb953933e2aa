//! The address rules of docs/design.md §6: `http(s)`, names a host, carries no credentials, and is
//! never a link-local or cloud-metadata address — checked on the text and again on what a name
//! resolves to, before any request is sent.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use super::error::ConnectionError;
use crate::validate::FieldErrors;

/// Host names that answer with cloud credentials.
const METADATA_NAMES: [&str; 6] = [
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
    "metadata.azure.internal",
];

/// An address refused, as the form's field error.
pub fn invalid_address(message: impl Into<String>) -> ConnectionError {
    ConnectionError::Invalid(FieldErrors::one("address", message))
}

/// Parses and normalises an address (no trailing slash), or says what is wrong in words.
pub fn parse(raw: &str) -> Result<Url, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err("Enter the address of the sandbox service, like http://sandboxd:8080.".into());
    }
    if raw.len() > 2048 {
        return Err("An address has at most 2048 characters.".into());
    }
    let url = Url::parse(raw).map_err(|_| "Enter a full address starting with http:// or https://.".to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("The address must start with http:// or https://.".into());
    }
    let Some(host) = url.host() else {
        return Err("The address must name a host.".into());
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err("Leave credentials out of the address; pick a vault key instead.".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("The address cannot carry a query or fragment.".into());
    }
    match host {
        Host::Ipv4(ip) if is_forbidden_ip(IpAddr::V4(ip)) => return Err(forbidden_message()),
        Host::Ipv6(ip) if is_forbidden_ip(IpAddr::V6(ip)) => return Err(forbidden_message()),
        Host::Domain(d) if METADATA_NAMES.contains(&d.trim_end_matches('.').to_ascii_lowercase().as_str()) => {
            return Err(forbidden_message())
        }
        _ => {}
    }
    let mut normalised = url.clone();
    let path = normalised.path().trim_end_matches('/').to_string();
    normalised.set_path(&path);
    Ok(normalised)
}

fn forbidden_message() -> String {
    "This is a link-local or cloud-metadata address; a sandbox host is never there.".into()
}

/// The text form the product stores and compares: no trailing slash.
pub fn display(url: &Url) -> String {
    url.as_str().trim_end_matches('/').to_string()
}

/// An address as stored, normalised the way a new one is (scheme and host lower-case, a default
/// port dropped, no trailing slash): what two registrations of one host have in common. A stored
/// address that no longer parses is compared as written, trimmed.
pub fn normalised(stored: &str) -> Option<String> {
    match parse(stored) {
        Ok(url) => Some(display(&url)),
        Err(_) => Some(stored.trim().trim_end_matches('/').to_string()).filter(|s| !s.is_empty()),
    }
}

pub fn is_forbidden_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_forbidden_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_forbidden_v4(v4);
            }
            // fe80::/10 link-local, and AWS's IPv6 metadata address fd00:ec2::254.
            (v6.segments()[0] & 0xffc0) == 0xfe80 || v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
        }
    }
}

fn is_forbidden_v4(ip: Ipv4Addr) -> bool {
    // 169.254.0.0/16 (link-local, incl. 169.254.169.254) and Alibaba's 100.100.100.200.
    ip.is_link_local() || ip == Ipv4Addr::new(100, 100, 100, 200)
}

/// Resolves the host and refuses when any address it names is forbidden (a DNS name pointing at
/// the metadata service). An unresolvable name is left to the request, which reports it.
pub async fn check_resolved(url: &Url) -> Result<(), String> {
    let Some(Host::Domain(name)) = url.host() else {
        return Ok(());
    };
    let port = url.port_or_known_default().unwrap_or(80);
    if let Ok(addrs) = tokio::net::lookup_host((name.to_string(), port)).await {
        for a in addrs {
            if is_forbidden_ip(a.ip()) {
                return Err(forbidden_message());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_addresses_are_normalised() {
        assert_eq!(display(&parse("http://sandboxd:8080/").expect("ok")), "http://sandboxd:8080");
        assert_eq!(display(&parse(" https://sbx.example.com/base/ ").expect("ok")), "https://sbx.example.com/base");
        assert!(parse("http://10.0.0.5:8080").is_ok());
        assert!(parse("http://[::1]:8080").is_ok());
    }

    #[test]
    fn other_schemes_and_missing_hosts_are_refused() {
        for bad in ["", "sandboxd:8080", "ftp://host", "file:///etc/passwd", "http://", "unix:/var/run/docker.sock"] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn credentials_queries_and_fragments_are_refused() {
        assert!(parse("http://user:pw@host:8080").is_err_and(|m| m.contains("credentials")));
        assert!(parse("http://user@host:8080").is_err());
        assert!(parse("http://host:8080/?token=x").is_err());
        assert!(parse("http://host:8080/#x").is_err());
    }

    #[test]
    fn link_local_and_metadata_addresses_are_refused_in_every_spelling() {
        for bad in [
            "http://169.254.169.254/",
            "http://169.254.1.1:8080",
            "http://2852039166/",
            "http://0xa9fea9fe/",
            "http://[fe80::1]:8080",
            "http://[::ffff:169.254.169.254]/",
            "http://[fd00:ec2::254]/",
            "http://100.100.100.200/",
            "http://metadata.google.internal/",
            "http://METADATA.google.internal./",
        ] {
            assert!(parse(bad).is_err_and(|m| m.contains("link-local")), "{bad:?} accepted");
        }
    }
}
