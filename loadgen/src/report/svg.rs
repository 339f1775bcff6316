//! The `--out` latency-percentile plot, written by hand: one panel per scenario, every engine's acquire
//! latency on it. x is the percentile on the usual "nines" scale (0 %, 90 %, 99 %, 99.9 %, 99.99 %),
//! y the latency on a log scale. The ceiling has no latency curve (redis-benchmark reports throughput).

use std::fmt::Write;

use hdrhistogram::Histogram;

use crate::engines::EngineKind;

use super::record::Report;

const WIDTH: f64 = 960.0;
const PANEL: f64 = 360.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 160.0;
const TOP: f64 = 48.0;
const BOTTOM: f64 = 48.0;
/// Nines shown on x: up to 99.99 %.
const NINES: f64 = 4.0;
const STEPS: usize = 160;

fn color(engine: EngineKind) -> &'static str {
    match engine {
        EngineKind::Redlock => "#d62728",
        EngineKind::RedlockFred => "#ff7f0e",
        EngineKind::Rslock => "#1f77b4",
        EngineKind::Raw => "#2ca02c",
        EngineKind::Ceiling => "#7f7f7f",
    }
}

/// One run's acquire latency on a panel: colour by engine, dashed for plain backoff.
struct Curve<'a> {
    engine: EngineKind,
    label: String,
    dashed: bool,
    h: &'a Histogram<u64>,
}

/// The SVG document.
pub fn render(report: &Report) -> String {
    let panels: Vec<_> = report
        .scenarios
        .iter()
        .map(|s| {
            let curves: Vec<Curve<'_>> = report
                .runs
                .iter()
                .filter(|r| r.scenario.id == s.id)
                .filter_map(|r| {
                    r.acquire.as_ref().filter(|h| !h.is_empty()).map(|h| Curve {
                        engine: r.engine,
                        label: r.label(),
                        dashed: r.waiting == Some(crate::engines::Waiting::Plain),
                        h,
                    })
                })
                .collect();
            (s.label.as_str(), curves)
        })
        .collect();
    let height = panels.len().max(1) as f64 * PANEL;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (i, (label, curves)) in panels.iter().enumerate() {
        panel(&mut svg, i as f64 * PANEL, label, curves);
    }
    svg.push_str("</svg>\n");
    svg
}

fn panel(svg: &mut String, top: f64, label: &str, curves: &[Curve<'_>]) {
    let (x0, x1) = (LEFT, WIDTH - RIGHT);
    let (y0, y1) = (top + TOP, top + PANEL - BOTTOM);
    let _ = writeln!(
        svg,
        r#"<text x="{x0}" y="{}" font-size="15" font-weight="bold">Acquire latency by percentile — {}</text>"#,
        top + 28.0,
        escape(label)
    );
    // y range: whole decades around every curve's min and p99.99.
    let lo = curves
        .iter()
        .map(|c| c.h.min().max(1) as f64)
        .fold(f64::INFINITY, f64::min);
    let hi = curves
        .iter()
        .map(|c| c.h.value_at_quantile(0.9999).max(1) as f64)
        .fold(0.0, f64::max);
    let (lo, hi) = if curves.is_empty() {
        (1.0, 1000.0)
    } else {
        (lo, hi)
    };
    let d_lo = lo.log10().floor();
    let d_hi = (hi.log10().ceil()).max(d_lo + 1.0);
    let sx = |x: f64| x0 + (x / NINES) * (x1 - x0);
    let sy = |us: f64| y1 - ((us.max(1.0).log10() - d_lo) / (d_hi - d_lo)) * (y1 - y0);

    let _ = writeln!(
        svg,
        r##"<rect x="{x0}" y="{y0}" width="{}" height="{}" fill="none" stroke="#444"/>"##,
        x1 - x0,
        y1 - y0
    );
    for d in (d_lo as i32)..=(d_hi as i32) {
        let y = sy(10f64.powi(d));
        let _ = writeln!(
            svg,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#ddd"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            x0 - 6.0,
            y + 4.0,
            decade(d)
        );
    }
    for (n, name) in ["0%", "90%", "99%", "99.9%", "99.99%"].iter().enumerate() {
        let x = sx(n as f64);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#ddd"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{x:.1}" y="{}" text-anchor="middle">{name}</text>"#,
            y1 + 18.0
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">percentile</text>"#,
        (x0 + x1) / 2.0,
        y1 + 36.0
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate({},{}) rotate(-90)" text-anchor="middle">acquire latency</text>"#,
        x0 - 58.0,
        (y0 + y1) / 2.0
    );
    for (n, curve) in curves.iter().enumerate() {
        let h = curve.h;
        let dash = if curve.dashed {
            r#" stroke-dasharray="6,4""#
        } else {
            ""
        };
        let points: Vec<String> = (0..=STEPS)
            .map(|i| {
                let x = NINES * i as f64 / STEPS as f64;
                let q = 1.0 - 10f64.powf(-x);
                format!("{:.1},{:.1}", sx(x), sy(h.value_at_quantile(q) as f64))
            })
            .collect();
        let c = color(curve.engine);
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="{}"/>"#,
            points.join(" ")
        );
        let ly = y0 + 16.0 + n as f64 * 20.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{c}" stroke-width="3"{dash}/>"#,
            x1 + 14.0,
            x1 + 38.0
        );
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}">{}</text>"#,
            x1 + 44.0,
            ly + 4.0,
            escape(&curve.label)
        );
    }
    if curves.is_empty() {
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">no latency data</text>"#,
            (x0 + x1) / 2.0,
            (y0 + y1) / 2.0
        );
    }
}

fn decade(d: i32) -> &'static str {
    match d {
        i32::MIN..=0 => "1µs",
        1 => "10µs",
        2 => "100µs",
        3 => "1ms",
        4 => "10ms",
        5 => "100ms",
        6 => "1s",
        7 => "10s",
        _ => "100s",
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
