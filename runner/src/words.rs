//! Splitting a command line into an argv the way a POSIX shell splits words, without running
//! a shell: `runner ab 'xz -1 -c "my file"'` measures xz, not `sh` starting xz.
//!
//! Quotes and backslashes work as in `sh`; nothing is expanded. A character that would make
//! a shell do more than split (a pipe, a redirection, `$`) is refused rather than passed on
//! as a literal argument the user did not mean.

/// Characters a shell would act on; outside quotes they are refused.
const SHELL_ONLY: &[char] = &['|', '&', ';', '<', '>', '(', ')', '$', '`'];

/// The words of `line`; `Err` says what is wrong and where (1-based character position).
pub fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().enumerate().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let text = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, c)) => text.push(c),
                        None => return Err(format!("unbalanced single quote: the ' at character {} is never closed", i + 1)),
                    }
                }
            }
            '"' => {
                let text = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, c @ ('"' | '\\' | '$' | '`'))) => text.push(c),
                            Some((_, '\n')) => {}
                            Some((_, c)) => {
                                text.push('\\');
                                text.push(c);
                            }
                            None => break,
                        },
                        Some((_, c)) => text.push(c),
                        None => return Err(format!("unbalanced double quote: the \" at character {} is never closed", i + 1)),
                    }
                }
            }
            '\\' => match chars.next() {
                Some((_, '\n')) => {}
                Some((_, c)) => word.get_or_insert_with(String::new).push(c),
                None => return Err("the line ends with a lone backslash".into()),
            },
            c if SHELL_ONLY.contains(&c) => {
                return Err(format!(
                    "{c:?} at character {} needs a shell, and none is run; quote it to pass it as text, or pass --shell to run the command through sh",
                    i + 1
                ))
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// One argv as a line that `split` reads back to the same words.
pub fn join(argv: &[String]) -> String {
    argv.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        split(line).unwrap()
    }

    #[test]
    fn whitespace_separates_words() {
        assert_eq!(words("  xz   -1\t-c data "), ["xz", "-1", "-c", "data"]);
        assert!(words("").is_empty());
    }

    #[test]
    fn quotes_group_and_are_removed() {
        assert_eq!(
            words(r#"grep 'a b' "c d" e'f'"g""#),
            ["grep", "a b", "c d", "efg"]
        );
        assert_eq!(words("prog '' \"\""), ["prog", "", ""]);
        assert_eq!(
            words(r#"echo "it's" 'say "hi"'"#),
            ["echo", "it's", "say \"hi\""]
        );
    }

    #[test]
    fn backslashes_escape_as_in_sh() {
        assert_eq!(words(r"a\ b c\'d"), ["a b", "c'd"]);
        assert_eq!(words(r#""a\"b\\c\n""#), [r#"a"b\c\n"#]);
        assert_eq!(words(r"'no\escape'"), [r"no\escape"]);
    }

    #[test]
    fn quoted_shell_characters_are_text() {
        assert_eq!(
            words("awk '{print $1}' 'a|b' \"x;y\""),
            ["awk", "{print $1}", "a|b", "x;y"]
        );
    }

    #[test]
    fn errors_say_what_and_where() {
        assert!(split("xz 'oops")
            .unwrap_err()
            .contains("single quote: the ' at character 4"));
        assert!(split("xz \"oops").unwrap_err().contains("double quote"));
        assert!(split("xz \\").unwrap_err().contains("lone backslash"));
        let e = split("cat f | wc").unwrap_err();
        assert!(
            e.contains("'|' at character 7") && e.contains("--shell"),
            "{e}"
        );
        assert!(split("echo $HOME").unwrap_err().contains("'$'"));
    }

    #[test]
    fn join_round_trips() {
        for argv in [
            vec!["xz", "-1", "-c", "my file"],
            vec!["a'b", "", "$x", "plain/path.txt"],
        ] {
            let argv: Vec<String> = argv.into_iter().map(str::to_string).collect();
            assert_eq!(split(&join(&argv)).unwrap(), argv);
        }
    }
}
