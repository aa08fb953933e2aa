//! Input rules shared by forms and the API.

use serde::Serialize;

use crate::db::{DbError, DbResult};

pub const NAME_MAX: usize = 100;
pub const EMAIL_MAX: usize = 254;
pub const PASSWORD_MIN: usize = 10;
pub const PASSWORD_MAX: usize = 1024;

/// A message tied to one input field.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct FieldError {
    /// The field as sent (`name`, `env.PATH`, `argv[1]`), or `body` for the body as a whole.
    pub field: String,
    /// What is wrong with it, in words a person reads.
    pub message: String,
}

/// The field errors of one submitted form or body.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct FieldErrors(pub Vec<FieldError>);

impl FieldErrors {
    pub fn new() -> Self {
        Self::default()
    }
    /// One message for one field.
    pub fn one(field: &str, message: impl Into<String>) -> Self {
        let mut errors = Self::new();
        errors.add(field, message);
        errors
    }
    pub fn add(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(FieldError { field: field.to_string(), message: message.into() });
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The first message for `field`, for inline display.
    pub fn get(&self, field: &str) -> Option<&str> {
        self.0.iter().find(|e| e.field == field).map(|e| e.message.as_str())
    }
    pub fn has(&self, field: &str) -> bool {
        self.get(field).is_some()
    }
    /// Whether the control of `field` takes the focus: the first field with a message when
    /// there are any (messages are filed in the form's order), else the form's own choice.
    pub fn autofocus(&self, field: &str, otherwise: impl Flag) -> bool {
        match self.0.first() {
            Some(first) => first.field == field,
            None => otherwise.flag(),
        }
    }
    pub fn into_result(self) -> Result<(), FieldErrors> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self)
        }
    }
}

/// A yes or no however many references a template wraps it in.
pub trait Flag {
    fn flag(&self) -> bool;
}

impl Flag for bool {
    fn flag(&self) -> bool {
        *self
    }
}

impl<T: Flag + ?Sized> Flag for &T {
    fn flag(&self) -> bool {
        (**self).flag()
    }
}

/// A trimmed, lower-cased e-mail address, or a message.
pub fn email(errors: &mut FieldErrors, field: &str, raw: &str) -> String {
    let v = raw.trim().to_ascii_lowercase();
    if v.is_empty() {
        errors.add(field, "Enter an e-mail address.");
    } else if v.chars().count() > EMAIL_MAX {
        errors.add(field, format!("An e-mail address has at most {EMAIL_MAX} characters."));
    } else {
        let mut parts = v.splitn(2, '@');
        let local = parts.next().unwrap_or_default();
        let domain = parts.next().unwrap_or_default();
        if local.is_empty()
            || domain.is_empty()
            || v.chars().any(|c| c.is_whitespace() || c.is_control())
            || domain.contains('@')
        {
            errors.add(field, "Enter an e-mail address like name@example.com.");
        }
    }
    v
}

/// A trimmed display name of 1 to 100 characters.
pub fn name(errors: &mut FieldErrors, field: &str, raw: &str, what: &str) -> String {
    let v = raw.trim().to_string();
    let a = article(what);
    let cap = capitalised(a);
    if v.is_empty() {
        errors.add(field, format!("Enter {a} {what}."));
    } else if v.chars().count() > NAME_MAX {
        errors.add(field, format!("{cap} {what} has at most {NAME_MAX} characters."));
    } else if v.chars().any(|c| c.is_control()) {
        errors.add(field, format!("{cap} {what} cannot contain control characters."));
    } else if v.chars().any(is_invisible) {
        errors.add(field, format!("{cap} {what} cannot contain invisible characters or text-direction overrides."));
    }
    v
}

/// The most characters a description (what an API token is for) has.
pub const DESCRIPTION_MAX: usize = 300;

/// An optional description, trimmed: at most [`DESCRIPTION_MAX`] characters on one line, no
/// control or invisible characters. `what` names it with its article, capitalised.
pub fn description(errors: &mut FieldErrors, field: &str, raw: &str, what: &str) -> String {
    let v = raw.trim().to_string();
    if v.chars().count() > DESCRIPTION_MAX {
        errors.add(field, format!("{what} has at most {DESCRIPTION_MAX} characters."));
    } else if v.chars().any(|c| c.is_control()) {
        errors.add(field, format!("{what} is one line: it cannot contain line breaks or other control characters."));
    } else if v.chars().any(is_invisible) {
        errors.add(field, format!("{what} cannot contain invisible characters or text-direction overrides."));
    }
    v
}

/// An identifier another system gives (a channel's key, a sender's platform id), already
/// trimmed: at most 200 characters, no control characters (CR, LF, NUL), no invisible ones
/// (as [`name`] refuses). `what` names it with its article, capitalised: "A channel key".
pub fn platform_id(errors: &mut FieldErrors, field: &str, v: &str, what: &str) {
    if v.chars().count() > 200 {
        errors.add(field, format!("{what} has at most 200 characters."));
    } else if v.chars().any(|c| c.is_control()) {
        errors.add(field, format!("{what} cannot contain control characters such as line breaks."));
    } else if v.chars().any(is_invisible) {
        errors.add(field, format!("{what} cannot contain invisible characters or text-direction overrides."));
    }
}

/// What a form shows when a name is taken in this organization; `thing` names the row with its
/// article: `A secret`, `An agent`.
pub fn name_taken(thing: &str) -> FieldErrors {
    FieldErrors::one("name", format!("{thing} with this name exists already in this organization."))
}

/// A write to a table whose names are unique per organization.
pub trait NameTaken<T> {
    /// A unique violation becomes [`name_taken`], wrapped by `invalid` (a capability's
    /// `Invalid` variant); any other error converts as usual.
    fn or_name_taken<E: From<DbError>>(self, thing: &str, invalid: fn(FieldErrors) -> E) -> Result<T, E>;
}

impl<T> NameTaken<T> for DbResult<T> {
    fn or_name_taken<E: From<DbError>>(self, thing: &str, invalid: fn(FieldErrors) -> E) -> Result<T, E> {
        match self {
            Err(DbError::Conflict { .. }) => Err(invalid(name_taken(thing))),
            other => Ok(other?),
        }
    }
}

/// Characters that change how the text around them reads without showing themselves: bidi
/// embeddings, overrides and isolates, direction marks, zero-width spaces and joiners, the BOM.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{200B}'..='\u{200F}' // zero-width space, non-joiner, joiner; LRM, RLM
        | '\u{202A}'..='\u{202E}' // LRE, RLE, PDF, LRO, RLO
        | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
        | '\u{2066}'..='\u{2069}' // LRI, RLI, FSI, PDI
        | '\u{061C}' // Arabic letter mark
        | '\u{FEFF}' // zero-width no-break space (BOM)
        | '\u{180E}' // Mongolian vowel separator
    )
}

/// "a" or "an" for a noun phrase, by its first letter (good enough for our own field names).
pub fn article(noun: &str) -> &'static str {
    match noun.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an",
        _ => "a",
    }
}

fn capitalised(a: &str) -> &'static str {
    if a == "an" {
        "An"
    } else {
        "A"
    }
}

pub fn new_password(errors: &mut FieldErrors, field: &str, raw: &str) {
    let n = raw.chars().count();
    if n < PASSWORD_MIN {
        errors.add(field, format!("Use at least {PASSWORD_MIN} characters."));
    } else if n > PASSWORD_MAX {
        errors.add(field, format!("Use at most {PASSWORD_MAX} characters."));
    }
}

pub fn role(errors: &mut FieldErrors, field: &str, raw: &str) -> Option<crate::orgs::model::Role> {
    let r = crate::orgs::model::Role::parse(raw);
    if r.is_none() {
        errors.add(field, "Choose one of: owner, admin, builder, operator, member.");
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_and_checked() {
        let mut e = FieldErrors::new();
        assert_eq!(email(&mut e, "email", "  Ada@Example.COM "), "ada@example.com");
        assert!(e.is_empty());
        for bad in ["", "no-at", "a@", "@b", "a b@c.d"] {
            let mut e = FieldErrors::new();
            email(&mut e, "email", bad);
            assert!(e.has("email"), "{bad:?} accepted");
        }
    }

    #[derive(Debug, PartialEq)]
    enum Outcome {
        Invalid(FieldErrors),
        Db,
    }

    impl From<DbError> for Outcome {
        fn from(_: DbError) -> Self {
            Outcome::Db
        }
    }

    #[test]
    fn a_unique_violation_is_a_taken_name_and_other_errors_pass() {
        let conflict: DbResult<()> = Err(DbError::Conflict { constraint: "name".into() });
        assert_eq!(
            conflict.or_name_taken("A secret", Outcome::Invalid),
            Err(Outcome::Invalid(FieldErrors::one(
                "name",
                "A secret with this name exists already in this organization."
            )))
        );
        let missing: DbResult<()> = Err(DbError::NotFound);
        assert_eq!(missing.or_name_taken("A secret", Outcome::Invalid), Err(Outcome::Db));
    }

    #[test]
    fn names_have_bounds() {
        let mut e = FieldErrors::new();
        name(&mut e, "name", &"x".repeat(101), "name");
        assert!(e.get("name").is_some_and(|m| m.contains("100")));
    }

    #[test]
    fn names_with_bidi_overrides_or_zero_width_characters_are_refused() {
        for bad in ["evil\u{202E}gnp.exe", "a\u{200B}b", "x\u{2066}y", "\u{FEFF}name"] {
            let mut e = FieldErrors::new();
            name(&mut e, "name", bad, "agent name");
            assert_eq!(
                e.get("name"),
                Some("An agent name cannot contain invisible characters or text-direction overrides."),
                "{bad:?}"
            );
        }
        let mut e = FieldErrors::new();
        assert_eq!(name(&mut e, "name", "  Zoë’s agent – 2 ", "agent name"), "Zoë’s agent – 2");
        assert!(e.is_empty());
    }

    #[test]
    fn messages_use_the_right_article() {
        let mut e = FieldErrors::new();
        name(&mut e, "organization", "", "organization name");
        assert_eq!(e.get("organization"), Some("Enter an organization name."));
        let mut e = FieldErrors::new();
        name(&mut e, "name", "", "token name");
        assert_eq!(e.get("name"), Some("Enter a token name."));
    }
}
