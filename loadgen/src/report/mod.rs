//! The results of a whole invocation and every way they are written out.
//!
//! - [`record`]: the data: [`RunRecord`] per run, [`ContentionRow`], the whole [`Report`], its
//!   [`Testbed`] (the election scenario's record has one too);
//! - [`format`]: numbers and phrases every renderer writes the same way.
//! - [`ratios`]: redlock against each other engine, per scenario; the goals, checked.
//! - [`table`]: the text table on stdout.
//! - [`json`]: the `--json` document (its schema is the structs in that file, the contention part's
//!   included; its contract test in `json_tests`).
//! - [`markdown`]: the `--out` summary.
//! - [`svg`]: the `--out` latency-percentile plot.
//! - [`contention`]: the contention scenario's ratios, goals and table.
//! - `sample` (tests only): a small report with made-up numbers, for the renderers' tests.

pub mod contention;
pub mod format;
pub mod json;
pub mod markdown;
pub mod ratios;
pub mod record;
pub mod svg;
pub mod table;

#[cfg(test)]
mod sample;
#[cfg(test)]
pub(crate) use sample::sample;

use std::path::Path;

pub use format::{group, micros};
pub use record::{ContentionRow, Report, RunRecord, Testbed};

// The writers sit here, beside the renderers they call, so that `record` stays plain data that every
// renderer can name.
impl Report {
    /// Writes the Markdown summary, the SVG plot and the JSON document into `dir`.
    pub fn write_dir(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        write(
            &dir.join("summary.md"),
            &markdown::render(self, "latency.svg"),
        )?;
        write(&dir.join("latency.svg"), &svg::render(self))?;
        Ok(())
    }

    /// Writes the JSON document to `path`.
    pub fn write_json(&self, path: &Path) -> Result<(), String> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        write(path, &json::render(self))
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::EngineKind;

    #[test]
    fn ratios_and_goals_from_the_sample() {
        let r = sample();
        let all = ratios::ratios(&r);
        let b = all
            .iter()
            .find(|x| x.scenario == "b" && x.versus == EngineKind::Rslock)
            .unwrap();
        assert!((b.cycles_per_s.unwrap() - 3.0).abs() < 1e-9);
        assert!(b.acquire_p50.unwrap() < 0.5);
        let goals = ratios::goals(&r);
        assert_eq!(goals.len(), 7);
        let fair = goals.iter().find(|g| g.what == "fairness redlock").unwrap();
        assert_eq!(fair.met(), Some(true));
        let ceiling = goals.iter().find(|g| g.what.contains("ceiling")).unwrap();
        assert_eq!(ceiling.met(), Some(false)); // 10k vs 20k cycles/s
    }

    #[test]
    fn every_output_renders() {
        let r = sample();
        let svg = svg::render(&r);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(
            svg.matches("<polyline").count(),
            9,
            "3 engines with latency x 3 scenarios"
        );
        let md = markdown::render(&r, "latency.svg");
        assert!(md.contains("| redlock/rslock |") && md.contains("![acquire latency"));
        let text = table::render(&r);
        assert!(text.contains("redlock/raw") && text.contains("regression targets"));
        assert!(
            text.contains("servers: redis 7.0.15 on every node (5)"),
            "{text}"
        );
        assert!(text.contains("ceiling[native]") && text.contains("25,000"));
        assert!(text.contains("redlock/ceiling[native]"));
        assert!(md.contains("| ceiling[native] (DELIFEQ) | 25,000 |"));
        assert!(md.contains("- Servers: redis 7.0.15 on every node (5)"));
    }
}
