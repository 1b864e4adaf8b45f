//! The environment of a cell: parent, plus the common env, plus the arm's env, plus the
//! harness variables, padded so that every cell's environment has the same byte length.
//!
//! The size of the environment alone shifts where the stack starts and so moves run times
//! by several percent (Mytkowicz et al., ASPLOS 2009); arms must not differ by it.

use ladder::order::Order;
use std::collections::BTreeMap;

pub const PAD_VAR: &str = "LADDER_PAD";

/// The environments of every cell of one ladder.
pub struct CellEnvs {
    parent: BTreeMap<String, String>,
    common: BTreeMap<String, String>,
    arms: Vec<BTreeMap<String, String>>,
    /// The byte length every cell's environment is padded to.
    target: usize,
}

/// Bytes the kernel copies for an environment: `KEY=VALUE\0` for every variable.
pub fn env_bytes<'a>(vars: impl IntoIterator<Item = (&'a String, &'a String)>) -> usize {
    vars.into_iter().map(|(k, v)| k.len() + v.len() + 2).sum()
}

impl CellEnvs {
    pub fn new(
        parent: BTreeMap<String, String>,
        common: BTreeMap<String, String>,
        arms: Vec<BTreeMap<String, String>>,
        order: &Order,
    ) -> CellEnvs {
        let mut envs = CellEnvs { parent, common, arms, target: 0 };
        envs.target = order
            .cells()
            .map(|c| env_bytes(&envs.unpadded(order, c.pass, c.slot)))
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

    /// The full environment of the cell in `pass`, `slot`.
    pub fn cell(&self, order: &Order, pass: usize, slot: usize) -> BTreeMap<String, String> {
        let mut env = self.unpadded(order, pass, slot);
        let pad = self.target - env_bytes(&env) - PAD_VAR.len() - 2;
        env.insert(PAD_VAR.into(), "x".repeat(pad));
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ladder::order::Scheme;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn every_cell_has_the_same_environment_size() {
        let order = Order::new(Scheme::Rotate, vec!["off".into(), "a-much-longer-arm".into()], 12, None);
        let envs = CellEnvs::new(
            map(&[("HOME", "/root"), (PAD_VAR, "stale")]),
            map(&[("COMMON", "1")]),
            vec![map(&[("MODE", "off")]), map(&[("MODE", "on"), ("EXTRA", "a long value here")])],
            &order,
        );
        let sizes: Vec<usize> = order.cells().map(|c| env_bytes(&envs.cell(&order, c.pass, c.slot))).collect();
        assert!(sizes.iter().all(|&s| s == sizes[0]), "{sizes:?}");
        let cell = envs.cell(&order, 11, 1);
        assert_eq!(cell["LADDER_PASS"], "11");
        assert_eq!(cell["LADDER_ARM"], "off");
        assert_eq!(cell["MODE"], "off");
        assert_eq!(cell["COMMON"], "1");
        assert_eq!(cell["HOME"], "/root");
    }
}
