//! The rules for names that end up in file paths, in the ladder file and in a cell's
//! environment: ladder names and tags, arm names, environment variables and argv words.
//!
//! Each rule returns `Err` with the rule in words, so that a refusal says what is allowed.

/// The longest ladder name, tag or arm name, in bytes.
pub const MAX_NAME_BYTES: usize = 100;

const FILE_PART_RULE: &str = "letters, digits, '.', '_' and '-', not starting with '.' or '-', \
     at most 100 bytes";

/// A ladder name or tag: one part of the file name `<ladder>_<tag>.csv`, so never a path
/// (`/`, `..`, absolute), never empty, never hidden, never a control character.
pub fn file_part(what: &str, name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let bad = if name.is_empty() {
        Some("is empty".to_string())
    } else if name.len() > MAX_NAME_BYTES {
        Some(format!("is {} bytes long", name.len()))
    } else if name.starts_with(['.', '-']) {
        Some(format!("starts with {:?}", &name[..1]))
    } else {
        name.chars()
            .find(|&c| !allowed(c))
            .map(|c| format!("contains {c:?}"))
    };
    match bad {
        Some(why) => Err(format!(
            "{what} {name:?} {why}; it names a file, so it may hold {FILE_PART_RULE}"
        )),
        None => Ok(()),
    }
}

/// An arm name: one CSV field of every row and a label in the report, so printable text on
/// one line (commas and quotes are fine: the writer quotes them).
pub fn arm(name: &str) -> Result<(), String> {
    let bad = if name.trim().is_empty() {
        Some("is blank".to_string())
    } else if name.len() > MAX_NAME_BYTES {
        Some(format!("is {} bytes long", name.len()))
    } else if name.trim() != name {
        Some("starts or ends with white space".to_string())
    } else {
        name.chars()
            .find(|c| c.is_control())
            .map(|c| format!("contains the control character {c:?}"))
    };
    match bad {
        Some(why) => Err(format!(
            "arm name {name:?} {why}; an arm name is printable text on one line, without \
             control characters (newline, tab, NUL), leading or trailing white space, at most 100 bytes"
        )),
        None => Ok(()),
    }
}

/// An environment variable's name: what the engine sees must be what the file records,
/// so no `=` (it would split the name) and no NUL (it would cut it).
pub fn env_var(name: &str) -> Result<(), String> {
    if name.is_empty() {
        Err("an environment variable has an empty name; give it a name such as MODE".into())
    } else if name.contains(['=', '\0']) {
        Err(format!(
            "the environment variable name {name:?} contains '=' or NUL, so the engine would \
             see another variable than the file records; use letters, digits and '_'"
        ))
    } else {
        Ok(())
    }
}

/// An environment value or an argv word: the OS cuts both at the first NUL.
pub fn no_nul(what: &str, value: &str) -> Result<(), String> {
    if value.contains('\0') {
        Err(format!(
            "{what} {value:?} contains a NUL character, which the OS would cut it at; remove it"
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_parts_are_never_paths() {
        for good in ["l2-window_h200", "v1.2", "a"] {
            assert!(file_part("name", good).is_ok(), "{good}");
        }
        for bad in [
            "", "../x", "/etc/x", "a/b", "..", ".hidden", "-rf", "a b", "a\nb", "a\0b", "é",
        ] {
            let e = file_part("name", bad).unwrap_err();
            assert!(e.contains("letters, digits"), "{bad}: {e}");
        }
        assert!(file_part("tag", &"x".repeat(101))
            .unwrap_err()
            .contains("101 bytes"));
    }

    #[test]
    fn arm_names_stay_on_one_line() {
        for good in ["off", "a,b", "say \"hi\"", "`x` | <script>", "ü"] {
            assert!(arm(good).is_ok(), "{good}");
        }
        for bad in ["", "  ", "a\nb", "a\rb", "a\tb", "a\0b", " lead", "trail "] {
            assert!(
                arm(bad).unwrap_err().contains("printable text on one line"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn env_names_and_nul() {
        assert!(env_var("MODE").is_ok());
        assert!(env_var("").unwrap_err().contains("empty name"));
        assert!(env_var("A=B").unwrap_err().contains("'='"));
        assert!(env_var("A\0").unwrap_err().contains("NUL"));
        assert!(no_nul("argv word", "ok").is_ok());
        assert!(no_nul("argv word", "a\0b").unwrap_err().contains("NUL"));
    }
}
