//! The experiment's arms: environment variables that change how the state pool is laid
//! out and fetched, never what is computed.

use anyhow::{bail, Result};

/// Help text listing the variables (shown by `engine bench --help`).
pub const ENV_HELP: &str = "\
Environment variables (arms; every arm computes the same tokens):
  ENGINE_PREFETCH=off|next-layer|null|structural-zero   [default: off]
      next-layer: while a layer's FFN weights stream, prefetch the next GDN layer's live
                  state slot (conv + recurrent) into the cache
      null:       the same code path runs, prefetching nothing
      structural-zero: the same prefetch volume from a decoy buffer of the same size that
                  nothing reads
  ENGINE_POOL_LAYOUT=by-layer|by-slot   [default: by-layer]
      by-layer: per layer [conv s0][conv s1][rec s0][rec s1]
      by-slot:  [all layers' s0][all layers' s1], each layer's slot [conv][rec]
  ENGINE_BACKEND=cpu|cuda|auto   used when --backend is not given";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Prefetch {
    #[default]
    Off,
    NextLayer,
    Null,
    StructuralZero,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolLayout {
    ByLayer,
    BySlot,
}

impl Prefetch {
    pub fn name(self) -> &'static str {
        match self {
            Prefetch::Off => "off",
            Prefetch::NextLayer => "next-layer",
            Prefetch::Null => "null",
            Prefetch::StructuralZero => "structural-zero",
        }
    }
}

impl PoolLayout {
    pub fn name(self) -> &'static str {
        match self {
            PoolLayout::ByLayer => "by-layer",
            PoolLayout::BySlot => "by-slot",
        }
    }
}

/// The arm a process runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arm {
    pub prefetch: Prefetch,
    pub layout: PoolLayout,
}

impl Default for Arm {
    fn default() -> Self {
        Arm {
            prefetch: Prefetch::Off,
            layout: PoolLayout::ByLayer,
        }
    }
}

fn pick<T: Copy>(var: &str, value: Option<&str>, choices: &[(&str, T)], default: T) -> Result<T> {
    let Some(v) = value else { return Ok(default) };
    match choices.iter().find(|(n, _)| *n == v) {
        Some((_, t)) => Ok(*t),
        None => {
            let allowed: Vec<_> = choices.iter().map(|(n, _)| *n).collect();
            bail!(
                "unknown value `{v}` for environment variable {var}; allowed: {}",
                allowed.join(", ")
            )
        }
    }
}

impl Arm {
    /// Reads the arm from `lookup` (the process environment in the binary).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Arm> {
        use Prefetch::*;
        let p = lookup("ENGINE_PREFETCH");
        let l = lookup("ENGINE_POOL_LAYOUT");
        let prefetch = pick(
            "ENGINE_PREFETCH",
            p.as_deref(),
            &[
                ("off", Off),
                ("next-layer", NextLayer),
                ("null", Null),
                ("structural-zero", StructuralZero),
            ],
            Off,
        )?;
        let layout = pick(
            "ENGINE_POOL_LAYOUT",
            l.as_deref(),
            &[
                ("by-layer", PoolLayout::ByLayer),
                ("by-slot", PoolLayout::BySlot),
            ],
            PoolLayout::ByLayer,
        )?;
        Ok(Arm { prefetch, layout })
    }

    pub fn from_env() -> Result<Arm> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let env = |p: &'static str, l: &'static str| {
            move |k: &str| match k {
                "ENGINE_PREFETCH" => Some(p.to_string()),
                "ENGINE_POOL_LAYOUT" => Some(l.to_string()),
                _ => None,
            }
        };
        let a = Arm::from_lookup(env("structural-zero", "by-slot")).unwrap();
        assert_eq!(
            a,
            Arm {
                prefetch: Prefetch::StructuralZero,
                layout: PoolLayout::BySlot
            }
        );
        assert_eq!(Arm::from_lookup(|_| None).unwrap(), Arm::default());
        let e = Arm::from_lookup(env("nextlayer", "by-slot"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ENGINE_PREFETCH") && e.contains("next-layer"),
            "{e}"
        );
        let e = Arm::from_lookup(env("off", "slot"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ENGINE_POOL_LAYOUT") && e.contains("by-slot"),
            "{e}"
        );
    }
}
