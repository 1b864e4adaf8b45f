//! Ways of breaking a valid file, for the fuzz targets of `ladder` and `analyze` (both
//! include this file by path).

use proptest::prelude::*;

/// One way of breaking a file, applied at positions drawn as fractions of its length.
#[derive(Clone, Debug)]
pub enum Mutation {
    Truncate(f64),
    Flip(f64, u8),
    /// Replaces the `n`-th field (counting commas and JSON separators) of a line.
    EditField(f64, usize, String),
    DeleteLine(f64),
    DuplicateLine(f64, f64),
    /// Invalid UTF-8 or a NUL byte.
    BadEncoding(f64, Vec<u8>),
    /// Moves a span of the file somewhere else.
    Splice(f64, f64, f64),
    /// A number in the start record replaced by a huge one.
    HugeNumber(f64, u64),
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0..1.0f64;
    prop_oneof![
        at.clone().prop_map(Mutation::Truncate),
        (at.clone(), any::<u8>()).prop_map(|(a, b)| Mutation::Flip(a, b)),
        (
            at.clone(),
            0usize..40,
            prop_oneof![
                Just(String::new()),
                "[0-9]{1,25}",
                "-?[0-9.e+]{1,12}",
                ".{0,8}",
                Just("NaN".to_string())
            ]
        )
            .prop_map(|(a, n, v)| Mutation::EditField(a, n, v)),
        at.clone().prop_map(Mutation::DeleteLine),
        (at.clone(), at.clone()).prop_map(|(a, b)| Mutation::DuplicateLine(a, b)),
        (
            at.clone(),
            prop_oneof![
                Just(vec![0xff]),
                Just(vec![0xc3]),
                Just(vec![0]),
                Just(vec![0xed, 0xa0, 0x80])
            ]
        )
            .prop_map(|(a, b)| Mutation::BadEncoding(a, b)),
        (at.clone(), at.clone(), at.clone()).prop_map(|(a, b, c)| Mutation::Splice(a, b, c)),
        (
            at,
            prop_oneof![
                Just(u64::MAX),
                Just(1 << 40),
                Just(10_000_000),
                any::<u64>()
            ]
        )
            .prop_map(|(a, n)| Mutation::HugeNumber(a, n)),
    ]
}

fn index(fraction: f64, len: usize) -> usize {
    ((fraction * len as f64) as usize).min(len.saturating_sub(1))
}

pub fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let len = bytes.len();
    let line_bounds = |b: &[u8], at: usize| {
        let start = b[..at]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1);
        let end = b[at..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |i| at + i + 1);
        (start, end)
    };
    match m {
        Mutation::Truncate(a) => bytes.truncate(index(*a, len)),
        Mutation::Flip(a, b) => bytes[index(*a, len)] = *b,
        Mutation::EditField(a, n, value) => {
            let (start, end) = line_bounds(bytes, index(*a, len));
            let line = bytes[start..end].to_vec();
            let seps: Vec<usize> = line
                .iter()
                .enumerate()
                .filter(|(_, &c)| matches!(c, b',' | b':'))
                .map(|(i, _)| i)
                .collect();
            if seps.is_empty() {
                return;
            }
            let from = seps[n % seps.len()] + 1;
            let to = seps
                .get(n % seps.len() + 1)
                .copied()
                .unwrap_or(line.len().saturating_sub(1))
                .max(from);
            bytes.splice(start + from..start + to, value.bytes());
        }
        Mutation::DeleteLine(a) => {
            let (start, end) = line_bounds(bytes, index(*a, len));
            bytes.drain(start..end);
        }
        Mutation::DuplicateLine(a, b) => {
            let (start, end) = line_bounds(bytes, index(*a, len));
            let line = bytes[start..end].to_vec();
            let (to, _) = line_bounds(bytes, index(*b, len));
            bytes.splice(to..to, line);
        }
        Mutation::BadEncoding(a, b) => {
            let at = index(*a, len);
            bytes.splice(at..at, b.iter().copied());
        }
        Mutation::Splice(a, b, c) => {
            let (x, y) = (index(*a, len), index(*b, len));
            let (from, to) = (x.min(y), x.max(y));
            let span: Vec<u8> = bytes.drain(from..to).collect();
            let at = index(*c, bytes.len().max(1)).min(bytes.len());
            bytes.splice(at..at, span);
        }
        Mutation::HugeNumber(a, n) => {
            let first_line = bytes.iter().position(|&c| c == b'\n').unwrap_or(len);
            // Byte offsets, not those of a lossy string: a mutated line may not be UTF-8.
            let numbers: Vec<(usize, usize)> = bytes[..first_line]
                .iter()
                .enumerate()
                .filter(|(_, c)| c.is_ascii_digit())
                .map(|(i, _)| i)
                .fold(Vec::new(), |mut runs: Vec<(usize, usize)>, i| {
                    match runs.last_mut() {
                        Some((_, end)) if *end == i => *end = i + 1,
                        _ => runs.push((i, i + 1)),
                    }
                    runs
                });
            if let Some(&(s, e)) = numbers.get(index(*a, numbers.len().max(1))) {
                bytes.splice(s..e, n.to_string().bytes());
            }
        }
    }
}
