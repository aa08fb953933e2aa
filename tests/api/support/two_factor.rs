//! An authenticator app for the tests: the secret read from the enrolment page (its base32 text),
//! and codes of it, each of a step after the last one used (the console accepts a code once, and
//! only for a later step than the last it took).

use totp_rs::{Algorithm, Secret, TOTP};

pub(crate) struct App {
    totp: TOTP,
    last: u64,
}

fn now_step() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs() / 30
}

impl App {
    /// The app after scanning the secret `base32` (as the enrolment page shows it).
    pub(crate) fn of(base32: &str) -> App {
        let secret = Secret::Encoded(base32.trim().to_string()).to_bytes().expect("a base32 secret");
        let totp = TOTP::new(Algorithm::SHA1, 6, 1, 30, secret, None, "test".to_string()).expect("totp");
        App { totp, last: 0 }
    }

    /// The code of `step`.
    pub(crate) fn code_at(&self, step: u64) -> String {
        self.totp.generate(step * 30)
    }

    /// The step now.
    pub(crate) fn now_step(&self) -> u64 {
        now_step()
    }

    /// A code the console takes now: of this step or the next (its skew allows one either side;
    /// the step before could pass while the request travels), after the last one used. Two fit
    /// in one step's time; a third waits (bounded) for the next step.
    pub(crate) async fn next_code(&mut self) -> String {
        let step = now_step().max(self.last + 1);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(65);
        while step > now_step() + 1 {
            assert!(std::time::Instant::now() < deadline, "the clock did not reach step {step}");
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        self.last = step;
        self.code_at(step)
    }
}
