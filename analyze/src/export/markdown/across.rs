//! The reading across ladders: replications of one spec, and two arms in every ladder that
//! carries both.

use super::sections::figures_cells;
use super::*;
use std::fmt::Write;

pub(super) fn across_section(doc: &Doc, out: &mut String) {
    if doc.replications.is_empty() && doc.pairs.is_empty() {
        return;
    }
    out.push_str("\n## Across ladders\n");
    let mut specs: Vec<&str> = Vec::new();
    for q in doc.replications {
        if !specs.contains(&q.spec.as_str()) {
            specs.push(&q.spec);
        }
    }
    for spec in specs {
        let rows: Vec<&Replication> = doc.replications.iter().filter(|q| q.spec == spec).collect();
        let _ = writeln!(
            out,
            "\n### {}: the same spec in several ladders\n\nA single ladder's sem understates the real uncertainty; \
             the range across ladders is the honest reading. Spread = max − min of the estimates, against \
             `replication_limit_pp` = {}.\n",
            name(spec),
            rows[0].replication_limit_pp
        );
        if rows.iter().any(|q| !q.same_binary) {
            out.push_str(
                "> **Different binaries**: these ladders did not all run the same executable (blake3 in each \
                 ladder's table above), so a spread here includes whatever changed between them; it is a \
                 replication only among ladders of one binary.\n\n",
            );
        }
        let energy = rows.iter().any(|q| !q.energy.is_empty());
        out.push_str(
            "| quantity | estimates (tag, host, card: %) | range | spread (pp) | reading |",
        );
        out.push_str(if energy {
            " energy beside it (%) |\n|---|---|---|---:|---|---|\n"
        } else {
            "\n|---|---|---|---:|---|\n"
        });
        for q in rows {
            let estimates: Vec<String> = (0..q.ladders.len())
                .map(|i| {
                    format!(
                        "{} ({}, {}): {}{}",
                        name(&q.ladders[i]),
                        name(&q.hosts[i]),
                        name(&q.cards[i]),
                        pct(q.estimates_pct[i]),
                        if q.qualified[i] {
                            ""
                        } else {
                            " (not qualified)"
                        }
                    )
                })
                .collect();
            let reading = match (q.same_binary, q.replicates) {
                (false, _) => "binaries differ: a change, not a replication",
                (true, true) => "replicates: within the limit",
                (true, false) => "**a range, not a point**",
            };
            let beside = match energy {
                true => format!(" {} |", super::energy::beside_cell(&q.energy)),
                false => String::new(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {reading} |{beside}",
                name(&q.quantity),
                estimates.join("; "),
                interval(q.min_pct, q.max_pct),
                num(q.spread_pp)
            );
        }
        if let Some((_, svg)) = doc.forest_svgs.iter().find(|(s, _)| s == spec) {
            let _ = writeln!(
                out,
                "\n![estimate and interval of every shared quantity per ladder]({svg})\n"
            );
            out.push_str("Each row: one quantity in one ladder; dot: the estimate (hollow: not qualified); line: its 95 % interval.\n");
        }
    }
    if !doc.pairs.is_empty() {
        out.push_str("\n### Two arms across ladders\n\nThe same two arms, read in every ladder that carries both (paired inside each pass of each ladder).\n");
        for p in doc.pairs {
            let _ = writeln!(
                out,
                "\n{} against {} on {}:\n",
                name(&p.arm),
                name(&p.against),
                name(&p.column)
            );
            out.push_str("| ladder | tag | estimate | sem | 95 % interval | n | verdict | qualified |\n|---|---|---:|---:|---|---:|---|---|\n");
            for r in &p.readings {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    name(&r.ladder),
                    name(&r.tag),
                    figures_cells(&r.figures),
                    if r.qualified { "yes" } else { "no" }
                );
            }
        }
    }
}
