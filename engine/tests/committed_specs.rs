//! Every committed spec that runs this build of the engine asks for what the engine accepts:
//! its argv, its environment and the bench plan they make. A device call is scarce; a typo in
//! a spec must fail here, not on the card.

use engine::cli::{self, Command};
use engine::options;
use ladder::spec::Spec;
use std::path::{Path, PathBuf};

/// The programs that are this build: `.bin/engine` on the device, `target/release/engine`
/// here. Build arms (`.bin/before/engine`) run other builds, whose flags may differ.
const THIS_BUILD: [&str; 2] = [".bin/engine", "target/release/engine"];

fn specs(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            specs(&path, found);
        } else if path.extension().is_some_and(|e| e == "toml") {
            found.push(path);
        }
    }
}

/// What is wrong with `arm`'s cell of `spec`, if it runs this build.
fn refusal(spec: &Spec, arm: &ladder::spec::ArmSpec) -> Option<String> {
    let argv = spec.argv_of(arm);
    if !THIS_BUILD.contains(&argv.first()?.as_str()) {
        return None;
    }
    let env: Vec<(&String, &String)> = spec.env.iter().chain(&arm.env).collect();
    // The arm's own value wins, as the runner sets it after the spec's.
    let lookup = |name: &str| {
        env.iter()
            .rev()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    };
    let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    let checked = cli::try_parse(argv.iter().map(Into::into))
        .map_err(|e| e.to_string())
        .and_then(|cli| match cli.command {
            Command::Bench(args) => args
                .plan(&lookup)
                .map_err(|e| format!("{e:#}"))
                .and_then(|plan| split_rounds(spec, &plan)),
            _ => Ok(()),
        })
        .and_then(|()| options::check(&names, &lookup).map_err(|e| format!("{e:#}")));
    checked.err()
}

/// The `[split]` round count names the column that counts this arm's rounds: `spec_rounds`
/// under speculation, where a round yields several tokens, and `n_gen` in plain decode, where
/// `spec_rounds` is 0 and the runner would refuse the first cell.
fn split_rounds(spec: &Spec, plan: &engine::bench::BenchPlan) -> Result<(), String> {
    let Some(split) = &spec.split else {
        return Ok(());
    };
    let (counts, decode) = match plan.draft_tokens {
        Some(_) => ("spec_rounds", "speculative decode"),
        None => ("n_gen", "plain decode"),
    };
    if split.rounds == counts {
        return Ok(());
    }
    Err(format!(
        "[split] rounds = {:?} does not count this arm's rounds ({decode}): name {counts:?}",
        split.rounds
    ))
}

#[test]
fn every_committed_spec_that_runs_this_engine_is_accepted_by_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut paths = Vec::new();
    specs(&root.join("ladders"), &mut paths);
    let (mut cells, mut refused) = (0, Vec::new());
    for path in &paths {
        let spec = Spec::load(path).unwrap_or_else(|e| panic!("{e}")).spec;
        for arm in &spec.arms {
            cells += usize::from(THIS_BUILD.contains(&spec.argv_of(arm)[0].as_str()));
            if let Some(why) = refusal(&spec, arm) {
                refused.push(format!("{} arm {}: {why}", path.display(), arm.name));
            }
        }
    }
    assert!(refused.is_empty(), "{}", refused.join("\n"));
    // The device's specs alone hold more arms than this: the test read them.
    assert!(cells >= 60, "only {cells} arms run this build");
}

#[test]
fn a_misspelt_variable_or_flag_in_a_spec_is_refused() {
    let spec = |arm: &str| {
        let text = format!(
            "name = \"t\"\ncommand = [\".bin/engine\", \"bench\", \"-pg\", \"8,8\"]\n\
             passes = 4\n[[metric]]\ncolumn = \"decode_tok_s\"\nbetter = \"higher\"\n\
             [[arm]]\nname = \"base\"\nrole = \"base\"\n[[arm]]\nname = \"b\"\n{arm}\n"
        );
        Spec::parse(Path::new("t.toml"), &text).unwrap()
    };
    let refused = |arm: &str| {
        let s = spec(arm);
        refusal(&s, &s.arms[1])
    };
    assert_eq!(refused("env = { ENGINE_PDL = \"off\" }"), None);
    let typo = refused("env = { ENGINE_PD = \"off\" }").unwrap();
    assert!(typo.contains("did you mean ENGINE_PDL?"), "{typo}");
    let flag = refused("args = [\"--rows\", \"kernels\"]").unwrap();
    assert!(flag.contains("kernels"), "{flag}");
    let plan = refused("args = [\"--warmup-decode\", \"9\"]").unwrap();
    assert!(plan.contains("--warmup-decode 9"), "{plan}");
    let pad = refused("args = [\"--warmup\", \"0\"]\nenv = { ENGINE_DECODE_PAD_PCT = \"5\" }");
    assert_eq!(pad, None, "a pad needs no warm-up");
}

#[test]
fn a_split_that_cannot_count_an_arms_rounds_is_refused() {
    let refused = |rounds: &str, args: &str| {
        let text = format!(
            "name = \"t\"\ncommand = [\".bin/engine\", \"bench\", \"-pg\", \"8,8\"]\n\
             passes = 4\n[[metric]]\ncolumn = \"decode_tok_s\"\nbetter = \"higher\"\n\
             [split]\nrounds = \"{rounds}\"\ntime = \"decode_seconds_mean\"\n\
             [[arm]]\nname = \"base\"\nrole = \"base\"\n{args}\n[[arm]]\nname = \"b\"\n{args}\n"
        );
        let s = Spec::parse(Path::new("t.toml"), &text).unwrap();
        refusal(&s, &s.arms[0])
    };
    let mtp = "args = [\"--spec\", \"mtp\"]";
    assert_eq!(refused("n_gen", ""), None);
    assert_eq!(refused("spec_rounds", mtp), None);
    let plain = refused("spec_rounds", "").unwrap();
    assert!(
        plain.contains("plain decode") && plain.contains("\"n_gen\""),
        "{plain}"
    );
    let spec = refused("n_gen", mtp).unwrap();
    assert!(spec.contains("\"spec_rounds\""), "{spec}");
}
