//! `analyze plan PILOT --halfwidth H --template SPEC --write OUT`: the template spec with the
//! plan applied (the engine's `-r` and a `[stop]` with the pooled first look and its looks),
//! so that a committed template and this rule, not a hand edit after the pilot, decide the
//! ladder. Everything else of the template, its comments too, is kept.

use super::cells::REPS_FLAGS;
use anyhow::{bail, Context};
use ladder::spec::Spec;
use std::path::Path;
use toml_edit::{value, Array, DocumentMut, Item, Table};

/// What the plan puts into the template.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    pub reps: usize,
    pub halfwidth_pct: f64,
    pub looks: Vec<usize>,
    /// `--within`: the seconds of cells the ladder may take, checked at its first look
    /// against its own cells (the pilot's may have been cheaper).
    pub within_s: Option<f64>,
}

/// The template's text with `applied` in it, headed by how it was made (`origin`).
pub fn apply(template: &str, applied: &Applied, origin: &str) -> anyhow::Result<String> {
    let mut doc: DocumentMut = template.parse().context("the template is not TOML")?;
    set_reps(&mut doc, applied.reps)?;
    // `[stop]` ends the ladder; a fixed count would contradict its last look.
    doc.remove("passes");
    let mut looks = Array::new();
    for &l in &applied.looks {
        looks.push(l as i64);
    }
    let mut stop = Table::new();
    stop["halfwidth_pct"] = value(applied.halfwidth_pct);
    stop["looks"] = value(looks);
    stop["spread"] = value("pooled");
    if let Some(within) = applied.within_s {
        stop["within_s"] = value(within);
    }
    doc["stop"] = Item::Table(stop);
    Ok(format!(
        "# Planned by `{origin}`:\n# the template with the plan's -r and [stop] applied. Edit the template, not this file.\n{doc}"
    ))
}

/// Replaces the value after `-r` (or `--reps`) in the spec's `command`.
fn set_reps(doc: &mut DocumentMut, reps: usize) -> anyhow::Result<()> {
    let command = doc
        .get_mut("command")
        .and_then(Item::as_array_mut)
        .context("the template has no `command` array whose `-r` the plan can set")?;
    let at = command
        .iter()
        .position(|v| v.as_str().is_some_and(|a| REPS_FLAGS.contains(&a)))
        .context("the template's command has no `-r N`: give the engine's repetitions there")?;
    if at + 1 >= command.len() {
        bail!("the template's command ends at `-r`: give it a value, which the plan replaces");
    }
    command.replace(at + 1, reps.to_string());
    Ok(())
}

/// Applies the plan to the template at `template` and writes the spec to `out`, refusing a
/// result that is not a valid spec.
pub fn write(template: &Path, out: &Path, applied: &Applied, origin: &str) -> anyhow::Result<()> {
    let shown = template.display();
    let text = std::fs::read_to_string(template).with_context(|| format!("cannot read {shown}"))?;
    let planned = apply(&text, applied, origin).with_context(|| shown.to_string())?;
    Spec::parse(out, &planned)
        .map_err(|e| anyhow::anyhow!("the planned spec is not valid: {e}"))?;
    std::fs::write(out, planned).with_context(|| format!("cannot write {}", out.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = r#"# A/A
name = "aa"
command = ["engine", "bench", "-r", "TBD", "--rows", "reps"]  # -r from the plan
output = "csv"
passes = 8
warmup_passes = 1

[[arm]]
name = "a"
role = "base"

[[arm]]
name = "b"
role = "reflexive"

[[metric]]
column = "decode_tok_s"
better = "higher"
"#;

    fn applied() -> Applied {
        Applied {
            reps: 3,
            halfwidth_pct: 0.005,
            looks: vec![5, 7, 9],
            within_s: Some(120.0),
        }
    }

    #[test]
    fn the_plan_sets_the_reps_and_the_stop_and_keeps_the_rest() {
        let out = apply(TEMPLATE, &applied(), "analyze plan p.csv --halfwidth 0.005").unwrap();
        let spec = Spec::parse(Path::new("aa.toml"), &out).unwrap();
        let r = spec.command.iter().position(|a| a == "-r").unwrap();
        assert_eq!(spec.command[r + 1], "3");
        assert_eq!(spec.passes(), 9);
        let stop = spec.stop.unwrap();
        assert_eq!(stop.looks, vec![5, 7, 9]);
        assert_eq!(stop.halfwidth_pct, 0.005);
        assert_eq!(stop.spread, ladder::spec::StopSpread::Pooled);
        assert_eq!(stop.within_s, Some(120.0));
        assert!(out.starts_with("# Planned by `analyze plan p.csv --halfwidth 0.005`"));
        assert!(out.contains("# -r from the plan") && out.contains("# A/A"));
    }

    #[test]
    fn a_template_without_reps_is_refused_with_the_fix() {
        let no_r = TEMPLATE.replace("\"-r\", \"TBD\", ", "");
        let err = apply(&no_r, &applied(), "x").unwrap_err().to_string();
        assert!(err.contains("-r N"), "{err}");
        let dangling = TEMPLATE.replace("\"-r\", \"TBD\", \"--rows\", \"reps\"", "\"-r\"");
        let err = apply(&dangling, &applied(), "x").unwrap_err().to_string();
        assert!(err.contains("ends at `-r`"), "{err}");
    }
}
