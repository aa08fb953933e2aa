//! A bench's command-line flags (`cargo bench --bench NAME -- --flag value`): the words after the
//! program name, one at a time, and the value a flag takes. `cargo bench` passes `--bench` too,
//! which a bench passes over like any word it does not know.
#![allow(dead_code)]

pub struct Flags(std::iter::Skip<std::env::Args>);

impl Flags {
    pub fn from_env() -> Flags {
        Flags(std::env::args().skip(1))
    }

    /// The word after flag `name`.
    pub fn value(&mut self, name: &str) -> String {
        self.0.next().unwrap_or_else(|| panic!("{name} takes a value"))
    }

    /// The number after flag `name`, at least `min`.
    pub fn number(&mut self, name: &str, min: u64) -> u64 {
        let word = self.value(name);
        word.parse::<u64>().unwrap_or_else(|_| panic!("{name} takes a positive number, not {word:?}")).max(min)
    }
}

impl Iterator for Flags {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        self.0.next()
    }
}
