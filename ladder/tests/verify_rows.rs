//! Cells of several rows (`ladder_row` 0…R), the gap's words, and the `[stop]` plan a ladder
//! recomputes from its own rows: the replay's checks that the defect tests of one-row cells
//! do not reach.

use ladder::sample::{Sample, SampleArm, SampleReps};
use ladder::spec::{Spec, StopSpec, StopSpread};
use ladder::stop::Stopped;
use ladder::verify::{replay, DefectKind};
use ladder::Role;

/// Two arms over four passes, each cell a summary row and two repetition rows.
fn three_row_cells() -> Vec<String> {
    let mut s = Sample::new(
        "rows",
        "t1",
        vec![
            SampleArm::new("base", Role::Base, 0.0),
            SampleArm::new("b", Role::Arm, 1.0),
        ],
    );
    s.passes = 4;
    s.reps = Some(SampleReps::new(2, 0.5, 0.25));
    s.file_text().lines().map(String::from).collect()
}

fn defects(lines: &[String]) -> Vec<(DefectKind, usize, String)> {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let verdict = replay(text.as_bytes()).verdict;
    verdict
        .defects
        .into_iter()
        .map(|d| (d.kind, d.line, d.detail))
        .collect()
}

/// The detail of every defect of a file.
fn details(text: &str) -> Vec<String> {
    let verdict = replay(text.as_bytes()).verdict;
    verdict.defects.into_iter().map(|d| d.detail).collect()
}

/// The 1-based number of the line that starts with `prefix` (`pass,slot,arm,`), row `row`.
fn line_of(lines: &[String], prefix: &str, row: usize) -> usize {
    let column = lines[1].split(',').position(|c| c == "ladder_row").unwrap();
    1 + lines
        .iter()
        .position(|l| l.starts_with(prefix) && l.split(',').nth(column) == Some(&row.to_string()))
        .unwrap_or_else(|| panic!("no row {row} of {prefix}"))
}

fn set_field(lines: &mut [String], line: usize, name: &str, value: &str) {
    let column = lines[1].split(',').position(|c| c == name).unwrap();
    let mut fields: Vec<String> = lines[line - 1].split(',').map(String::from).collect();
    fields[column] = value.into();
    lines[line - 1] = fields.join(",");
}

#[test]
fn a_row_that_does_not_continue_its_cell_is_refused_whatever_field_differs() {
    let clean = three_row_cells();
    assert_eq!(defects(&clean), vec![], "the sample is one connected run");
    // Pass 1 slot 0 runs arm b under rotate; its row 1.
    let line = line_of(&clean, "1,0,b,", 1);
    let started = clean[line - 1]
        .split(',')
        .nth(3)
        .unwrap()
        .replace(".", ".9");
    for (field, value) in [
        ("ladder_row", "2"),
        ("ladder_arm", "base"),
        ("ladder_started", started.as_str()),
        ("ladder_exit", "3"),
    ] {
        let mut lines = clean.clone();
        set_field(&mut lines, line, field, value);
        let found = defects(&lines);
        let own = found
            .iter()
            .find(|(_, l, _)| *l == line)
            .unwrap_or_else(|| panic!("{field} = {value}: no defect at line {line}: {found:?}"));
        assert_eq!(own.0, DefectKind::BadRow, "{field}: {found:?}");
        assert!(
            own.2.contains("does not continue the cell before it"),
            "{own:?}"
        );
    }
}

#[test]
fn a_row_that_continues_a_refused_cell_is_refused_too() {
    let clean = three_row_cells();
    // Pass 1 slot 0's row 0 again after its rows 0 and 1, then its row 2: the cell ends at
    // two rows, the repeated row 0 is refused, and so is the row 2 after it, which continues
    // no cell though it follows row 1 in number.
    let first = line_of(&clean, "1,0,b,", 0);
    let mut lines = clean.clone();
    lines.insert(first + 1, clean[first - 1].clone());
    let found = defects(&lines);
    let kinds: Vec<(DefectKind, usize)> = found.iter().map(|(k, l, _)| (*k, *l)).collect();
    assert_eq!(
        kinds,
        vec![
            (DefectKind::BadRow, first),
            (DefectKind::Repeat, first + 2),
            (DefectKind::BadRow, first + 3)
        ],
        "{found:?}"
    );
}

/// Three arms over 8 passes under `[stop]` at ±`halfwidth_pct`, looks 4, 6 and 8: the
/// sample runs all 8.
fn stop_sample(halfwidth_pct: f64) -> Sample {
    let mut s = Sample::new(
        "stop",
        "t1",
        vec![
            SampleArm::new("base", Role::Base, 0.0),
            SampleArm::new("b", Role::Arm, 1.0),
            SampleArm::new("c", Role::Arm, -1.0),
        ],
    );
    s.stop = Some(StopSpec {
        halfwidth_pct,
        looks: vec![4, 6, 8],
        spread: StopSpread::PerArm,
        metrics: Vec::new(),
        within_s: None,
    });
    s
}

#[test]
fn a_stop_ladder_recomputes_its_plan_from_its_first_look() {
    let text = stop_sample(0.05).file_text();
    let ladder = replay(text.as_bytes()).ladder.unwrap();
    let spec = Spec::from_json(&ladder.start.spec).unwrap();
    let plan = ladder.stop_plan(&spec).expect("a [stop] ladder has a plan");
    // By hand: each arm's need from its three first-look log ratios, the largest decides.
    let stop = spec.stop.clone().unwrap();
    let values = ladder.metric_values(&spec.effective_metrics()[0], 4);
    let need = [1, 2]
        .map(|a| stop.passes_needed(&values.log_ratios(a, 0, 1..4)))
        .into_iter()
        .fold(0.0, f64::max);
    assert!(
        need > 7.0,
        "±0.05 % needs more than the last look's 7 analysis passes"
    );
    assert_eq!(plan.need.passes, need);
    assert_eq!(plan.look, 8);
    // Without [stop] there is no plan.
    let mut fixed = spec.clone();
    fixed.stop = None;
    assert!(ladder.stop_plan(&fixed).is_none());
}

#[test]
fn a_stop_ladders_within_s_is_priced_from_its_own_first_look() {
    let text = stop_sample(0.05).file_text();
    let ladder = replay(text.as_bytes()).ladder.unwrap();
    let wall = ladder.columns.iter().position(|c| c == "ladder_wall_s");
    let first_look: f64 = ladder
        .rows
        .iter()
        .filter(|r| r.pass < 4 && r.row == 0)
        .map(|r| r.fields.get(wall.unwrap()).unwrap().parse::<f64>().unwrap())
        .sum();
    let pass_seconds = first_look / 4.0;
    let mut spec = Spec::from_json(&ladder.start.spec).unwrap();
    // ±0.05 % runs this ladder to its last look, 8; each limit allows the looks below it.
    for (passes_paid, look, stopped) in [
        (9.0, 8, Stopped::MaxPasses),
        (7.0, 6, Stopped::Within),
        (5.0, 4, Stopped::Within),
        (1.0, 4, Stopped::Within),
    ] {
        spec.stop.as_mut().unwrap().within_s = Some(passes_paid * pass_seconds);
        let plan = ladder.stop_plan(&spec).unwrap();
        assert_eq!((plan.look, plan.stopped), (look, stopped), "{passes_paid}");
    }
}

#[test]
fn a_stop_ladders_done_record_must_name_the_look_the_rule_gives() {
    // The rule runs ±0.05 % to the last look: the sample's 8 passes are right.
    let text = stop_sample(0.05).file_text();
    let verdict = replay(text.as_bytes()).verdict;
    assert!(verdict.connected, "{:?}", verdict.defects);
    // At ±50 % the runner stops at the first look, and so does the sample.
    let stopped = stop_sample(50.0).file_text();
    let verdict = replay(stopped.as_bytes()).verdict;
    assert!(verdict.connected, "{:?}", verdict.defects);
    assert_eq!(verdict.cells_found, 12);
    assert!(
        stopped.contains(r#""passes":4,"stopped":"precision""#),
        "{stopped}"
    );
    // Its start record over all 8 passes (the same cells, drawn without [stop]) is a count
    // mismatch that names look 4.
    let mut fixed = stop_sample(50.0);
    fixed.stop = None;
    let head: String = stopped
        .lines()
        .take(2)
        .map(|l| l.to_string() + "\n")
        .collect();
    let body: String = fixed
        .file_text()
        .lines()
        .skip(2)
        .map(|l| l.to_string() + "\n")
        .collect();
    let wide = head + &body;
    assert_eq!(
        details(&wide),
        vec![
            "the done record says 8 passes and 24 cells; the stopping rule gives look 4 (12 \
             cells) from the first look at pass 4"
        ]
    );
    let verdict = replay(wide.as_bytes()).verdict;
    assert_eq!(verdict.defects[0].kind, DefectKind::CountMismatch);
    // The same cells under a done record that names another look: the count agrees, the
    // look does not.
    let misnamed = stopped.replace("\"passes\":4", "\"passes\":6");
    assert_ne!(misnamed, stopped);
    assert_eq!(
        details(&misnamed),
        vec![
            "the done record says 6 passes and 12 cells; the stopping rule gives look 4 (12 \
             cells) from the first look at pass 4"
        ]
    );
}

#[test]
fn a_stop_ladder_that_ends_before_its_first_look_is_judged_by_its_count() {
    let mut s = stop_sample(50.0);
    s.passes = 3;
    let text = s.file_text();
    let verdict = replay(text.as_bytes()).verdict;
    assert!(verdict.connected, "{:?}", verdict.defects);
}
