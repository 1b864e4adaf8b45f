//! `runner plan`: the legal order of a spec, its looks and each arm's argv, without
//! running anything.

use crate::words;
use ladder::order::Order;
use ladder::spec::Spec;

/// The pass × slot grid in words.
pub fn describe(spec: &Spec, order: &Order) -> String {
    let width = order.arms.iter().map(String::len).max().unwrap_or(4).max(6);
    let mut text = format!("{:>6}", "pass");
    for slot in 0..order.n_arms() {
        text.push_str(&format!("  {:<width$}", format!("slot {slot}")));
    }
    text.push('\n');
    let looks = spec
        .stop
        .as_ref()
        .map(|s| s.looks.clone())
        .unwrap_or_default();
    for pass in 0..order.passes {
        if looks.contains(&pass) {
            text.push_str(&format!(
                "{:>6}  -- look: may stop here ({pass} passes)\n",
                ""
            ));
        }
        let warm = if pass < spec.warmup_passes { "w" } else { " " };
        text.push_str(&format!("{:>5}{warm}", pass));
        for &arm in order.pass(pass) {
            text.push_str(&format!("  {:<width$}", order.arms[arm]));
        }
        text.push('\n');
    }
    text.push_str(&format!(
        "{} cells: {} passes × {} arms, order {}{}; the first {} pass(es) (w) are warm-up, {} are analysed\n",
        order.n_cells(),
        order.passes,
        order.n_arms(),
        order.scheme,
        order.seed.map(|s| format!(" (seed {s})")).unwrap_or_default(),
        spec.warmup_passes,
        order.passes - spec.warmup_passes
    ));
    if let Some(stop) = &spec.stop {
        text.push_str(&format!(
            "[stop]: after the first look ({} passes) the ladder runs to the first look whose analysis passes reach a {} % half-width, at most {} passes\n",
            stop.first_look(),
            stop.halfwidth_pct,
            order.passes
        ));
    }
    for arm in &spec.arms {
        text.push_str(&format!(
            "arm {} ({}): {}\n",
            arm.name,
            arm.role,
            words::join(&spec.argv_of(arm))
        ));
    }
    text
}
