//! One connection's section of the Running tab, for every host kind: its card, its name and
//! state, its counts, its problem or its rows. The kind supplies only its words and names
//! ([`SectionHtml`]) and what it alone has (a host shared with another connection, a policy
//! page); the partial (`_section.html`) is written once.

/// How the page names a kind's section (scripts and tests find sections by them).
pub struct SectionHtml {
    /// The section's id before the connection's id (`host-`, `daytona-`).
    pub id_prefix: &'static str,
    /// The section's classes beyond `card host`.
    pub class: &'static str,
    /// A badge beside the connection's name naming the kind; none for the kind shown first.
    pub badge: Option<&'static str>,
    /// The table's class.
    pub table_class: &'static str,
    /// What the section lists none of: `No {nothing} of {organization} on {place}.`
    pub nothing: &'static str,
    pub place: &'static str,
}

/// What a host kind's section shows beyond the fields every kind's has (`connection_id`,
/// `connection_name`, `is_enabled`, `problem`, `counts_words()`).
pub trait Section {
    const HTML: SectionHtml;

    /// [`Self::HTML`], for the partial.
    fn html(&self) -> &SectionHtml {
        &Self::HTML
    }

    /// Another connection of this organization that reaches the same host, listed first.
    fn same_host(&self) -> Option<&str> {
        None
    }

    /// The host's policy page, for a kind whose host has one.
    fn policy_path(&self) -> Option<String> {
        None
    }
}
