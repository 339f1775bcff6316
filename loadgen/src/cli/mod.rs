//! Command-line options (clap derive) and their validation into a [`Plan`]: what to run, on which nodes.
//!
//! - [`options`]: the options as clap parses them ([`Options`], `--scenario`, `--runtime`) and
//!   [`one_line`] for clap's errors;
//! - [`plan`]: [`Options::plan`], the checks, and the [`Plan`] they produce.

pub mod options;
pub mod plan;
#[cfg(test)]
mod tests;

pub use options::{one_line, Options, Persistence, RuntimeKind, ScenarioKind, Server};
pub use plan::{NodeSource, Plan, DEFAULT_ENGINES, MAX_PROCESSES};
