//! The breakdown's figure, one per arm beside the markdown: a bar per key (and the rest)
//! for its mean delta against the base, its 95 % interval as a whisker, then the keys' sum
//! and the step's own delta, so that a reader sees where the time moved and whether it adds
//! up.

use super::svg::{file_part, plot_err, rows_area, rows_chart, span};
use crate::analysis::breakdown::{BreakdownArm, Interval};
use crate::reading::Reading;
use plotters::prelude::*;
use std::path::Path;

const MORE: RGBColor = RGBColor(214, 39, 40);
const LESS: RGBColor = RGBColor(31, 119, 180);
const SUM: RGBColor = RGBColor(90, 90, 90);

/// One bar: its label, mean and interval.
struct Bar {
    label: String,
    interval: Interval,
    /// The closure's bars are drawn grey.
    closure: bool,
}

/// Draws every arm's figure into `dir` as `STEM_<ladder>_<tag>_breakdown_<arm>.svg`: per
/// report, per arm of its breakdown, the file name (none for a report without one).
pub fn draw(reading: &Reading, dir: &Path, stem: &str) -> anyhow::Result<Vec<Vec<String>>> {
    let mut names = Vec::new();
    for r in &reading.reports {
        let mut files = Vec::new();
        for a in r.breakdown.iter().flat_map(|b| &b.arms) {
            let name = format!(
                "{stem}_{}_{}_breakdown_{}.svg",
                file_part(r.ladder.as_deref().unwrap_or("")),
                file_part(r.tag.as_deref().unwrap_or("")),
                file_part(&a.arm)
            );
            let value = r.breakdown.as_ref().map_or("", |b| b.value.as_str());
            let title = format!(
                "{}: {} against {} ({value})",
                r.ladder.as_deref().unwrap_or("?"),
                a.arm,
                a.against
            );
            bars_svg(&dir.join(&name), &title, &bars(a))?;
            files.push(name);
        }
        names.push(files);
    }
    Ok(names)
}

fn bars(a: &BreakdownArm) -> Vec<Bar> {
    let key = |label: String, l: &crate::analysis::breakdown::KeyLine| Bar {
        label,
        interval: Interval {
            estimate: l.delta,
            ci_low: l.delta_ci_low,
            ci_high: l.delta_ci_high,
            n: l.n,
        },
        closure: false,
    };
    let mut bars: Vec<Bar> = a
        .keys
        .iter()
        .filter(|l| !l.folded)
        .map(|l| key(l.key.clone(), l))
        .collect();
    bars.extend(
        a.rest
            .iter()
            .map(|l| key(format!("rest ({} keys)", l.keys.unwrap_or(0)), l)),
    );
    bars.push(Bar {
        label: "keys' sum".into(),
        interval: a.closure.keys_sum,
        closure: true,
    });
    bars.extend(a.closure.total.map(|t| Bar {
        label: "the step".into(),
        interval: t,
        closure: true,
    }));
    bars
}

fn bars_svg(path: &Path, title: &str, bars: &[Bar]) -> anyhow::Result<()> {
    let err = plot_err(path);
    let n = bars.len().max(1);
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    let root = rows_area(path, &labels, 460, 26)?;
    let values = bars.iter().flat_map(|b| {
        let i = &b.interval;
        [i.ci_low, i.ci_high, i.estimate]
    });
    let (lo, hi) = span(values);
    let x_desc =
        "mean delta against the base and its 95 % interval (positive: the arm spends more)";
    let mut chart = rows_chart(&root, path, title, &labels, lo..hi, x_desc)?;
    for (i, bar) in bars.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        let v = bar.interval.estimate;
        if !v.is_finite() {
            continue;
        }
        let colour = match (bar.closure, v > 0.0) {
            (true, _) => SUM,
            (false, true) => MORE,
            (false, false) => LESS,
        };
        chart
            .draw_series([Rectangle::new(
                [(0.0, y - 0.3), (v, y + 0.3)],
                colour.mix(0.7).filled(),
            )])
            .map_err(&err)?;
        let (l, h) = (bar.interval.ci_low, bar.interval.ci_high);
        if l.is_finite() && h.is_finite() {
            let whisker = PathElement::new(vec![(l, y), (h, y)], BLACK.stroke_width(2));
            let caps = [l, h].map(|x| {
                PathElement::new(vec![(x, y - 0.15), (x, y + 0.15)], BLACK.stroke_width(2))
            });
            chart
                .draw_series([whisker].into_iter().chain(caps))
                .map_err(&err)?;
        }
    }
    root.present().map_err(&err)?;
    Ok(())
}
