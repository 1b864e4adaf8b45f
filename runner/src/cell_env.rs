//! The environment of a cell: parent, plus the common env, plus the arm's env, plus the
//! harness variables, padded so that every cell's argv plus environment has the same byte
//! length.
//!
//! The size of the environment alone shifts where the stack starts and so moves run times
//! by several percent (Mytkowicz et al., ASPLOS 2009); arms must not differ by it. The argv
//! (and the executable's path, which the kernel copies too) sit on the same stack, so arms
//! with their own argv are evened out by the same filler.

use ladder::order::Order;
use std::collections::BTreeMap;

pub const PAD_VAR: &str = "LADDER_PAD";

/// The environments of every cell of one ladder.
pub struct CellEnvs {
    parent: BTreeMap<String, String>,
    common: BTreeMap<String, String>,
    arms: Vec<BTreeMap<String, String>>,
    /// Per arm, the bytes its argv and executable path take on the new process's stack.
    argv_bytes: Vec<usize>,
    /// The byte length every cell's argv plus environment is padded to.
    target: usize,
}

/// Bytes the kernel copies for an environment: `KEY=VALUE\0` for every variable.
pub fn env_bytes<'a>(vars: impl IntoIterator<Item = (&'a String, &'a String)>) -> usize {
    vars.into_iter().map(|(k, v)| k.len() + v.len() + 2).sum()
}

/// Bytes the kernel copies for running `program` with `argv`: every argument with its NUL,
/// and the executable's path once more (execve keeps the file name on the stack too).
pub fn argv_bytes(program: &str, argv: &[String]) -> usize {
    program.len() + 1 + argv.iter().map(|a| a.len() + 1).sum::<usize>()
}

impl CellEnvs {
    /// `argv_bytes[arm]` is `argv_bytes(...)` of the arm's executable and full argv.
    pub fn new(
        parent: BTreeMap<String, String>,
        common: BTreeMap<String, String>,
        arms: Vec<BTreeMap<String, String>>,
        argv_bytes: Vec<usize>,
        order: &Order,
    ) -> CellEnvs {
        let mut envs = CellEnvs {
            parent,
            common,
            arms,
            argv_bytes,
            target: 0,
        };
        envs.target = order
            .cells()
            .map(|c| envs.start_bytes(&envs.unpadded(order, c.pass, c.slot), c.arm))
            .max()
            .unwrap_or(0)
            + PAD_VAR.len()
            + 2;
        envs
    }

    fn unpadded(&self, order: &Order, pass: usize, slot: usize) -> BTreeMap<String, String> {
        let arm = order.arm_at(pass, slot);
        let mut env = self.parent.clone();
        env.remove(PAD_VAR);
        env.extend(self.common.clone());
        env.extend(self.arms[arm].clone());
        env.insert("LADDER_ARM".into(), order.arms[arm].clone());
        env.insert("LADDER_PASS".into(), pass.to_string());
        env.insert("LADDER_SLOT".into(), slot.to_string());
        env
    }

    fn start_bytes(&self, env: &BTreeMap<String, String>, arm: usize) -> usize {
        env_bytes(env) + self.argv_bytes[arm]
    }

    /// The full environment of the cell in `pass`, `slot`.
    pub fn cell(&self, order: &Order, pass: usize, slot: usize) -> BTreeMap<String, String> {
        let mut env = self.unpadded(order, pass, slot);
        let pad =
            self.target - self.start_bytes(&env, order.arm_at(pass, slot)) - PAD_VAR.len() - 2;
        env.insert(PAD_VAR.into(), "x".repeat(pad));
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ladder::order::Scheme;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_cell_has_the_same_environment_size() {
        let order = Order::new(
            Scheme::Rotate,
            vec!["off".into(), "a-much-longer-arm".into()],
            12,
            None,
        );
        let envs = CellEnvs::new(
            map(&[("HOME", "/root"), (PAD_VAR, "stale")]),
            map(&[("COMMON", "1")]),
            vec![
                map(&[("MODE", "off")]),
                map(&[("MODE", "on"), ("EXTRA", "a long value here")]),
            ],
            vec![0, 0],
            &order,
        );
        let sizes: Vec<usize> = order
            .cells()
            .map(|c| env_bytes(&envs.cell(&order, c.pass, c.slot)))
            .collect();
        assert!(sizes.iter().all(|&s| s == sizes[0]), "{sizes:?}");
        let cell = envs.cell(&order, 11, 1);
        assert_eq!(cell["LADDER_PASS"], "11");
        assert_eq!(cell["LADDER_ARM"], "off");
        assert_eq!(cell["MODE"], "off");
        assert_eq!(cell["COMMON"], "1");
        assert_eq!(cell["HOME"], "/root");
    }

    #[test]
    fn the_filler_absorbs_argv_differences() {
        let order = Order::new(Scheme::Rotate, vec!["short".into(), "long".into()], 3, None);
        let argv = |program: &str, args: &[&str]| {
            let args: Vec<String> = std::iter::once(program)
                .chain(args.iter().copied())
                .map(str::to_string)
                .collect();
            argv_bytes(program, &args)
        };
        let bytes = vec![
            argv("/a/engine", &[]),
            argv("/a/much/longer/path/engine", &["--with", "flags"]),
        ];
        let envs = CellEnvs::new(
            map(&[]),
            map(&[]),
            vec![map(&[]), map(&[])],
            bytes.clone(),
            &order,
        );
        let total =
            |c: ladder::order::Cell| env_bytes(&envs.cell(&order, c.pass, c.slot)) + bytes[c.arm];
        let sizes: Vec<usize> = order.cells().map(total).collect();
        assert!(sizes.iter().all(|&s| s == sizes[0]), "{sizes:?}");
        assert_eq!(argv("/a/engine", &["-x"]), 10 + 10 + 3);
    }
}
