//! Command-line splitting the way Windows programs do it: the MSVC runtime rules (`"..."` groups, `\"` is a
//! literal quote, `2n` backslashes before a quote are `n` backslashes, `""` inside quotes is a literal quote) that
//! sc.exe, powershell.exe and every service binary use to build their `argv` (windows-commands.md §1.1, §2).

/// Splits `line` into arguments with the MSVC rules.
///
/// ```
/// use winhost_sim::argv::split;
/// assert_eq!(split(r#"sc.exe create k binPath= "C:\k\k.exe --a=\"b c\"""#),
///            vec!["sc.exe", "create", "k", "binPath=", r#"C:\k\k.exe --a="b c""#]);
/// ```
pub fn split(line: &str) -> Vec<String> {
    let mut arguments = Vec::new();
    let mut current = String::new();
    let mut in_argument = false;
    let mut in_quotes = false;
    let chars: Vec<char> = line.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        match c {
            '\\' => {
                let run = chars[index..].iter().take_while(|&&x| x == '\\').count();
                index += run;
                in_argument = true;
                if chars.get(index) == Some(&'"') {
                    current.extend(std::iter::repeat_n('\\', run / 2));
                    if run % 2 == 1 {
                        current.push('"');
                        index += 1;
                    }
                } else {
                    current.extend(std::iter::repeat_n('\\', run));
                }
                continue;
            }
            '"' => {
                in_argument = true;
                if in_quotes && chars.get(index + 1) == Some(&'"') {
                    current.push('"');
                    index += 1;
                } else {
                    in_quotes = !in_quotes;
                }
            }
            ' ' | '\t' if !in_quotes => {
                if in_argument {
                    arguments.push(std::mem::take(&mut current));
                    in_argument = false;
                }
            }
            other => {
                in_argument = true;
                current.push(other);
            }
        }
        index += 1;
    }
    if in_argument {
        arguments.push(current);
    }
    arguments
}

/// Splits an `ImagePath` into the executable and its arguments, as CreateProcess resolves an unquoted or quoted
/// first token (the unquoted-with-spaces ambiguity is resolved at the first space, as the first probe does).
pub fn split_image_path(image_path: &str) -> (String, Vec<String>) {
    let mut parts = split(image_path);
    if parts.is_empty() {
        return (String::new(), Vec::new());
    }
    let executable = parts.remove(0);
    (executable, parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_msvc_rules() {
        assert_eq!(split(r#"a "b c" d"#), vec!["a", "b c", "d"]);
        assert_eq!(split(r#"a\\\"b "c\\" d"#), vec![r#"a\"b"#, r"c\", "d"]);
        assert_eq!(split(r#""a""b""#), vec![r#"a"b"#]);
        assert_eq!(split(r"C:\k\x.exe  --v=2 "), vec![r"C:\k\x.exe", "--v=2"]);
        assert_eq!(split(r#"x """#), vec!["x", ""]);
        assert_eq!(split(""), Vec::<String>::new());
    }

    #[test]
    fn image_paths_split_into_executable_and_arguments() {
        let (exe, args) = split_image_path(r#""C:\Program Files\x\x.exe" --flag "a b""#);
        assert_eq!(exe, r"C:\Program Files\x\x.exe");
        assert_eq!(args, vec!["--flag", "a b"]);
    }
}
