//! The card during the cells, in the witness section: which cells ran under a power or
//! thermal throttle the sampler saw, and what the pre-registered rule made of them.

use super::{cell_item, name};
use crate::witness::card::CardDuring;
use ladder::spec::ThrottleRule;
use std::fmt::Write;

pub(super) fn card_lines(card: &CardDuring, out: &mut String) {
    let rule = match card.throttle_rule {
        ThrottleRule::Defect => "`[card] throttle = \"defect\"`: each is a `card-throttle` defect",
        ThrottleRule::Report => "`[card] throttle = \"report\"`: listed, not disqualifying",
    };
    let _ = write!(
        out,
        "- Power or thermal throttle during a cell (sampled every {} ms; {} of {} cells sampled; {rule})",
        card.sample_ms, card.sampled_cells, card.cells
    );
    if card.throttled.is_empty() {
        out.push_str(": none\n");
        return;
    }
    let _ = writeln!(out, ": {} cell(s)", card.throttled.len());
    for c in &card.throttled {
        cell_item(out, "  ", (c.pass, c.slot), &c.arm, &name(&c.detail));
    }
}
