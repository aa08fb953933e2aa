//! Whose files a run's workspace holds (docs/design.md §7): the subject each scope names in the
//! session key, and the runs a scope refuses. A scope whose subject is missing is refused naming
//! the scope, never widened; the `user` scope belongs to the signed-in person, so a widget
//! visitor's run and a trigger's run get none (unless the trigger runs as its creator).

use super::error::WorkspaceError;
use super::key::Subject;
use crate::agents::model::{Run, StartedBy};
use crate::vocabulary::scope::Scope;

/// The subject of a session key, owned: an id, or an identity hashed with the agent id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySubject {
    /// A run, conversation or agent id.
    Id(String),
    /// A channel, a person or a channel sender.
    Identity(String),
}

/// What a scope makes of a run: the key's subject, and whose workspace it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub subject: KeySubject,
    /// The person a `user` workspace belongs to.
    pub user_id: Option<String>,
    /// The channel sender a `user` workspace of a channel run belongs to (its platform id).
    pub sender: Option<String>,
}

impl Owner {
    fn of(subject: KeySubject) -> Owner {
        Owner { subject, user_id: None, sender: None }
    }

    /// The subject as [`super::key::session_key`] takes it.
    pub fn key_subject<'a>(&'a self, agent_id: &'a str) -> Subject<'a> {
        match &self.subject {
            KeySubject::Id(id) => Subject::Id(id),
            KeySubject::Identity(identity) => Subject::Hashed { agent_id, identity },
        }
    }
}

fn refused(message: &str) -> WorkspaceError {
    WorkspaceError::Refused(message.to_string())
}

/// The owner of `run`'s workspace under `scope`; `channel_key` is its conversation's channel.
pub fn owner(scope: Scope, run: &Run, agent_id: &str, channel_key: Option<&str>) -> Result<Owner, WorkspaceError> {
    match scope {
        Scope::Run => Ok(Owner::of(KeySubject::Id(run.id.clone()))),
        Scope::Agent => Ok(Owner::of(KeySubject::Id(agent_id.to_string()))),
        Scope::Conversation => match &run.conversation_id {
            Some(id) => Ok(Owner::of(KeySubject::Id(id.clone()))),
            None => Err(refused("The conversation scope needs a conversation, and this run has none.")),
        },
        Scope::Channel => match channel_key {
            Some(key) => Ok(Owner::of(KeySubject::Identity(key.to_string()))),
            None => Err(refused("The channel scope needs a channel, and this run's conversation has none.")),
        },
        Scope::User => user_owner(run),
    }
}

/// The `user` scope: the person the run acts for, or the channel sender it came from.
fn user_owner(run: &Run) -> Result<Owner, WorkspaceError> {
    let person = |u: &String| Owner {
        subject: KeySubject::Identity(format!("user:{u}")),
        user_id: Some(u.clone()),
        sender: None,
    };
    match (run.started_by, &run.user_id, &run.channel_sender) {
        (StartedBy::Member | StartedBy::Api, Some(u), _) => Ok(person(u)),
        (StartedBy::Trigger, Some(u), _) if run.trigger_as_creator => Ok(person(u)),
        (StartedBy::Channel, _, Some(sender)) => Ok(Owner {
            subject: KeySubject::Identity(format!("channel-sender:{sender}")),
            user_id: None,
            sender: Some(sender.clone()),
        }),
        (StartedBy::Widget, _, _) => Err(refused(
            "The user scope belongs to a signed-in person; a widget visitor's run gets no user workspace.",
        )),
        (StartedBy::Trigger, _, _) => Err(refused(
            "The user scope belongs to a signed-in person; a trigger's run gets no user workspace unless it runs as its creator.",
        )),
        _ => Err(refused("The user scope needs the person this run acts for, and it names none.")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AGENT: &str = "a9e71234-0000-4000-8000-000000000001";

    fn run(started_by: StartedBy) -> Run {
        Run {
            id: "run-1".into(),
            agent_id: AGENT.into(),
            conversation_id: Some("conv-1".into()),
            started_by,
            user_id: None,
            user_name: None,
            agent_name: None,
            trigger_as_creator: false,
            channel_sender: None,
            status: "running".into(),
            workspace_opened: false,
            created_at: 0,
            finished_at: None,
            workspace_error: None,
            recovery_workspace_id: None,
            manifest: None,
        }
    }

    fn by(user: &str, started_by: StartedBy) -> Run {
        Run { user_id: Some(user.into()), ..run(started_by) }
    }

    fn refusal(r: Result<Owner, WorkspaceError>) -> String {
        match r {
            Err(WorkspaceError::Refused(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn run_conversation_and_agent_scopes_name_their_id() {
        let r = run(StartedBy::Member);
        let subject = |scope| owner(scope, &r, AGENT, None).expect("owner").subject;
        assert_eq!(subject(Scope::Run), KeySubject::Id("run-1".into()));
        assert_eq!(subject(Scope::Conversation), KeySubject::Id("conv-1".into()));
        assert_eq!(subject(Scope::Agent), KeySubject::Id(AGENT.into()));
    }

    #[test]
    fn the_conversation_scope_without_a_conversation_is_refused_naming_it() {
        let r = Run { conversation_id: None, ..run(StartedBy::Api) };
        assert!(refusal(owner(Scope::Conversation, &r, AGENT, None)).contains("conversation scope"));
    }

    #[test]
    fn the_channel_scope_hashes_the_channel_and_needs_one() {
        let r = run(StartedBy::Channel);
        let o = owner(Scope::Channel, &r, AGENT, Some("slack:C42")).expect("owner");
        assert_eq!(o.subject, KeySubject::Identity("slack:C42".into()));
        assert!(matches!(o.key_subject(AGENT), Subject::Hashed { agent_id: AGENT, identity: "slack:C42" }));
        assert!(refusal(owner(Scope::Channel, &r, AGENT, None)).contains("channel scope"));
    }

    #[test]
    fn the_user_scope_belongs_to_the_person_a_member_or_api_run_acts_for() {
        for started_by in [StartedBy::Member, StartedBy::Api] {
            let o = owner(Scope::User, &by("u-1", started_by), AGENT, None).expect("owner");
            assert_eq!(o.subject, KeySubject::Identity("user:u-1".into()));
            assert_eq!(o.user_id.as_deref(), Some("u-1"));
        }
        let nobody = refusal(owner(Scope::User, &run(StartedBy::Member), AGENT, None));
        assert!(nobody.contains("names none"), "{nobody}");
    }

    #[test]
    fn a_channel_runs_user_workspace_belongs_to_its_sender() {
        let r = Run { channel_sender: Some("U123".into()), ..run(StartedBy::Channel) };
        let o = owner(Scope::User, &r, AGENT, Some("slack:C42")).expect("owner");
        assert_eq!(o.subject, KeySubject::Identity("channel-sender:U123".into()));
        assert_eq!((o.user_id, o.sender.as_deref()), (None, Some("U123")));
    }

    #[test]
    fn a_widget_visitor_gets_no_user_workspace() {
        let m = refusal(owner(Scope::User, &by("publisher", StartedBy::Widget), AGENT, None));
        assert!(m.contains("widget"), "{m}");
    }

    #[test]
    fn a_trigger_gets_a_user_workspace_only_as_its_creator() {
        let m = refusal(owner(Scope::User, &by("creator", StartedBy::Trigger), AGENT, None));
        assert!(m.contains("trigger") && m.contains("as its creator"), "{m}");
        let as_creator = Run { trigger_as_creator: true, ..by("creator", StartedBy::Trigger) };
        let o = owner(Scope::User, &as_creator, AGENT, None).expect("owner");
        assert_eq!(o.subject, KeySubject::Identity("user:creator".into()));
        assert_eq!(o.user_id.as_deref(), Some("creator"));
    }

    #[test]
    fn scopes_other_than_user_name_no_person() {
        let r = by("u-1", StartedBy::Member);
        for scope in [Scope::Run, Scope::Conversation, Scope::Channel, Scope::Agent] {
            let o = owner(scope, &r, AGENT, Some("slack:C42")).expect("owner");
            assert_eq!((o.user_id, o.sender), (None, None), "{scope:?}");
        }
    }
}
