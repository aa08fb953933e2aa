//! A newcomer's Getting started on the home page: the first steps the caller's role takes, each
//! marked done once the organization has what it makes (a host, an agent, a run, a second member,
//! a live API token), so the list says what is left rather than repeating itself.

use super::store::Made;
use crate::access::Role;

/// One step; the page words and links each by its `id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// `host`, `agent`, `run`, `team` or `token`.
    pub id: &'static str,
    pub done: bool,
}

/// The steps `role` takes, in order.
#[derive(Debug, Clone)]
pub struct GettingStarted {
    pub steps: Vec<Step>,
}

impl GettingStarted {
    pub fn for_role(role: Role, made: &Made) -> Self {
        let mut steps = Vec::new();
        if role.can_manage_connections() {
            steps.push(Step { id: "host", done: made.connections > 0 });
        }
        if role.can_edit_agents() {
            steps.push(Step { id: "agent", done: made.agents > 0 });
        }
        steps.push(Step { id: "run", done: made.runs > 0 });
        if role.can_manage_members() {
            steps.push(Step { id: "team", done: made.members > 1 });
            steps.push(Step { id: "token", done: made.live_tokens > 0 });
        }
        GettingStarted { steps }
    }

    pub fn done(&self) -> usize {
        self.steps.iter().filter(|s| s.done).count()
    }

    pub fn all_done(&self) -> bool {
        self.steps.iter().all(|s| s.done)
    }

    /// The count above the list: "2 of 5 done." or, once all are, "All 5 steps are done."
    pub fn summary(&self) -> String {
        match (self.all_done(), self.steps.len()) {
            (true, 1) => "Done.".to_string(),
            (true, n) => format!("All {n} steps are done."),
            (false, n) => format!("{} of {n} done.", self.done()),
        }
    }

    /// The first step not done: the page marks it "Next".
    pub fn next(&self) -> Option<&'static str> {
        self.steps.iter().find(|s| !s.done).map(|s| s.id)
    }
}

#[cfg(test)]
mod tests {
    use super::{GettingStarted, Made, Role};

    #[test]
    fn each_role_sees_its_own_steps_and_what_is_done() {
        let made = Made { connections: 1, agents: 0, runs: 0, members: 1, live_tokens: 0 };
        let owner = GettingStarted::for_role(Role::Owner, &made);
        let ids: Vec<_> = owner.steps.iter().map(|s| s.id).collect();
        assert_eq!(ids, ["host", "agent", "run", "team", "token"]);
        assert_eq!((owner.done(), owner.next(), owner.all_done()), (1, Some("agent"), false));
        assert_eq!(owner.summary(), "1 of 5 done.");
        let member = GettingStarted::for_role(Role::Member, &made);
        assert_eq!(member.steps.iter().map(|s| s.id).collect::<Vec<_>>(), ["run"]);
        assert_eq!(member.summary(), "0 of 1 done.");
        let all = Made { connections: 2, agents: 1, runs: 5, members: 2, live_tokens: 1 };
        let owner = GettingStarted::for_role(Role::Owner, &all);
        assert_eq!((owner.done(), owner.next(), owner.all_done()), (5, None, true));
        assert_eq!(owner.summary(), "All 5 steps are done.");
        assert_eq!(GettingStarted::for_role(Role::Member, &all).summary(), "Done.");
    }
}
