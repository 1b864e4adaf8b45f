//! The JSON report: every figure of METHOD.md's "The JSON report" block, keys added beside.

use crate::reading::Reading;
use rayon::prelude::*;
use std::io::Write;

/// The JSON report: `{"method": 2.1, "ladders": [...], "across": [...], "arm_pairs": [...],
/// "minute_pools": [...]}`. Ladders are
/// serialized in parallel, a chunk at a time so that the text is never all in memory.
pub fn write(reading: &Reading, mut out: impl Write) -> anyhow::Result<()> {
    out.write_all(b"{\"method\":2.1,\"ladders\":[")?;
    for (c, chunk) in reading.reports.chunks(256).enumerate() {
        let texts: Vec<Vec<u8>> = chunk
            .par_iter()
            .map(|r| {
                let mut text = Vec::with_capacity(16 << 10);
                serde_json::to_writer(&mut text, r).map(|_| text)
            })
            .collect::<Result<_, _>>()?;
        for (i, text) in texts.iter().enumerate() {
            if c + i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(text)?;
        }
    }
    out.write_all(b"],\"across\":")?;
    serde_json::to_writer(&mut out, &reading.replications)?;
    out.write_all(b",\"arm_pairs\":")?;
    serde_json::to_writer(&mut out, &reading.pairs)?;
    out.write_all(b",\"minute_pools\":")?;
    serde_json::to_writer(&mut out, &reading.minute_pools)?;
    out.write_all(b"}\n")?;
    Ok(())
}
