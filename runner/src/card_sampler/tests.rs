//! The sampler on a fake NVML: a recorded series played back around a cell that sleeps.

use super::playback::Series;
use super::*;
use ladder::card::{COLUMNS, THROTTLE_SEEN};

/// A 400 ms cell: the card idle at the first reading, loaded from 10 ms, capped for power
/// from 200 to 240 ms (40 ms), then loaded again until the cell ends.
const CELL: &str = "\
t_ms,energy_mj,power_mw,sm_clock_mhz,temp_c,mem_used_mib,throttle
# idle before the process starts
0,1000000,70000,345,35,0,0x1
10,1000700,650000,1980,41,512,0x0
200,1130000,700000,1755,44,80000,0x4
240,1158000,690000,1980,44,81234,0x0
380,1255000,300000,1980,43,81234,0x0
";

fn field<'a>(fields: &'a [String], column: &str) -> &'a str {
    &fields[COLUMNS.iter().position(|c| *c == column).unwrap()]
}

fn cell(every: Duration) -> CellCard {
    let series = Series::parse(CELL).unwrap();
    let (slept, card) = sample_around(&mut series.probe(), every, || {
        std::thread::sleep(Duration::from_millis(400));
        "slept"
    });
    assert_eq!(slept, "slept");
    card
}

#[test]
fn a_throttle_of_40_ms_inside_the_cell_is_seen_at_20_ms() {
    let fields = cell(Duration::from_millis(20)).fields();
    assert_eq!(
        fields[..7],
        ["255.000", "700.0", "345", "1980", "44", "81234", "0x5"]
    );
    // One reading before, about one every 20 ms of the 400, one after: the thread sleeps
    // between them.
    let samples: usize = field(&fields, ladder::card::SAMPLES).parse().unwrap();
    assert!((15..=23).contains(&samples), "{samples} readings");
}

#[test]
fn readings_before_and_after_alone_miss_it() {
    let card = cell(Duration::from_secs(10));
    let fields = card.fields();
    assert_eq!(field(&fields, THROTTLE_SEEN), "0x1");
    assert_eq!(field(&fields, ladder::card::SAMPLES), "2");
    assert_eq!(field(&fields, ladder::card::ENERGY_J), "255.000");
    assert_eq!(card.value(ladder::card::ENERGY_J), Some(255.0));
}

#[test]
fn readings_fold_into_the_columns() {
    let mut card = CellCard::default();
    assert_eq!(card.fields(), vec![String::new(); COLUMNS.len()]);
    let reading = |energy, sm, throttle| Reading {
        energy_mj: energy,
        power_mw: Some(123_456),
        sm_clock_mhz: sm,
        temp_c: Some(50),
        mem_used_mib: Some(7),
        throttle,
    };
    card.add(reading(None, Some(1500), None));
    card.add(reading(Some(2_000), None, Some(0x20)));
    card.add(reading(Some(2_750), Some(1410), Some(0x80)));
    card.add(reading(None, Some(1600), None));
    assert_eq!(
        card.fields(),
        ["0.750", "123.5", "1410", "1600", "50", "7", "0xa0", "4"]
    );
    // A counter that went back (the driver reloaded) gives no energy.
    card.add(reading(Some(10), None, None));
    assert_eq!(card.fields()[0], "");
}

#[test]
fn a_bad_series_is_refused_with_its_line_and_fix() {
    let refused = |text: &str| Series::parse(text).unwrap_err();
    assert!(refused("t,energy\n0,1\n").starts_with("1: the header is not"));
    let header = playback::HEADER;
    let e = refused(&format!("{header}\n5,,,,,,\n"));
    assert!(
        e.starts_with("2: t_ms = 5") && e.contains("start at t_ms = 0"),
        "{e}"
    );
    let e = refused(&format!("{header}\n0,,,,,,\n0,,,,,,\n"));
    assert!(e.starts_with("3: t_ms = 0 does not follow"), "{e}");
    let e = refused(&format!("{header}\n0,,,,,,thermal\n"));
    assert!(e.contains("not a 0x mask"), "{e}");
    let e = refused(&format!("{header}\n0,1.5,,,,,\n"));
    assert!(e.contains("energy_mj is \"1.5\""), "{e}");
    let e = refused(&format!("{header}\n0,1\n"));
    assert!(e.starts_with("2: 2 fields"), "{e}");
    assert!(refused(header).contains("no rows"));
}
