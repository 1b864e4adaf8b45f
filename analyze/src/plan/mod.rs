//! `analyze plan PILOT --halfwidth H [--arms N]` (METHOD.md "Repetitions and passes"): from a
//! pilot ladder run with `engine bench --rows reps`, the repetitions a cell and the passes
//! that reach ±H in the least device time, and a first look for `[stop]`.

mod cells;
mod first_look;
mod planned_spec;
mod search;

pub use cells::Cell;
pub use first_look::{first_look, looks, FirstLook};
pub use planned_spec::{apply, write, Applied};
pub use search::{CostModel, Design, MAX_REPS};

use crate::time_use;
use crate::variance::{self, ArmComponents};
use anyhow::{bail, Context};
use ladder::repetitions::{STARTUP_COLUMN, TIMED_COLUMN};
use ladder::spec::Spec;
use std::fmt::Write;
use std::path::Path;

/// The fix every refusal of a pilot ends with.
const RERUN: &str = "run the pilot again with `engine bench --rows reps` (engine/README.md)";

/// What a pilot ladder says about the cost and the spread of a cell.
#[derive(Clone, Debug)]
pub struct Pilot {
    pub file: String,
    pub arms: usize,
    pub passes: usize,
    pub warmup: usize,
    pub cells: usize,
    /// `R`: the pilot's repetitions a cell.
    pub reps: usize,
    /// `c0`: the mean of `w − τ` over the cells.
    pub start_s: f64,
    /// The mean of `startup_seconds`, the part of `c0` before the first timed repetition.
    pub startup_s: f64,
    /// `T`: the mean of `τ/R` over the cells.
    pub rep_s: f64,
    pub components: Vec<ArmComponents>,
    /// The base arm's cell, which the plan prices.
    pub cell: Cell,
}

/// Reads a pilot: one connected run with `startup_seconds`, `timed_seconds` and repetition
/// rows; anything else is refused with the fix.
pub fn pilot(path: &Path) -> anyhow::Result<Pilot> {
    let (shown, ladder) = connected(path)?;
    let spec = Spec::from_json(&ladder.start.spec).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
    let passes = ladder.analysis_passes();
    let cells = timed_cells(&shown, &ladder)?;
    let components = variance::components(&ladder, &spec.effective_metrics(), passes.clone())
        .map_err(|e| anyhow::anyhow!("{shown}: {e}; {RERUN}"))?
        .with_context(|| format!("{shown}: the pilot has no repetition rows (ladder_row 1…R with a `rep` column); {RERUN}"))?;
    if components.arms.is_empty() {
        bail!("{shown}: the pilot has no arm besides its base, so there is no paired log ratio to plan for; run it with the arms the ladder will have");
    }
    let cell = Cell::base_of(&spec);
    refuse_layouts(&cell, &format!("the pilot {shown}"))?;
    let n = cells.len() as f64;
    let mean = |f: &dyn Fn(&(f64, f64, f64)) -> f64| cells.iter().map(f).sum::<f64>() / n;
    let reps = components.reps;
    let rep_s = mean(&|&(_, _, timed)| timed / reps as f64);
    if rep_s <= 0.0 {
        bail!("{shown}: {TIMED_COLUMN} is 0 in every cell, so a repetition costs nothing; {RERUN}");
    }
    Ok(Pilot {
        file: shown,
        arms: ladder.start.arms.len(),
        passes: passes.end,
        warmup: ladder.start.warmup_passes,
        cells: cells.len(),
        reps,
        start_s: mean(&|&(wall, _, timed)| wall - timed),
        startup_s: mean(&|&(_, startup, _)| startup),
        rep_s,
        components: components.arms,
        cell,
    })
}

/// Refuses a cell of `--layouts N` (N ≠ 1), which a plan cannot price (METHOD.md "The
/// pilot's cells").
fn refuse_layouts(cell: &Cell, whose: &str) -> anyhow::Result<()> {
    if let Some(n) = cell.layouts() {
        bail!(
            "{whose}'s base cell runs `--layouts {n}`: each layout pays a build between its \
             repetitions and moves the metric by its placement, so `start-up + r × repetition` \
             does not price it and `-r` would count a layout's repetitions; plan from a pilot \
             and a template without --layouts, or size that ladder by hand"
        );
    }
    Ok(())
}

/// The file's ladder, when it is one connected run.
fn connected(path: &Path) -> anyhow::Result<(String, ladder::Ladder)> {
    let shown = path.display().to_string();
    let bytes = ladder::limits::read_ladder_file(path).map_err(anyhow::Error::msg)?;
    let replay = ladder::replay(&bytes);
    if !replay.verdict.connected {
        bail!(
            "{shown}: {}; a pilot must be one connected run: see `analyze verify {shown}`, and run it again",
            replay.verdict.summary()
        );
    }
    let ladder = replay.ladder.context("a connected file has its ladder")?;
    Ok((shown, ladder))
}

/// Every cell's `(wall, startup, timed)` seconds; a cell without the engine's two columns
/// is refused, since the cost model rests on them.
fn timed_cells(shown: &str, ladder: &ladder::Ladder) -> anyhow::Result<Vec<(f64, f64, f64)>> {
    time_use::cells(ladder)
        .iter()
        .map(|c| match (c.startup, c.timed) {
            (Some(startup), Some(timed)) => Ok((c.wall, startup, timed)),
            _ => bail!(
                "{shown}: the cell of pass {} arm {} has no {STARTUP_COLUMN} or {TIMED_COLUMN}, which the cost model needs; {RERUN}",
                c.pass,
                ladder.start.arms[c.arm].name
            ),
        })
        .collect()
}

impl Pilot {
    /// Refuses a template whose base arm runs another cell than the pilot's, unless
    /// `other_cells`; then the difference is returned, for the plan to say.
    pub fn check_cells(
        &self,
        template: &Spec,
        other_cells: bool,
    ) -> anyhow::Result<Option<String>> {
        let cell = Cell::base_of(template);
        refuse_layouts(&cell, "the template")?;
        let Some(why) = self.cell.difference(&cell) else {
            return Ok(None);
        };
        if !other_cells {
            bail!(
                "the template's base arm runs other cells than the pilot {}'s: {why}; a plan \
                 prices the pilot's cells, so pilot the template's base cell (two arms of it, \
                 run with `--rows reps`), or pass --other-cells to plan from these anyway",
                self.file
            );
        }
        Ok(Some(why))
    }

    /// The cost model of a ladder of `arms` arms with the pilot's cells and spread.
    pub fn model(&self, arms: usize) -> CostModel {
        CostModel {
            start_s: self.start_s,
            rep_s: self.rep_s,
            arms,
            warmup: self.warmup,
            spreads: self
                .components
                .iter()
                .map(|c| (c.between_var(), c.within_var()))
                .collect(),
        }
    }
}

/// `5.2 min`, `48 s`, `3.1 h`.
fn duration(seconds: f64) -> String {
    match seconds {
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.1} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}

/// What a plan is asked for: the half-width, the arms, and at most how many device seconds
/// the ladder may take (`--within`, a device call's limit).
#[derive(Clone, Copy, Debug)]
pub struct Goal {
    pub halfwidth_pct: f64,
    pub arms: usize,
    pub within_s: Option<f64>,
    /// The plan is written as a `[stop]` spec (`--template`): `--within` bounds its looks, and
    /// a fixed design that does not fit is only reported.
    pub stop: bool,
}

impl Goal {
    fn h(&self) -> f64 {
        (1.0 + self.halfwidth_pct / 100.0).ln()
    }
}

/// The cheapest design that reaches the goal's half-width, or why none within the limits does.
fn best(model: &CostModel, pilot: &Pilot, goal: &Goal) -> anyhow::Result<Design> {
    let halfwidth_pct = goal.halfwidth_pct;
    model.best(goal.h()).with_context(|| {
        format!(
            "±{halfwidth_pct} % is out of reach of {} arms at this pilot's spread: even {} \
             analysis passes (the {} cells a ladder may have) of {MAX_REPS} repetitions a cell \
             reach only ±{:.4} %; ask for a wider half-width, or quiet the cells (the spread \
             of {}: {})",
            model.arms,
            model.max_analysis(),
            ladder::limits::MAX_CELLS,
            100.0 * model.narrowest().exp_m1(),
            pilot.file,
            spreads(pilot)
        )
    })
}

/// The narrowest half-width a fixed design reaches within `within` seconds, in words, and,
/// where the goal's repetitions alone take longer, that no cheaper start-up can help.
fn narrowest_words(model: &CostModel, within: f64, goal: &Goal) -> String {
    let narrowest = match model.narrowest_within(within) {
        Some((h, d)) => format!(
            "within it the narrowest is ±{:.4} % (r = {}, {} passes, {})",
            100.0 * h.exp_m1(),
            d.reps,
            d.passes,
            duration(d.seconds)
        ),
        None => "not even the fewest passes fit in it".into(),
    };
    let floor = model.repetitions_floor(goal.h());
    if floor <= within {
        return narrowest;
    }
    format!(
        "with no start-up at all its timed repetitions alone would take {}, so only steadier or \
         shorter repetitions bring ±{} % within {}, not a cheaper start-up; {narrowest}",
        duration(floor),
        goal.halfwidth_pct,
        duration(within)
    )
}

/// Why the fixed design `best` does not fit `--within`, with the narrowest half-width that
/// does; `None` when it fits or no time is given.
fn over_time(model: &CostModel, best: &Design, goal: &Goal) -> Option<String> {
    let within = goal.within_s.filter(|&w| best.seconds > w)?;
    let narrowest = narrowest_words(model, within, goal);
    Some(format!(
        "±{} % takes {} of cells at the least as a fixed design (r = {}, {} passes × {} arms), \
         more than the {} given by --within; {narrowest}",
        goal.halfwidth_pct,
        duration(best.seconds),
        best.reps,
        best.passes,
        model.arms,
        duration(within),
    ))
}

/// `decode_tok_s a: 0.41 % between cells, 0.12 % within`, one per arm and metric.
fn spreads(pilot: &Pilot) -> String {
    let each = pilot.components.iter().map(|c| {
        format!(
            "{} {} {:.3} % between cells, {:.3} % within",
            c.column, c.arm, c.between_sd_pct, c.within_sd_pct
        )
    });
    each.collect::<Vec<_>>().join("; ")
}

/// The plan in words.
pub fn render(pilot: &Pilot, goal: &Goal) -> anyhow::Result<String> {
    let (halfwidth_pct, arms) = (goal.halfwidth_pct, goal.arms);
    let model = pilot.model(arms);
    let h = goal.h();
    let best = best(&model, pilot, goal)?;
    let over = over_time(&model, &best, goal);
    if let (Some(why), false) = (&over, goal.stop) {
        bail!("{why}: ask for that, or give more time");
    }
    let own = model.design(pilot.reps, h);
    let mut out = format!(
        "pilot {}: {} arms, {} passes ({} warm-up), {} repetitions a cell\n\
         a cell costs {:.3} s start-up + r × {:.3} s a repetition (means over the pilot's {} cells; \
         startup_seconds is {:.3} s of the start-up, the rest is the exit and the harness)\n\
         a pass's log ratio at r repetitions has variance between + within/r, the largest of:\n",
        pilot.file,
        pilot.arms,
        pilot.passes,
        pilot.warmup,
        pilot.reps,
        pilot.start_s,
        pilot.rep_s,
        pilot.cells,
        pilot.startup_s
    );
    for c in &pilot.components {
        let _ = writeln!(
            out,
            "  {} {}: between cells {:.3} %, within a cell {:.3} % a repetition",
            c.column, c.arm, c.between_sd_pct, c.within_sd_pct
        );
    }
    let design = |d: &Design| {
        format!(
            "{} passes ({} analysis + {} warm-up) × {arms} arms × ({:.3} + {} × {:.3}) s = {}",
            d.passes,
            d.analysis,
            pilot.warmup,
            pilot.start_s,
            d.reps,
            pilot.rep_s,
            duration(d.seconds)
        )
    };
    let _ = writeln!(
        out,
        "\n±{halfwidth_pct} % in the least device time, {arms} arms:\n  r = {}: {}\n  the pilot's r = {}: {}",
        best.reps,
        design(&best),
        own.reps,
        design(&own)
    );
    let _ = writeln!(
        out,
        "in the spec: \"-r\", \"{}\" in the engine's argv and passes = {}",
        best.reps, best.passes
    );
    if arms > pilot.arms {
        let _ = writeln!(out, "{}", longer_pass(pilot, &model, best.reps));
    }
    if let Some(why) = over {
        let _ = writeln!(out, "{why}; the [stop] below ends within it");
    }
    stop_lines(&model, &best, goal, &mut out)?;
    Ok(out)
}

/// The pilot's pass against the planned ladder's, which pairs cells further apart in time.
fn longer_pass(pilot: &Pilot, model: &CostModel, reps: usize) -> String {
    let pilot_pass = pilot.model(pilot.arms).seconds(pilot.reps, 1);
    format!(
        "a pass of the pilot took {:.1} s, one of this ladder takes {:.1} s: a drift between cells \
         further apart than the pilot's pairs is not in its spread (a [stop] reads the ladder's \
         own at its first look)",
        pilot_pass,
        model.seconds(reps, 1)
    )
}

/// The first look and the looks of Stein's rule at the plan's repetitions, with each arm's
/// own spread or (`pooled`) one spread over the arms. Under `--within` the looks that would
/// cost more are dropped: the pass a ladder stops at is still chosen from the first look's
/// spread alone, as Stein's rule needs, and one not precise by the last look kept stops
/// there with a wider interval.
fn stop_rule(
    model: &CostModel,
    best: &Design,
    goal: &Goal,
    pooled: bool,
) -> anyhow::Result<(FirstLook, Vec<usize>)> {
    let v = model.variance(best.reps);
    let (arms, h) = (model.arms, goal.h());
    let look = match pooled {
        false => first_look(v, h, |m0| m0 - 1),
        true => first_look(v, h, |m0| (m0 - 1) * (arms - 1)),
    };
    let mut looks = looks(model.warmup, &look);
    if let Some(within) = goal.within_s {
        looks.retain(|&passes| model.seconds(best.reps, passes) <= within);
        if looks.is_empty() {
            let first = model.warmup + look.analysis;
            bail!(
                "the [stop] rule's first look (pass {first}) alone takes {}, more than the {} \
                 given by --within; {}: ask for that, or give more time",
                duration(model.seconds(best.reps, first)),
                duration(within),
                narrowest_words(model, within, goal)
            );
        }
    }
    Ok((look, looks))
}

/// The widening step of `--or-narrowest`: the fixed design's narrowest half-width may still
/// leave a `[stop]` whose first look runs past `--within`.
const WIDEN: f64 = 1.02;

/// The goal as asked when its plan fits `--within`; else (`--or-narrowest`) the narrowest
/// half-width a fixed design reaches within it, widened until the plan and its `[stop]` fit
/// too. With the plan in words, headed by the line that says so when it was widened.
pub fn fitted(pilot: &Pilot, goal: Goal, or_narrowest: bool) -> anyhow::Result<(Goal, String)> {
    // `render` refuses whatever `applied` would: the fixed design, and the pooled `[stop]`.
    let refused = match render(pilot, &goal) {
        Ok(plan) => return Ok((goal, plan)),
        Err(e) => e,
    };
    let within = match (or_narrowest, goal.within_s) {
        (true, Some(within)) => within,
        _ => return Err(refused),
    };
    let Some((h, _)) = pilot.model(goal.arms).narrowest_within(within) else {
        return Err(refused);
    };
    let mut pct = 100.0 * h.exp_m1();
    for _ in 0..100 {
        // Rounded up to the 4 decimals the plan prints, so the written goal is the one tried.
        pct = (pct * 1e4).ceil() / 1e4;
        let wider = Goal {
            halfwidth_pct: pct,
            ..goal
        };
        if let Ok(plan) = render(pilot, &wider) {
            let said = format!(
                "--or-narrowest: ±{} % does not fit --within {within} s ({refused:#}); planned for ±{pct} %, the narrowest that does\n",
                goal.halfwidth_pct
            );
            return Ok((wider, said + &plan));
        }
        pct *= WIDEN;
    }
    Err(refused)
}

/// What `--template … --write …` puts into a spec: the plan's repetitions and its pooled
/// `[stop]` (fewer expected passes than each arm's own spread, METHOD.md), with `--within`'s
/// seconds as its `within_s`.
pub fn applied(pilot: &Pilot, goal: &Goal) -> anyhow::Result<Applied> {
    let model = pilot.model(goal.arms);
    let best = best(&model, pilot, goal)?;
    Ok(Applied {
        reps: best.reps,
        halfwidth_pct: goal.halfwidth_pct,
        looks: stop_rule(&model, &best, goal, true)?.1,
        within_s: goal.within_s,
    })
}

/// The `[stop]` alternative at the plan's repetitions, per spread rule.
fn stop_lines(
    model: &CostModel,
    best: &Design,
    goal: &Goal,
    out: &mut String,
) -> anyhow::Result<()> {
    let halfwidth_pct = goal.halfwidth_pct;
    let _ = writeln!(
        out,
        "or stop at the precision (Stein's rule at r = {}; expected passes with a look at every pass):",
        best.reps
    );
    for (rule, pooled) in [("", false), ("spread = \"pooled\", ", true)] {
        let (look, looks) = match stop_rule(model, best, goal, pooled) {
            Ok(rule) => rule,
            // Each arm's own spread needs a later first look than the pooled one that a
            // written spec uses: said, not refused, so that a goal the spec reaches is planned.
            Err(e) if !pooled => {
                let _ = writeln!(
                    out,
                    "  [stop] {halfwidth_pct} % on each arm's own spread: {e:#}"
                );
                continue;
            }
            Err(e) => return Err(e),
        };
        let expected = model.warmup as f64 + look.expected;
        let seconds = expected * model.seconds(best.reps, 1);
        let list: Vec<String> = looks.iter().map(|l| l.to_string()).collect();
        let _ = writeln!(
            out,
            "  [stop] {rule}halfwidth_pct = {halfwidth_pct}, looks = [{}]: about {expected:.1} passes, {}; 99 % of ladders by pass {}",
            list.join(", "),
            duration(seconds),
            model.warmup + look.p99
        );
        let last = looks.last().copied().unwrap_or(0);
        if last < model.warmup + look.p99 {
            let _ = writeln!(
                out,
                "    the looks end at pass {last} ({}) under --within: a ladder not precise by then stops there, its interval wider",
                duration(model.seconds(best.reps, last))
            );
        }
    }
    Ok(())
}
