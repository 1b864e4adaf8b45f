//! SVG figures written beside the markdown: per metric, every arm's per-pass paired deltas
//! (one dot per pass, the median as a bar and its 95 % interval as a whisker); across
//! ladders, a forest plot of each quantity's estimate and interval per ladder.

use crate::reading::Reading;
use anyhow::anyhow;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// The figures of one report, by file name beside the markdown.
pub struct ReportFigures {
    /// Per report, per metric: the deltas figure.
    pub metrics: Vec<Vec<String>>,
    /// Per report, per metric: the scan figure (empty: none).
    pub scans: Vec<Vec<String>>,
    /// Per spec with replications: the forest plot.
    pub forests: Vec<(String, String)>,
}

/// Draws every figure of `reading` into `dir` as `STEM_<ladder>_<tag>_<metric>.svg`,
/// `…_scan.svg` and `STEM_across_<spec>.svg`; a disqualified ladder's figure says so in its title.
pub fn draw_report(reading: &Reading, dir: &Path, stem: &str) -> anyhow::Result<ReportFigures> {
    let mut used = std::collections::HashSet::new();
    let mut metric_svgs = Vec::new();
    let mut scan_svgs = Vec::new();
    for r in &reading.reports {
        let mut names = Vec::new();
        let mut scans = Vec::new();
        for m in &r.metrics {
            let base = format!(
                "{stem}_{}_{}_{}",
                file_part(r.ladder.as_deref().unwrap_or("")),
                file_part(r.tag.as_deref().unwrap_or("")),
                file_part(&m.column)
            );
            let mut name = format!("{base}.svg");
            let mut k = 2;
            while !used.insert(name.clone()) {
                name = format!("{base}_{k}.svg");
                k += 1;
            }
            let columns: Vec<DeltaColumn> = m
                .arms
                .iter()
                .map(|a| DeltaColumn {
                    arm: &a.arm,
                    deltas: &a.deltas_pct,
                    estimate: a.figures.estimate_pct,
                    ci: (a.figures.ci_low_pct, a.figures.ci_high_pct),
                })
                .collect();
            let title = format!(
                "{} / {}: {} ({} is better){}",
                r.ladder.as_deref().unwrap_or("?"),
                r.tag.as_deref().unwrap_or("?"),
                m.column,
                m.better,
                if r.qualified {
                    String::new()
                } else {
                    format!(" [{}]", super::status::status(r, super::terminal::plain).1)
                }
            );
            deltas_svg(&dir.join(&name), &title, &columns)?;
            names.push(name);
            if let Some(values) = r.scan.as_ref().filter(|v| v.len() == m.arms.len() + 1) {
                let scan_name = format!("{base}_scan.svg");
                // The first scanned value is the base: its estimate against itself is 0.
                let columns: Vec<DeltaColumn> = values
                    .iter()
                    .enumerate()
                    .map(|(i, value)| {
                        let (estimate, ci) = match i.checked_sub(1).map(|k| &m.arms[k].figures) {
                            Some(f) => (f.estimate_pct, (f.ci_low_pct, f.ci_high_pct)),
                            None => (0.0, (0.0, 0.0)),
                        };
                        DeltaColumn {
                            arm: value,
                            deltas: &[],
                            estimate,
                            ci,
                        }
                    })
                    .collect();
                let title = format!(
                    "{}: estimate [95 % interval] against the scanned value",
                    m.column
                );
                deltas_svg(&dir.join(&scan_name), &title, &columns)?;
                scans.push(scan_name);
            } else {
                scans.push(String::new());
            }
        }
        metric_svgs.push(names);
        scan_svgs.push(scans);
    }
    let mut forest_svgs = Vec::new();
    for q in &reading.replications {
        if forest_svgs
            .iter()
            .any(|(s, _): &(String, String)| *s == q.spec)
        {
            continue;
        }
        let rows: Vec<ForestRow> = reading
            .replications
            .iter()
            .filter(|r| r.spec == q.spec)
            .flat_map(|r| {
                (0..r.ladders.len()).map(move |i| ForestRow {
                    label: format!("{} · {}", r.quantity, r.ladders[i]),
                    estimate: r.estimates_pct[i],
                    ci: (r.ci_low_pct[i], r.ci_high_pct[i]),
                    marked: !r.qualified[i],
                })
            })
            .collect();
        let name = format!("{stem}_across_{}.svg", file_part(&q.spec));
        forest_svg(
            &dir.join(&name),
            &format!("{}: each quantity per ladder", q.spec),
            &rows,
        )?;
        forest_svgs.push((q.spec.clone(), name));
    }
    Ok(ReportFigures {
        metrics: metric_svgs,
        scans: scan_svgs,
        forests: forest_svgs,
    })
}

/// `name` with every character a file name should not hold replaced by `_`.
pub(super) fn file_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One arm's column of dots.
pub struct DeltaColumn<'a> {
    pub arm: &'a str,
    pub deltas: &'a [f64],
    pub estimate: f64,
    pub ci: (f64, f64),
}

/// One row of a forest plot.
pub struct ForestRow {
    pub label: String,
    pub estimate: f64,
    pub ci: (f64, f64),
    /// Drawn hollow: the ladder is disqualified or not connected.
    pub marked: bool,
}

const DOT: RGBColor = RGBColor(31, 119, 180);
const MEDIAN: RGBColor = RGBColor(214, 39, 40);

pub(super) fn plot_err<E: std::fmt::Debug>(path: &Path) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow!("cannot draw {}: {e:?}", path.display())
}

/// The range covering every value and 0, with a margin.
pub(super) fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let pad = ((hi - lo) * 0.08).max(1e-3);
    (lo - pad, hi + pad)
}

/// Labels only at whole positions; plotters may ask for others.
pub(super) fn label_at(names: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    names.get(i as usize).cloned().unwrap_or_default()
}

/// The pixels the longest of `labels` takes, 7 a character (10 characters when none).
fn labels_px(labels: &[String]) -> u32 {
    7 * labels.iter().map(|l| l.chars().count()).max().unwrap_or(10) as u32
}

/// A chart's drawing area, pixels as wide as `labels` need beside `plot` pixels, and
/// `row_px` pixels a row, filled white.
pub(super) fn rows_area<'a>(
    path: &'a Path,
    labels: &[String],
    plot: u32,
    row_px: u32,
) -> anyhow::Result<DrawingArea<SVGBackend<'a>, Shift>> {
    let rows = labels.len().max(1) as u32;
    let root =
        SVGBackend::new(path, (plot + labels_px(labels), 90 + row_px * rows)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err(path))?;
    Ok(root)
}

/// The frame of a chart of one row per label, row 0 at the top, over `x`: its caption, the
/// labels, the x axis described by `x_desc`, and the zero line.
pub(super) fn rows_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    path: &Path,
    title: &str,
    labels: &[String],
    x: std::ops::Range<f64>,
    x_desc: &str,
) -> anyhow::Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>> {
    let err = plot_err(path);
    let n = labels.len().max(1);
    let bottom_up: Vec<String> = labels.iter().rev().cloned().collect();
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(20 + labels_px(labels))
        .build_cartesian_2d(x, -0.5f64..(n as f64 - 0.5))
        .map_err(&err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n + 1)
        .y_label_formatter(&|y| label_at(&bottom_up, *y))
        .x_desc(x_desc)
        .draw()
        .map_err(&err)?;
    chart
        .draw_series(LineSeries::new(
            [(0.0, -0.5), (0.0, n as f64 - 0.5)],
            BLACK.mix(0.5),
        ))
        .map_err(&err)?;
    Ok(chart)
}

pub fn deltas_svg(path: &Path, title: &str, columns: &[DeltaColumn]) -> anyhow::Result<()> {
    let n = columns.len().max(1);
    let err = plot_err(path);
    let root = SVGBackend::new(path, (160 + 140 * n as u32, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let values = columns
        .iter()
        .flat_map(|c| c.deltas.iter().copied().chain([c.ci.0, c.ci.1]));
    let (lo, hi) = span(values);
    let names: Vec<String> = columns.iter().map(|c| c.arm.to_string()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), lo..hi)
        .map_err(&err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n + 1)
        .x_label_formatter(&|x| label_at(&names, *x))
        .y_desc("paired delta against the base, % (positive = better)")
        .draw()
        .map_err(&err)?;
    chart
        .draw_series(LineSeries::new(
            [(-0.5, 0.0), (n as f64 - 0.5, 0.0)],
            BLACK.mix(0.5),
        ))
        .map_err(&err)?;
    for (i, column) in columns.iter().enumerate() {
        let x = i as f64;
        let m = column.deltas.len().max(1) as f64;
        // Dots spread left of the centre in pass order; the interval sits right of it.
        let dots = column.deltas.iter().enumerate().map(|(k, d)| {
            Circle::new(
                (x - 0.3 + 0.25 * k as f64 / m, *d),
                3,
                DOT.mix(0.8).filled(),
            )
        });
        chart.draw_series(dots).map_err(&err)?;
        let bar = PathElement::new(
            vec![(x - 0.32, column.estimate), (x + 0.2, column.estimate)],
            MEDIAN.stroke_width(2),
        );
        let whisker = PathElement::new(
            vec![(x + 0.12, column.ci.0), (x + 0.12, column.ci.1)],
            MEDIAN.stroke_width(2),
        );
        let caps = [column.ci.0, column.ci.1]
            .map(|y| PathElement::new(vec![(x + 0.07, y), (x + 0.17, y)], MEDIAN.stroke_width(2)));
        chart
            .draw_series([bar, whisker].into_iter().chain(caps))
            .map_err(&err)?;
    }
    root.present().map_err(&err)?;
    Ok(())
}

pub fn forest_svg(path: &Path, title: &str, rows: &[ForestRow]) -> anyhow::Result<()> {
    let n = rows.len().max(1);
    let err = plot_err(path);
    let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
    let root = rows_area(path, &labels, 420, 24)?;
    let (lo, hi) = span(rows.iter().flat_map(|r| [r.ci.0, r.ci.1, r.estimate]));
    let x_desc = "estimate and 95 % interval, % (positive = better)";
    let mut chart = rows_chart(&root, path, title, &labels, lo..hi, x_desc)?;
    for (i, row) in rows.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        let line = PathElement::new(vec![(row.ci.0, y), (row.ci.1, y)], DOT.stroke_width(2));
        chart.draw_series([line]).map_err(&err)?;
        let style = if row.marked {
            MEDIAN.stroke_width(2)
        } else {
            MEDIAN.filled()
        };
        chart
            .draw_series([Circle::new((row.estimate, y), 5, style)])
            .map_err(&err)?;
    }
    root.present().map_err(&err)?;
    Ok(())
}
