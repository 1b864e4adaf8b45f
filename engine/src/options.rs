//! The `ENGINE_*` environment variables: every choice the engine reads from its environment,
//! as clap value enums, with one reader and one help text (`engine options`).
//!
//! The variables are environment variables, not flags, so that the runner's arms can set them
//! around an unchanged command line. Three groups are read where they are needed: the CPU arm
//! ([`Arm`]: state pool layout and prefetch), the L2 arm ([`L2Arm`]) and the GPU launch
//! options ([`GpuOptions`]); `ENGINE_BACKEND` only when `--backend` is not given, and
//! `ENGINE_DECODE_PAD_PCT` ([`decode_pad_pct`]) and `ENGINE_SLOW_OP` ([`slow_op`]) by
//! `engine bench`. The one flag with values of its own, `engine bench --rows` ([`Rows`]), is
//! here too. Every variable, its values
//! and its default are listed once, in [`VARIABLES`], which the readers and the help text
//! share.

use anyhow::{anyhow, Result};
use clap::ValueEnum;

/// A variable's value from the environment (`None` when unset); tests pass a table instead.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment, as a [`Lookup`].
pub fn environment(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// The word a value is spelled with in its variable (`next-layer`, `on`, ...).
pub trait Named: ValueEnum {
    fn name(&self) -> String {
        self.to_possible_value()
            .expect("every value has a name")
            .get_name()
            .to_string()
    }
}

impl<T: ValueEnum> Named for T {}

/// One variable: its name, its value when unset, and what it changes.
pub struct Variable<T: 'static> {
    pub name: &'static str,
    pub default: T,
    pub about: &'static str,
}

impl<T: ValueEnum + Clone> Variable<T> {
    /// The variable's value, its default when unset; an unknown value is an error that names
    /// the variable and the allowed values.
    pub fn read(&self, lookup: Lookup) -> Result<T> {
        let Some(value) = lookup(self.name) else {
            return Ok(self.default.clone());
        };
        T::from_str(&value, false).map_err(|_| {
            anyhow!(
                "unknown value `{value}` for environment variable {}; allowed: {}",
                self.name,
                names::<T>().join(", ")
            )
        })
    }

    fn help(&self) -> String {
        let values = T::value_variants().iter().map(|v| {
            let p = v.to_possible_value().expect("every value has a name");
            (
                p.get_name().to_string(),
                p.get_help().map(|h| h.to_string()),
            )
        });
        entry(
            self.name,
            &names::<T>().join("|"),
            &self.default.name(),
            self.about,
            values.collect(),
        )
    }
}

fn names<T: ValueEnum>() -> Vec<String> {
    T::value_variants().iter().map(Named::name).collect()
}

/// Formats one variable for the help text: `NAME=a|b   [default: a]`, what it changes, and
/// one line for each value that has a help of its own, wrapped to 100 columns.
fn entry(
    name: &str,
    values: &str,
    default: &str,
    about: &str,
    lines: Vec<(String, Option<String>)>,
) -> String {
    let mut s = format!("  {name}={values}   [default: {default}]\n");
    if !about.is_empty() {
        s += &wrap("      ", about, 6);
    }
    let width = lines
        .iter()
        .filter(|(_, h)| h.is_some())
        .map(|(v, _)| v.len())
        .max()
        .unwrap_or(0);
    for (value, help) in lines {
        if let Some(help) = help {
            s += &wrap(&format!("      {value:width$}  "), &help, 8 + width);
        }
    }
    s
}

/// `lead` then `text`, broken at spaces into lines of at most 100 columns, the later lines
/// indented by `indent`.
fn wrap(lead: &str, text: &str, indent: usize) -> String {
    let (mut out, mut line) = (String::new(), lead.to_string());
    let mut fresh = true;
    for word in text.split_whitespace() {
        if !fresh && line.chars().count() + 1 + word.chars().count() > 100 {
            out += &format!("{}\n", line.trim_end());
            (line, fresh) = (" ".repeat(indent), true);
        }
        if !fresh {
            line.push(' ');
        }
        line += word;
        fresh = false;
    }
    out + line.trim_end() + "\n"
}

/// Turns a behaviour on or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

impl Switch {
    fn is_on(self) -> bool {
        self == Switch::On
    }
}

// ---------------------------------------------------------------------------------------
// The CPU arm: how the state pool is laid out and fetched, never what is computed.

/// What the CPU prefetches of the next GDN layer's state while a layer's weights stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Prefetch {
    /// No prefetch.
    #[default]
    Off,
    /// While a layer's FFN weights stream, prefetch the next GDN layer's live state slot
    /// (conv + recurrent) into the cache.
    NextLayer,
    /// The same code path runs, prefetching nothing.
    Null,
    /// The same prefetch volume from a decoy buffer of the same size that nothing reads.
    StructuralZero,
}

/// The order of the GDN state slots in the pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum PoolLayout {
    /// Per layer [conv s0][conv s1][rec s0][rec s1].
    #[default]
    ByLayer,
    /// [all layers' s0][all layers' s1], each layer's slot [conv][rec].
    BySlot,
    /// [s0: every layer's conv, then every layer's rec][s1: the same]: a slot's recurrent
    /// state is one byte range (what ENGINE_L2_WINDOW=recurrent covers).
    BySlotKind,
}

pub const PREFETCH: Variable<Prefetch> = Variable {
    name: "ENGINE_PREFETCH",
    default: Prefetch::Off,
    about: "",
};
pub const POOL_LAYOUT: Variable<PoolLayout> = Variable {
    name: "ENGINE_POOL_LAYOUT",
    default: PoolLayout::ByLayer,
    about: "",
};

/// The CPU arm a process runs under (every arm computes the same tokens).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arm {
    pub prefetch: Prefetch,
    pub layout: PoolLayout,
}

impl Arm {
    /// Reads `ENGINE_PREFETCH` and `ENGINE_POOL_LAYOUT`.
    pub fn from_lookup(lookup: Lookup) -> Result<Arm> {
        Ok(Arm {
            prefetch: PREFETCH.read(lookup)?,
            layout: POOL_LAYOUT.read(lookup)?,
        })
    }

    pub fn from_env() -> Result<Arm> {
        Self::from_lookup(&environment)
    }
}

// ---------------------------------------------------------------------------------------
// The backend.

/// Where the model runs (`--backend`, else `ENGINE_BACKEND`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendChoice {
    Cpu,
    Cuda,
    /// cuda when a device is available, else cpu.
    Auto,
}

pub const BACKEND: Variable<BackendChoice> = Variable {
    name: "ENGINE_BACKEND",
    default: BackendChoice::Cpu,
    about: "used when --backend is not given",
};

// ---------------------------------------------------------------------------------------
// The L2 arm: persistence of the GDN state pool in the GPU's L2 (crate::cuda::l2).

/// What `ENGINE_L2` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum L2Mode {
    /// No window, no reserve.
    Off,
    /// An access-policy window (hitProp persisting, missProp normal) over the state that
    /// ENGINE_L2_WINDOW names, on every kernel node of the decode graphs, plus the persisting
    /// reserve of ENGINE_L2_RESERVE.
    Window,
    /// The same reserve, nothing pinned.
    ReserveOnly,
    /// The same reserve and windows of the same geometry over a decoy buffer of the pool's
    /// size that nothing reads.
    StructuralZero,
    /// The same code path, installing no window and no reserve.
    Null,
}

/// The window's hit ratio: `Clamp` = reserve / window, at most 1 (a larger ratio over a
/// window wider than the reserve makes the persisting lines evict each other), or a fixed
/// number in (0, 1].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HitRatio {
    Clamp,
    Fixed(f32),
}

pub const L2: Variable<L2Mode> = Variable {
    name: "ENGINE_L2",
    default: L2Mode::Off,
    about: "",
};
pub const L2_GUARD: Variable<Switch> = Variable {
    name: "ENGINE_L2_GUARD",
    default: Switch::On,
    about: "on: a window wider than accessPolicyMaxWindowSize installs nothing (said once on \
            stderr); off: the request goes to the driver",
};
const L2_HIT_RATIO: &str = "ENGINE_L2_HIT_RATIO";

/// What the window of a decode graph covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum L2Window {
    /// The whole state pool, both slots.
    Pool,
    /// The state slot the graph's round reads (conv and recurrent state of every layer); needs
    /// a layout that keeps each slot in one range (by-slot, by-slot-kind).
    Slot,
    /// The recurrent state of the slot the round reads, without its conv state; needs
    /// ENGINE_POOL_LAYOUT=by-slot-kind.
    Recurrent,
}

pub const L2_WINDOW: Variable<L2Window> = Variable {
    name: "ENGINE_L2_WINDOW",
    default: L2Window::Pool,
    about: "picked per captured graph: the slot is the live slot its round reads",
};

/// The persisting reserve `ENGINE_L2_RESERVE` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReserveSize {
    /// min(persistingL2CacheMaxSize, pool), in whole granules.
    Max,
    /// This many bytes, rounded up to the device's granularity.
    Bytes(usize),
}

const L2_RESERVE: &str = "ENGINE_L2_RESERVE";

/// The L2 arm a process runs under.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct L2Arm {
    pub mode: L2Mode,
    pub window: L2Window,
    pub reserve: ReserveSize,
    pub hit_ratio: HitRatio,
    /// Install nothing when the window is wider than one access-policy window allows.
    pub guard: bool,
}

impl Default for L2Arm {
    fn default() -> Self {
        L2Arm {
            mode: L2.default,
            window: L2_WINDOW.default,
            reserve: ReserveSize::Max,
            hit_ratio: HitRatio::Clamp,
            guard: L2_GUARD.default.is_on(),
        }
    }
}

impl L2Arm {
    /// Reads `ENGINE_L2`, `ENGINE_L2_WINDOW`, `ENGINE_L2_RESERVE`, `ENGINE_L2_HIT_RATIO` and
    /// `ENGINE_L2_GUARD`.
    pub fn from_lookup(lookup: Lookup) -> Result<L2Arm> {
        Ok(L2Arm {
            mode: L2.read(lookup)?,
            window: L2_WINDOW.read(lookup)?,
            reserve: reserve_size(lookup)?,
            hit_ratio: hit_ratio(lookup)?,
            guard: L2_GUARD.read(lookup)?.is_on(),
        })
    }

    pub fn from_env() -> Result<L2Arm> {
        Self::from_lookup(&environment)
    }
}

/// The one variable that is not a choice among words: `clamp` or a number in (0, 1].
fn hit_ratio(lookup: Lookup) -> Result<HitRatio> {
    match lookup(L2_HIT_RATIO).as_deref() {
        None | Some("clamp") => Ok(HitRatio::Clamp),
        Some(v) => match v.parse::<f32>() {
            Ok(r) if r > 0.0 && r <= 1.0 => Ok(HitRatio::Fixed(r)),
            _ => Err(anyhow!(
                "invalid value `{v}` for environment variable {L2_HIT_RATIO}; allowed: clamp, or a number in (0, 1] such as 0.75"
            )),
        },
    }
}

fn hit_ratio_help() -> String {
    entry(
        L2_HIT_RATIO,
        "clamp|NUMBER",
        "clamp",
        "clamp: reserve / window, at most 1; NUMBER: a fixed ratio in (0, 1]",
        vec![],
    )
}

/// `max`, a byte count (`15728640`) or MiB (`15MiB`, `3.75MiB`).
fn reserve_size(lookup: Lookup) -> Result<ReserveSize> {
    let Some(v) = lookup(L2_RESERVE) else {
        return Ok(ReserveSize::Max);
    };
    let bytes = match v.strip_suffix("MiB") {
        _ if v == "max" => return Ok(ReserveSize::Max),
        Some(mib) => mib
            .parse::<f64>()
            .ok()
            .filter(|m| m.is_finite() && *m > 0.0)
            .map(|m| (m * 1_048_576.0).round() as usize),
        None => v.parse::<usize>().ok(),
    };
    match bytes {
        Some(b) if b > 0 => Ok(ReserveSize::Bytes(b)),
        _ => Err(anyhow!(
            "invalid value `{v}` for environment variable {L2_RESERVE}; allowed: max, a positive \
             byte count such as 15728640, or MiB such as 15MiB (for no reserve use ENGINE_L2=null)"
        )),
    }
}

fn reserve_help() -> String {
    entry(
        L2_RESERVE,
        "max|BYTES|NMiB",
        "max",
        "the persisting L2 reserve of window, reserve-only and structural-zero, rounded up to \
         the device's granularity (L2/16) and said on stderr; max: min(persistingL2CacheMaxSize, \
         pool) in whole granules; above persistingL2CacheMaxSize is an error",
        vec![],
    )
}

// ---------------------------------------------------------------------------------------
// The GPU launch options: how the decode kernels are launched and fused. Dependent launch and
// the weight prefetch and preload never change what is computed; folding the norms, and where
// the router's logits are summed, change the fp32 rounding, so greedy tokens may differ. The
// defaults are the ones the ladders chose (docs/journal.md lists them).

/// Which RMSNorms the decode kernels fold into the projections that read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FoldNorms {
    /// On for the input norm of MoE models, off for dense ones.
    Auto,
    /// A layer's input RMSNorm (and a dense FFN's post-attention norm) is computed inside the
    /// projections that read it.
    On,
    /// A kernel each.
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
}

pub const PDL: Variable<Switch> = Variable {
    name: "ENGINE_PDL",
    default: Switch::On,
    about: "on: each kernel may start while the one before runs (programmatic dependent launch) \
            and waits for it inside; off: each starts when the one before ends",
};
pub const FOLD_NORM: Variable<FoldNorms> = Variable {
    name: "ENGINE_FOLD_NORM",
    default: FoldNorms::Auto,
    about: "a decode MoE's post-attention norm is always computed by its router",
};
pub const WEIGHT_PREFETCH: Variable<Switch> = Variable {
    name: "ENGINE_WEIGHT_PREFETCH",
    default: Switch::Off,
    about: "on: the projection, router and state kernels prefetch their weights (state) into \
            the L2 before waiting for the kernel before them",
};
pub const WEIGHT_PRELOAD: Variable<Switch> = Variable {
    name: "ENGINE_WEIGHT_PRELOAD",
    default: Switch::On,
    about: "on: the projection, router and MoE kernels load their first weights into registers \
            before that wait (gate‖up: the shared expert's rows; down: every row, from the \
            routing the router wrote), the GDN step its state and conv window, the attention \
            its position and the cached keys of earlier rounds",
};
pub const ROUTER_IN_OUT: Variable<Switch> = Variable {
    name: "ENGINE_ROUTER_IN_OUT",
    default: Switch::On,
    about: "on: a decode MoE's router logits are computed in the launch of the output \
            projection before it (through the projection's weights, made once at start-up) \
            and its last block routes, so the MoE takes two launches after it; off: the \
            router has a launch of its own",
};

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
            pdl: PDL.default.is_on(),
            fold_norms: FOLD_NORM.default,
            weight_prefetch: WEIGHT_PREFETCH.default.is_on(),
            weight_preload: WEIGHT_PRELOAD.default.is_on(),
            router_in_out: ROUTER_IN_OUT.default.is_on(),
        }
    }
}

impl GpuOptions {
    /// Reads the five launch variables.
    pub fn from_lookup(lookup: Lookup) -> Result<Self> {
        Ok(GpuOptions {
            pdl: PDL.read(lookup)?.is_on(),
            fold_norms: FOLD_NORM.read(lookup)?,
            weight_prefetch: WEIGHT_PREFETCH.read(lookup)?.is_on(),
            weight_preload: WEIGHT_PRELOAD.read(lookup)?.is_on(),
            router_in_out: ROUTER_IN_OUT.read(lookup)?.is_on(),
        })
    }

    pub fn from_env() -> Result<Self> {
        Self::from_lookup(&environment)
    }

    /// `pdl=on fold_norm=auto weight_prefetch=off weight_preload=on router_in_out=on`, for the
    /// start-up line.
    pub fn describe(&self) -> String {
        let word = |b: bool| if b { "on" } else { "off" };
        format!(
            "pdl={} fold_norm={} weight_prefetch={} weight_preload={} router_in_out={}",
            word(self.pdl),
            self.fold_norms.name(),
            word(self.weight_prefetch),
            word(self.weight_preload),
            word(self.router_in_out)
        )
    }
}

// ---------------------------------------------------------------------------------------
// The known effect: `engine bench` pads every timed decode round by a share of the warm-up's
// mean round, so that a ladder can check that its intervals recover a slowdown set in advance.

const DECODE_PAD_PCT: &str = "ENGINE_DECODE_PAD_PCT";
/// Ten times the round: a larger pad is a mistyped value, not a control.
const MAX_DECODE_PAD_PCT: f64 = 1000.0;

/// `ENGINE_DECODE_PAD_PCT`: the pad in percent of every decode round's own time, `None`
/// when unset (no pad, and nothing of its mechanism in the decode).
pub fn decode_pad_pct(lookup: Lookup) -> Result<Option<f64>> {
    let Some(v) = lookup(DECODE_PAD_PCT) else {
        return Ok(None);
    };
    match v.parse::<f64>() {
        // `abs` reads `-0` as 0, which the range lets through.
        Ok(pct) if (0.0..=MAX_DECODE_PAD_PCT).contains(&pct) => Ok(Some(pct.abs())),
        _ => Err(anyhow!(
            "invalid value `{v}` for environment variable {DECODE_PAD_PCT}; allowed: a percentage \
             of every decode round's own time from 0 to {MAX_DECODE_PAD_PCT}, such as 5 or 0.1 \
             (unset it for no pad)"
        )),
    }
}

fn decode_pad_help() -> String {
    entry(
        DECODE_PAD_PCT,
        "PERCENT",
        "unset",
        "engine bench ends every decode round with a busy-wait of PERCENT % of the round's own \
         time and the host's turnaround before it (CUDA: a start mark and a spin kernel in each \
         round's graph): decode tok/s changes by 100·(1/(1 + PERCENT/100) − 1) %, tokens and \
         rounds do not; 0 keeps the mark and the spin with no wait (the mechanism's own cost); \
         unset: no pad",
        vec![],
    )
}

// ---------------------------------------------------------------------------------------
// A known slowdown of one operation: `engine bench` on the CPU stretches every call of one
// operation, so that a ladder's breakdown can be checked against an effect set in advance.

/// The CPU backend's operations, as `engine bench --rows ops` names its rows: the `Backend`
/// methods the CPU implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum CpuOp {
    Embed,
    RmsNorm,
    Matmul,
    MatmulAdd,
    Concat,
    GdnConv,
    GdnRecurrence,
    GatedNorm,
    Attention,
    FfnAdd,
    LmHeadArgmax,
    CopyRows,
    WriteTokens,
    ReadTokens,
    FeedNext,
    PrefetchState,
    PadRound,
}

/// `ENGINE_SLOW_OP=OP:PERCENT`: every call of `op` takes `1 + pct/100` times its own time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowOp {
    pub op: CpuOp,
    pub pct: f64,
}

const SLOW_OP: &str = "ENGINE_SLOW_OP";
/// Eleven times the call: more is a mistyped value, not a control.
const MAX_SLOW_OP_PCT: f64 = 1000.0;

/// `ENGINE_SLOW_OP`: the operation to stretch and by how much, `None` when unset.
pub fn slow_op(lookup: Lookup) -> Result<Option<SlowOp>> {
    let Some(v) = lookup(SLOW_OP) else {
        return Ok(None);
    };
    let bad = || {
        anyhow!(
            "invalid value `{v}` for environment variable {SLOW_OP}; allowed: OP:PERCENT, OP one \
             of {} and PERCENT from 0 to {MAX_SLOW_OP_PCT}, such as matmul:50 (unset it for no \
             slowdown)",
            names::<CpuOp>().join(", ")
        )
    };
    let (op, pct) = v.split_once(':').ok_or_else(bad)?;
    let op = CpuOp::from_str(op, false).map_err(|_| bad())?;
    match pct.parse::<f64>() {
        // `abs` reads `-0` as 0, which the range lets through.
        Ok(pct) if (0.0..=MAX_SLOW_OP_PCT).contains(&pct) => {
            Ok(Some(SlowOp { op, pct: pct.abs() }))
        }
        _ => Err(bad()),
    }
}

fn slow_op_help() -> String {
    entry(
        SLOW_OP,
        "OP:PERCENT",
        "unset",
        &format!(
            "CPU: every call of the operation OP (one of {}) spins, once it returns, until it \
             has taken 1 + PERCENT/100 times its own time, in every rep: OP's row of --rows ops \
             grows by PERCENT %, tokens do not change; 0 times the calls and waits nothing",
            names::<CpuOp>().join(", ")
        ),
        vec![],
    )
}

// ---------------------------------------------------------------------------------------
// The rows `engine bench` prints (a flag, not a variable: a spec's command asks for them).

/// `engine bench --rows`: what follows the summary row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Rows {
    /// The summary row alone.
    #[default]
    Summary,
    /// One row per operation (CPU) or kernel (CUDA) of the decode, timed in reps of their own
    /// after the timed ones.
    Ops,
    /// One row per timed rep, with that rep's own times.
    Reps,
}

// ---------------------------------------------------------------------------------------
// The environment as a whole.

/// Every variable the engine reads, in `engine options`' order.
pub const NAMES: [&str; 15] = [
    PREFETCH.name,
    POOL_LAYOUT.name,
    BACKEND.name,
    L2.name,
    L2_WINDOW.name,
    L2_RESERVE,
    L2_HIT_RATIO,
    L2_GUARD.name,
    PDL.name,
    FOLD_NORM.name,
    WEIGHT_PREFETCH.name,
    WEIGHT_PRELOAD.name,
    ROUTER_IN_OUT.name,
    DECODE_PAD_PCT,
    SLOW_OP,
];

/// Refuses a variable named `ENGINE_*` that the engine does not read: an arm that misspells
/// one would run as its base, a zero effect that no one asked for.
pub fn check_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let Some(unknown) = names
        .into_iter()
        .find(|n| n.starts_with("ENGINE_") && !NAMES.contains(n))
    else {
        return Ok(());
    };
    // Every name shares `ENGINE_`: the likeness is the rest's.
    let rest = |name: &'a str| &name["ENGINE_".len()..];
    let hint = NAMES
        .iter()
        .map(|known| (strsim::jaro_winkler(rest(unknown), rest(known)), known))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, known)| format!(" (did you mean {known}?)"))
        .unwrap_or_default();
    Err(anyhow!(
        "unknown environment variable {unknown}{hint}: the engine reads no variable of that \
         name, so it would change nothing; spell one of the {} that `engine options` lists, or \
         unset it",
        NAMES.len()
    ))
}

/// Checks the environment `names` and `lookup` describe as `engine bench` reads it: every
/// `ENGINE_*` name known, every value allowed.
pub fn check(names: &[&str], lookup: Lookup) -> Result<()> {
    check_names(names.iter().copied())?;
    Arm::from_lookup(lookup)?;
    BACKEND.read(lookup)?;
    L2Arm::from_lookup(lookup)?;
    GpuOptions::from_lookup(lookup)?;
    decode_pad_pct(lookup)?;
    slow_op(lookup)?;
    Ok(())
}

/// [`check`] on the process's environment.
pub fn check_environment() -> Result<()> {
    let vars: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .collect();
    let names: Vec<&str> = vars.iter().map(String::as_str).collect();
    check(&names, &environment)
}

// ---------------------------------------------------------------------------------------

/// The help text: every variable, its values and its default (`engine options`, and after
/// the help of `engine bench` and `engine info`).
pub fn help() -> String {
    let groups = [
        (
            "CPU arms (every arm computes the same tokens)",
            vec![PREFETCH.help(), POOL_LAYOUT.help()],
        ),
        ("Backend", vec![BACKEND.help()]),
        (
            "L2 persistence of the GDN state pool (CUDA)",
            vec![
                L2.help(),
                L2_WINDOW.help(),
                reserve_help(),
                hit_ratio_help(),
                L2_GUARD.help(),
            ],
        ),
        (
            "Decode launches (CUDA)",
            vec![
                PDL.help(),
                FOLD_NORM.help(),
                WEIGHT_PREFETCH.help(),
                WEIGHT_PRELOAD.help(),
                ROUTER_IN_OUT.help(),
            ],
        ),
        (
            "A known effect on decode speed (engine bench, both backends)",
            vec![decode_pad_help()],
        ),
        (
            "A known slowdown of one operation (engine bench, CPU)",
            vec![slow_op_help()],
        ),
    ];
    let mut s = String::from("Environment variables:\n");
    for (title, entries) in groups {
        s += &format!("\n {title}:\n");
        entries.iter().for_each(|e| s += e);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_names_are_the_variables_the_help_lists() {
        let help = help();
        let mut listed: Vec<&str> = help
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("ENGINE_") && w.len() > "ENGINE_".len())
            .collect();
        listed.sort_unstable();
        listed.dedup();
        let mut names = NAMES.to_vec();
        names.sort_unstable();
        assert_eq!(listed, names);
    }

    #[test]
    fn an_unknown_engine_variable_is_refused_with_the_likeliest_name() {
        assert!(check_names(NAMES).is_ok());
        assert!(check_names(["HOME", "ENGINEER", "LADDER_ARM"]).is_ok());
        for (typo, meant) in [
            ("ENGINE_PD", "ENGINE_PDL"),
            ("ENGINE_DECODE_PAD", "ENGINE_DECODE_PAD_PCT"),
            ("ENGINE_L2_WINDOWS", "ENGINE_L2_WINDOW"),
            ("ENGINE_PREFTCH", "ENGINE_PREFETCH"),
        ] {
            let e = check_names(["HOME", typo]).unwrap_err().to_string();
            assert!(
                e.contains(&format!("variable {typo} (did you mean {meant}?)")),
                "{e}"
            );
        }
        // No likeness, no guess: the prefix every name shares does not count.
        let e = check_names(["ENGINE_FOO"]).unwrap_err().to_string();
        assert!(e.contains("variable ENGINE_FOO:"), "{e}");
    }

    #[test]
    fn the_check_reads_every_value() {
        let names = ["ENGINE_L2_HIT_RATIO", "ENGINE_SLOW_OP"];
        assert!(check(&names, &table(&[("ENGINE_L2_HIT_RATIO", "0.5")])).is_ok());
        for (name, bad) in [
            ("ENGINE_PREFETCH", "sometimes"),
            ("ENGINE_BACKEND", "tpu"),
            ("ENGINE_L2_HIT_RATIO", "2"),
            ("ENGINE_ROUTER_IN_OUT", "maybe"),
            ("ENGINE_DECODE_PAD_PCT", "-5"),
            ("ENGINE_SLOW_OP", "matmul"),
        ] {
            let e = check(&[name], &table(&[(name, bad)])).unwrap_err();
            assert!(e.to_string().contains(name), "{name}={bad}: {e}");
        }
    }

    #[test]
    fn cpu_arm_parses_and_rejects() {
        let a = Arm::from_lookup(&table(&[
            ("ENGINE_PREFETCH", "structural-zero"),
            ("ENGINE_POOL_LAYOUT", "by-slot"),
        ]));
        assert_eq!(
            a.unwrap(),
            Arm {
                prefetch: Prefetch::StructuralZero,
                layout: PoolLayout::BySlot
            }
        );
        assert_eq!(
            Arm::from_lookup(&table(&[])).unwrap(),
            Arm {
                prefetch: Prefetch::Off,
                layout: PoolLayout::ByLayer
            }
        );
        let e = Arm::from_lookup(&table(&[("ENGINE_PREFETCH", "nextlayer")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ENGINE_PREFETCH")
                && e.contains("`nextlayer`")
                && e.contains("off, next-layer, null, structural-zero"),
            "{e}"
        );
        let e = Arm::from_lookup(&table(&[("ENGINE_POOL_LAYOUT", "slot")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ENGINE_POOL_LAYOUT") && e.contains("by-layer, by-slot"),
            "{e}"
        );
    }

    #[test]
    fn dependent_launch_and_preload_are_the_default_and_each_option_turns_alone() {
        let read = |vars: &[(&str, &str)]| GpuOptions::from_lookup(&table(vars)).unwrap();
        let d = GpuOptions::default();
        let want = GpuOptions {
            pdl: true,
            fold_norms: FoldNorms::Auto,
            weight_prefetch: false,
            weight_preload: true,
            router_in_out: true,
        };
        assert_eq!((read(&[]), d), (want, want));
        assert_eq!(
            read(&[("ENGINE_PDL", "off")]),
            GpuOptions { pdl: false, ..d }
        );
        assert_eq!(
            read(&[("ENGINE_FOLD_NORM", "on")]),
            GpuOptions {
                fold_norms: FoldNorms::On,
                ..d
            }
        );
        assert_eq!(
            read(&[("ENGINE_FOLD_NORM", "off")]),
            GpuOptions {
                fold_norms: FoldNorms::Off,
                ..d
            }
        );
        assert_eq!(read(&[("ENGINE_FOLD_NORM", "auto")]), d);
        assert_eq!(
            read(&[("ENGINE_WEIGHT_PREFETCH", "on"), ("ENGINE_PDL", "on")]),
            GpuOptions {
                weight_prefetch: true,
                ..d
            }
        );
        assert_eq!(
            read(&[("ENGINE_WEIGHT_PRELOAD", "off")]),
            GpuOptions {
                weight_preload: false,
                ..d
            }
        );
        assert_eq!(
            read(&[("ENGINE_ROUTER_IN_OUT", "off")]),
            GpuOptions {
                router_in_out: false,
                ..d
            }
        );
        assert_eq!(
            d.describe(),
            "pdl=on fold_norm=auto weight_prefetch=off weight_preload=on router_in_out=on"
        );
    }

    #[test]
    fn a_bad_launch_value_names_the_variable_and_the_choices() {
        let err = GpuOptions::from_lookup(&table(&[("ENGINE_PDL", "yes")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ENGINE_PDL") && err.contains("`yes`") && err.contains("on, off"),
            "{err}"
        );
        let err = GpuOptions::from_lookup(&table(&[("ENGINE_FOLD_NORM", "yes")]))
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

    #[test]
    fn l2_arm_defaults_to_off_clamp_guarded() {
        let want = L2Arm {
            mode: L2Mode::Off,
            window: L2Window::Pool,
            reserve: ReserveSize::Max,
            hit_ratio: HitRatio::Clamp,
            guard: true,
        };
        assert_eq!(
            (L2Arm::from_lookup(&table(&[])).unwrap(), L2Arm::default()),
            (want, want)
        );
    }

    #[test]
    fn l2_arm_parses_every_mode_ratio_and_guard() {
        let modes = [
            ("off", L2Mode::Off),
            ("window", L2Mode::Window),
            ("reserve-only", L2Mode::ReserveOnly),
            ("structural-zero", L2Mode::StructuralZero),
            ("null", L2Mode::Null),
        ];
        for (name, mode) in modes {
            assert_eq!(
                L2Arm::from_lookup(&table(&[("ENGINE_L2", name)]))
                    .unwrap()
                    .mode,
                mode
            );
            assert_eq!(mode.name(), name);
        }
        let a = L2Arm::from_lookup(&table(&[
            ("ENGINE_L2", "window"),
            ("ENGINE_L2_HIT_RATIO", "0.75"),
            ("ENGINE_L2_GUARD", "off"),
        ]));
        assert_eq!(
            a.unwrap(),
            L2Arm {
                mode: L2Mode::Window,
                hit_ratio: HitRatio::Fixed(0.75),
                guard: false,
                ..L2Arm::default()
            }
        );
        let a = L2Arm::from_lookup(&table(&[
            ("ENGINE_L2_HIT_RATIO", "1"),
            ("ENGINE_L2_GUARD", "on"),
        ]))
        .unwrap();
        assert_eq!((a.hit_ratio, a.guard), (HitRatio::Fixed(1.0), true));
        let a = L2Arm::from_lookup(&table(&[("ENGINE_L2_HIT_RATIO", "clamp")])).unwrap();
        assert_eq!(a.hit_ratio, HitRatio::Clamp);
    }

    #[test]
    fn l2_window_and_reserve_parse_bytes_mib_and_max() {
        for (name, window) in [
            ("pool", L2Window::Pool),
            ("slot", L2Window::Slot),
            ("recurrent", L2Window::Recurrent),
        ] {
            let a = L2Arm::from_lookup(&table(&[("ENGINE_L2_WINDOW", name)])).unwrap();
            assert_eq!(a.window, window);
        }
        for (value, want) in [
            ("max", ReserveSize::Max),
            ("3932160", ReserveSize::Bytes(3_932_160)),
            ("3.75MiB", ReserveSize::Bytes(3_932_160)),
            ("15MiB", ReserveSize::Bytes(15_728_640)),
            ("1", ReserveSize::Bytes(1)),
        ] {
            let a = L2Arm::from_lookup(&table(&[("ENGINE_L2_RESERVE", value)])).unwrap();
            assert_eq!(a.reserve, want, "{value}");
        }
        for bad in [
            "0", "0MiB", "-1", "15 MiB", "15mib", "1e9", "MiB", "NaNMiB", "",
        ] {
            let e = L2Arm::from_lookup(&table(&[("ENGINE_L2_RESERVE", bad)]))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("ENGINE_L2_RESERVE") && e.contains(&format!("`{bad}`")),
                "{e}"
            );
        }
        let e = L2Arm::from_lookup(&table(&[("ENGINE_L2_WINDOW", "slots")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("pool, slot, recurrent"), "{e}");
    }

    #[test]
    fn l2_arm_rejects_unknown_values_naming_the_variable_and_the_choices() {
        let e = L2Arm::from_lookup(&table(&[("ENGINE_L2", "windows")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ENGINE_L2;")
                && e.contains("`windows`")
                && e.contains("reserve-only, structural-zero, null"),
            "{e}"
        );
        for bad in ["0", "1.5", "-0.5", "NaN", "abc", ""] {
            let e = L2Arm::from_lookup(&table(&[("ENGINE_L2_HIT_RATIO", bad)]))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("ENGINE_L2_HIT_RATIO")
                    && e.contains("clamp")
                    && e.contains(&format!("`{bad}`")),
                "{e}"
            );
        }
        let e = L2Arm::from_lookup(&table(&[("ENGINE_L2_GUARD", "no")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ENGINE_L2_GUARD") && e.contains("on, off"),
            "{e}"
        );
    }

    #[test]
    fn the_decode_pad_is_a_percentage_and_a_bad_one_names_the_variable() {
        let read = |v: &str| decode_pad_pct(&table(&[("ENGINE_DECODE_PAD_PCT", v)]));
        assert_eq!(decode_pad_pct(&table(&[])).unwrap(), None, "unset: no pad");
        for (v, want) in [
            ("5", 5.0),
            ("0.1", 0.1),
            ("0", 0.0),
            ("1000", 1000.0),
            ("1e1", 10.0),
        ] {
            assert_eq!(read(v).unwrap(), Some(want), "{v}");
        }
        let zero = read("-0").unwrap().unwrap();
        assert!(zero == 0.0 && zero.is_sign_positive(), "-0 reads as 0");
        for bad in [
            "-1", "-0.5", "NaN", "nan", "inf", "-inf", "infinity", "1000.5", "1e9", "five", "5%",
            "", " 5",
        ] {
            let e = read(bad).unwrap_err().to_string();
            assert!(
                e.contains("ENGINE_DECODE_PAD_PCT")
                    && e.contains(&format!("`{bad}`"))
                    && e.contains("from 0 to 1000")
                    && e.contains("unset it"),
                "{e}"
            );
        }
    }

    #[test]
    fn the_slow_op_is_an_operation_and_a_percentage_and_a_bad_one_names_the_choices() {
        let read = |v: &str| slow_op(&table(&[("ENGINE_SLOW_OP", v)]));
        assert_eq!(slow_op(&table(&[])).unwrap(), None, "unset: no slowdown");
        for (v, op, pct) in [
            ("matmul:50", CpuOp::Matmul, 50.0),
            ("gdn_recurrence:0", CpuOp::GdnRecurrence, 0.0),
            ("lm_head_argmax:1000", CpuOp::LmHeadArgmax, 1000.0),
            ("pad_round:2.5", CpuOp::PadRound, 2.5),
        ] {
            assert_eq!(read(v).unwrap(), Some(SlowOp { op, pct }), "{v}");
        }
        for bad in [
            "matmul",
            "matmul:",
            ":50",
            "mat_mul:50",
            "matmul:-1",
            "matmul:1001",
            "matmul:NaN",
            "Matmul:5",
            "matmul:5%",
            "",
        ] {
            let e = read(bad).unwrap_err().to_string();
            assert!(
                e.contains("ENGINE_SLOW_OP")
                    && e.contains(&format!("`{bad}`"))
                    && e.contains("embed, rms_norm, matmul, matmul_add")
                    && e.contains("from 0 to 1000"),
                "{e}"
            );
        }
    }

    #[test]
    fn values_are_matched_exactly() {
        // Clap's parser would accept `ON` with ignore_case; the variables never did.
        assert!(PDL.read(&table(&[("ENGINE_PDL", "ON")])).is_err());
        assert_eq!(
            BACKEND.read(&table(&[("ENGINE_BACKEND", "auto")])).unwrap(),
            BackendChoice::Auto
        );
        assert_eq!(BACKEND.read(&table(&[])).unwrap(), BackendChoice::Cpu);
    }

    #[test]
    fn the_help_lists_every_variable_with_its_values_and_default() {
        let h = help();
        for line in [
            "ENGINE_PREFETCH=off|next-layer|null|structural-zero   [default: off]",
            "ENGINE_POOL_LAYOUT=by-layer|by-slot|by-slot-kind   [default: by-layer]",
            "ENGINE_BACKEND=cpu|cuda|auto   [default: cpu]",
            "ENGINE_L2=off|window|reserve-only|structural-zero|null   [default: off]",
            "ENGINE_L2_WINDOW=pool|slot|recurrent   [default: pool]",
            "ENGINE_L2_RESERVE=max|BYTES|NMiB   [default: max]",
            "ENGINE_L2_HIT_RATIO=clamp|NUMBER   [default: clamp]",
            "ENGINE_L2_GUARD=on|off   [default: on]",
            "ENGINE_PDL=on|off   [default: on]",
            "ENGINE_FOLD_NORM=auto|on|off   [default: auto]",
            "ENGINE_WEIGHT_PREFETCH=on|off   [default: off]",
            "ENGINE_WEIGHT_PRELOAD=on|off   [default: on]",
            "ENGINE_ROUTER_IN_OUT=on|off   [default: on]",
            "ENGINE_DECODE_PAD_PCT=PERCENT   [default: unset]",
            "ENGINE_SLOW_OP=OP:PERCENT   [default: unset]",
        ] {
            assert!(h.contains(line), "`{line}` missing from:\n{h}");
        }
        assert!(
            h.contains("next-layer       While a layer's FFN weights stream"),
            "{h}"
        );
        assert!(h.lines().all(|l| l.chars().count() <= 100), "{h}");
    }
}
