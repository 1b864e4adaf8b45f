//! The GPU arms: environment variables that change how the decode kernels are launched and
//! fused. Dependent launch and the weight prefetch and preload never change what is computed; folding the
//! norms, and where the router's logits are summed, change the fp32 rounding, so greedy tokens may differ.
//!
//! The defaults are what the ladders on the H200 chose (`reports/engine-options-h200.md`,
//! `reports/engine-pdl-h200.md`, `reports/engine-preload-h200.md`): dependent launch, +2.5 %
//! decode and +1.2 % prefill against none of the first three, and the register preload of the
//! weights, +3.8 % decode on top of it; folding the norms and prefetching the weights into the
//! L2 each cost about 2 % of decode, so both are off unless asked for. Folding, measured again
//! once it had kernels of its own (`reports/engine-fold-h200.md`), read +0.5 % and +1.1 % of
//! decode in two ladders that their reflexive controls disqualified. Since the MoE router
//! normalises the post-attention rows itself, the option folds only the input norm (and a dense
//! FFN's): +2.1 % of 35B-A3B decode in a qualified ladder (`reports/engine-fold-proj-h200.md`)
//! and +3.2 % of its speculative decode, but −7.5 % on dense-27b's speculative decode, whose
//! verify folds it into 4-position projections of 5,120 columns (and its FFN's norm into
//! 17,408-row ones). So the default, `auto`, folds the input norm of MoE models only. The
//! router's logits in the output projection's launch (`ENGINE_ROUTER_IN_OUT`) were measured
//! by alternated bench runs, +2.2 % of 35B-A3B decode (README-cuda, twenty-first pass); they
//! sum in another order than the router cluster's, so its tokens differ.

use anyhow::{bail, Result};

/// Help text for the variables (for `engine bench --help`).
pub const OPTIONS_ENV_HELP: &str =
    "  ENGINE_PDL=on|off   [default: on; on: each kernel may start while the one before runs
      (programmatic dependent launch) and waits for it inside; off: each starts when the one
      before ends]
  ENGINE_FOLD_NORM=auto|on|off   [default: auto; on: a layer's input RMSNorm (and a dense
      FFN's post-attention norm) is computed inside the projections that read it; off: a
      kernel each; auto: on for the input norm of MoE models, off for dense ones. A decode
      MoE's post-attention norm is always computed by its router]
  ENGINE_WEIGHT_PREFETCH=on|off   [default: off; on: the projection, router and state kernels
      prefetch their weights (state) into the L2 before waiting for the kernel before them]
  ENGINE_WEIGHT_PRELOAD=on|off   [default: on; on: the projection, router and MoE kernels
      load their first weights into registers before that wait (gate‖up: the shared
      expert's rows; down: every row, from the routing the router wrote), the GDN step its
      state and conv window, the attention its position and the cached keys of earlier
      rounds]
  ENGINE_ROUTER_IN_OUT=on|off   [default: on; on: a decode MoE's router logits are computed
      in the launch of the output projection before it (through the projection's weights,
      made once at start-up) and its last block routes, so the MoE takes two launches after
      it; off: the router has a launch of its own]";

/// How the CUDA backend runs a decode round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuOptions {
    /// Programmatic dependent launch (`ENGINE_PDL`).
    pub pdl: bool,
    /// Norms folded into the kernels that read them (`ENGINE_FOLD_NORM`).
    pub fold_norms: FoldNorms,
    /// L2 prefetch of weights before the dependency wait (`ENGINE_WEIGHT_PREFETCH`).
    pub weight_prefetch: bool,
    /// First weights into registers before the dependency wait (`ENGINE_WEIGHT_PRELOAD`).
    pub weight_preload: bool,
    /// The MoE router computed in the output projection's launch (`ENGINE_ROUTER_IN_OUT`).
    pub router_in_out: bool,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions {
            pdl: true,
            fold_norms: FoldNorms::Auto,
            weight_prefetch: false,
            weight_preload: true,
            router_in_out: true,
        }
    }
}

/// Which RMSNorms the decode kernels fold into the projections that read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldNorms {
    /// The input norm of MoE models (where the ladders measured a gain), none of dense ones.
    Auto,
    /// The input norm, and a dense FFN's post-attention norm.
    On,
    Off,
}

impl FoldNorms {
    /// Whether a layer's input norm is folded, in a model whose FFN is an MoE or dense.
    pub fn input_norm(self, moe: bool) -> bool {
        match self {
            FoldNorms::Auto => moe,
            FoldNorms::On => true,
            FoldNorms::Off => false,
        }
    }

    fn word(self) -> &'static str {
        match self {
            FoldNorms::Auto => "auto",
            FoldNorms::On => "on",
            FoldNorms::Off => "off",
        }
    }
}

impl GpuOptions {
    /// Reads the options from the process environment.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|var| std::env::var(var).ok())
    }

    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let d = Self::default();
        let flag = |var: &str, default: bool| on_off(var, lookup(var).as_deref(), default);
        Ok(GpuOptions {
            pdl: flag("ENGINE_PDL", d.pdl)?,
            fold_norms: fold_norms(lookup("ENGINE_FOLD_NORM").as_deref())?,
            weight_prefetch: flag("ENGINE_WEIGHT_PREFETCH", d.weight_prefetch)?,
            weight_preload: flag("ENGINE_WEIGHT_PRELOAD", d.weight_preload)?,
            router_in_out: flag("ENGINE_ROUTER_IN_OUT", d.router_in_out)?,
        })
    }

    /// `pdl=on fold_norm=auto weight_prefetch=off weight_preload=on router_in_out=on`, for the
    /// start-up line.
    pub fn describe(&self) -> String {
        let word = |b: bool| if b { "on" } else { "off" };
        format!(
            "pdl={} fold_norm={} weight_prefetch={} weight_preload={} router_in_out={}",
            word(self.pdl),
            self.fold_norms.word(),
            word(self.weight_prefetch),
            word(self.weight_preload),
            word(self.router_in_out)
        )
    }
}

fn fold_norms(value: Option<&str>) -> Result<FoldNorms> {
    match value {
        None | Some("auto") => Ok(FoldNorms::Auto),
        Some("on") => Ok(FoldNorms::On),
        Some("off") => Ok(FoldNorms::Off),
        Some(other) => bail!("unknown value `{other}` for environment variable ENGINE_FOLD_NORM; allowed: auto, on, off"),
    }
}

fn on_off(var: &str, value: Option<&str>, default: bool) -> Result<bool> {
    match value {
        None => Ok(default),
        Some("on") => Ok(true),
        Some("off") => Ok(false),
        Some(other) => {
            bail!("unknown value `{other}` for environment variable {var}; allowed: on, off")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<GpuOptions> {
        GpuOptions::from_lookup(|v| {
            vars.iter()
                .find(|(k, _)| *k == v)
                .map(|(_, x)| x.to_string())
        })
    }

    #[test]
    fn dependent_launch_and_preload_are_the_default_and_each_option_turns_alone() {
        assert_eq!(
            read(&[]).unwrap(),
            GpuOptions {
                pdl: true,
                fold_norms: FoldNorms::Auto,
                weight_prefetch: false,
                weight_preload: true,
                router_in_out: true
            }
        );
        assert_eq!(
            read(&[("ENGINE_PDL", "off")]).unwrap(),
            GpuOptions {
                pdl: false,
                ..Default::default()
            }
        );
        assert_eq!(
            read(&[("ENGINE_FOLD_NORM", "on")]).unwrap(),
            GpuOptions {
                fold_norms: FoldNorms::On,
                ..Default::default()
            }
        );
        assert_eq!(
            read(&[("ENGINE_FOLD_NORM", "off")]).unwrap(),
            GpuOptions {
                fold_norms: FoldNorms::Off,
                ..Default::default()
            }
        );
        assert_eq!(
            read(&[("ENGINE_FOLD_NORM", "auto")]).unwrap(),
            GpuOptions::default()
        );
        assert_eq!(
            read(&[("ENGINE_WEIGHT_PREFETCH", "on"), ("ENGINE_PDL", "on")]).unwrap(),
            GpuOptions {
                weight_prefetch: true,
                ..Default::default()
            }
        );
        assert_eq!(
            read(&[("ENGINE_WEIGHT_PRELOAD", "off")]).unwrap(),
            GpuOptions {
                weight_preload: false,
                ..Default::default()
            }
        );
        assert_eq!(
            read(&[("ENGINE_ROUTER_IN_OUT", "off")]).unwrap(),
            GpuOptions {
                router_in_out: false,
                ..Default::default()
            }
        );
    }

    #[test]
    fn a_bad_value_names_the_variable_and_the_choices() {
        let err = read(&[("ENGINE_PDL", "yes")]).unwrap_err().to_string();
        assert!(
            err.contains("ENGINE_PDL") && err.contains("`yes`") && err.contains("on, off"),
            "{err}"
        );
        let err = read(&[("ENGINE_FOLD_NORM", "yes")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ENGINE_FOLD_NORM")
                && err.contains("`yes`")
                && err.contains("auto, on, off"),
            "{err}"
        );
    }

    #[test]
    fn auto_folds_the_input_norm_of_moe_models_only() {
        assert!(FoldNorms::Auto.input_norm(true) && !FoldNorms::Auto.input_norm(false));
        assert!(FoldNorms::On.input_norm(false) && !FoldNorms::Off.input_norm(true));
    }
}
