//! What the connection form says for a host kind: each kind's folder supplies one [`FormWords`]
//! (`hosts/<kind>/connections.rs`, reached through `hosts/dispatch/connections.rs`), and the form
//! (`_form.html`) is written once for every kind.

/// A piece of a sentence: plain words, or a name set in the mono font or as code.
pub enum Part {
    Text(&'static str),
    Mono(&'static str),
    Code(&'static str),
}

/// The connection form's labels, hints and placeholders for one host kind.
pub struct FormWords {
    /// Under the kind: what a host of this kind is and where its key goes.
    pub kind_hint: &'static [Part],
    /// The address field's label, placeholder and rule (its hint, after a note if any).
    pub address_label: &'static str,
    pub address_placeholder: &'static str,
    pub address_rule: &'static str,
    /// Whether the form offers the sandbox services this deployment's Docker engine runs.
    pub offers_discovered: bool,
    /// The credential group's legend and its warning (with the warning's classes).
    pub credential_legend: &'static str,
    pub credential_warning: &'static [Part],
    pub credential_warning_class: &'static str,
    /// The key list's first option: a key pasted now.
    pub paste_option: &'static str,
    /// The pasted key's label and hint.
    pub new_key_label: &'static str,
    pub new_key_hint: &'static [Part],
    /// The default runtime field's label.
    pub runtime_label: &'static str,
    /// For a kind whose runtimes are the provider's own names (typed, not the catalog's cards):
    /// the field's hint.
    pub typed_runtime_hint: Option<&'static str>,
    /// The probe button's words.
    pub probe_label: &'static str,
}
