//! Several rendered commands sent as one cmd.exe line: [`CommandChain`] joins them with `&&`, so cmd.exe runs them
//! in order and stops at the first that fails, and prints a marker line after each one that succeeded
//! ([`CHAIN_MARKER`]), so [`CommandChain::read`] can tell exactly which command failed and what it printed.
//!
//! Neighbouring PowerShell commands of this crate's `-EncodedCommand` form share one `powershell.exe`: their
//! statements run in order in one script that prints each one's marker itself (`Write-Output`), so a failure is
//! still attributed to the exact command while the host starts PowerShell once (a start costs about a second on a
//! real host). A command whose statements hold `exit` keeps its own process.
//!
//! Only commands that stand alone on a cmd.exe line can join a chain ([`CommandChain::accepts`]): no script file to
//! upload first, and an even number of double quotes, so that cmd.exe is outside quotes where the next `&&`
//! begins (windows-commands.md §2: metacharacters inside `"..."` are literal). A chain is never longer than
//! [`MAX_COMMAND_LINE_CHARS`](crate::MAX_COMMAND_LINE_CHARS).

use crate::command::{CommandError, RenderedCommand, Shell, check_length};
use crate::powershell::{PowerShellScript, plain_statements};

/// The text of the line a chain prints after each command that succeeded, followed by the command's index.
pub const CHAIN_MARKER: &str = "##wmco-done";

/// Rendered commands joined into one cmd.exe line.
///
/// ```
/// use wmco_windows_services::{CommandChain, ScCommand, ServiceName};
/// let start = ScCommand::Start(ServiceName::new("containerd")?).render()?;
/// let chain = CommandChain::new(vec![start, ScCommand::Start(ServiceName::new("kubelet")?).render()?])?;
/// assert_eq!(
///     chain.command().line,
///     "sc.exe start containerd && echo ##wmco-done 0 && sc.exe start kubelet && echo ##wmco-done 1"
/// );
/// // The host answered: containerd started, kubelet failed with 1058.
/// let stdout = "\r\nSERVICE_NAME: containerd\r\n##wmco-done 0 \r\n[SC] StartService FAILED 1058:\r\n\r\nThe service cannot be started.\r\n";
/// let report = chain.read(stdout, 1058)?;
/// assert_eq!(report.completed, 1);
/// let failure = report.failure.ok_or("the second command failed")?;
/// assert_eq!((failure.index, failure.exit_code), (1, 1058));
/// assert!(failure.stdout.starts_with("[SC] StartService FAILED 1058:"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandChain {
    command: RenderedCommand,
    count: usize,
}

impl CommandChain {
    /// Joins `commands` in order.
    ///
    /// # Errors
    /// [`CommandError::NotChainable`] for a command [`CommandChain::accepts`] refuses, [`CommandError::TooLong`] when
    /// the joined line would pass [`MAX_COMMAND_LINE_CHARS`](crate::MAX_COMMAND_LINE_CHARS).
    pub fn new(commands: Vec<RenderedCommand>) -> Result<CommandChain, CommandError> {
        if let Some(command) = commands.iter().find(|command| !CommandChain::accepts(command)) {
            return Err(CommandError::NotChainable { line: command.line.clone() });
        }
        let statements: Vec<Option<Vec<String>>> = commands.iter().map(plain_statements).collect();
        let mut parts = Vec::with_capacity(commands.len() * 2);
        let mut index = 0;
        while index < commands.len() {
            let run = statements[index..].iter().take_while(|statements| statements.is_some()).count();
            let merged = (run > 1).then(|| merged_powershell(&statements[index..index + run], index)).flatten();
            let (line, last) = match merged {
                Some(line) => (line, index + run - 1),
                None => (commands[index].line.clone(), index),
            };
            parts.push(line);
            parts.push(format!("echo {CHAIN_MARKER} {last}"));
            index = last + 1;
        }
        let count = commands.len();
        let line = check_length(|| format!("chain of {count} commands"), parts.join(" && "))?;
        Ok(CommandChain { command: RenderedCommand { shell: Shell::Cmd, line, script_file: None }, count })
    }

    /// Whether `command` can join a chain: it needs no script file uploaded first and holds an even number of
    /// double quotes.
    pub fn accepts(command: &RenderedCommand) -> bool {
        command.script_file.is_none() && command.line.matches('"').count().is_multiple_of(2)
    }

    /// The line to run.
    pub fn command(&self) -> &RenderedCommand {
        &self.command
    }

    /// How many commands the chain holds.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the chain holds no command.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Reads the chain's standard output and exit code: how many commands succeeded, each one's output, and the
    /// one that failed.
    ///
    /// # Errors
    /// [`ChainReadError`] when the markers are out of order, or the exit code contradicts them (a zero exit code
    /// with commands missing, or a failure after every command succeeded).
    pub fn read(&self, stdout: &str, exit_code: u32) -> Result<ChainReport, ChainReadError> {
        let mut outputs = Vec::new();
        let mut current = String::new();
        for line in stdout.split_inclusive('\n') {
            let marked = line.trim().strip_prefix(CHAIN_MARKER).map(str::trim);
            match marked {
                Some(index) if index.parse::<usize>().ok() == Some(outputs.len()) => {
                    outputs.push(std::mem::take(&mut current));
                }
                Some(index) => {
                    return Err(ChainReadError::Marker { found: index.to_owned(), expected: outputs.len() });
                }
                None => current.push_str(line),
            }
        }
        let completed = outputs.len();
        let failure = match (completed < self.count, exit_code) {
            (false, 0) => None,
            (true, code) if code != 0 => {
                Some(ChainFailure { index: completed, exit_code: code, stdout: current.trim_start().to_owned() })
            }
            _ => return Err(ChainReadError::ExitCode { completed, count: self.count, exit_code }),
        };
        Ok(ChainReport { completed, outputs, failure })
    }
}

/// One `-EncodedCommand` line running the statements of commands `first..` in order, printing the marker of each
/// but the last (the chain's `echo` prints that one); `None` when it would not fit on a command line.
fn merged_powershell(runs: &[Option<Vec<String>>], first: usize) -> Option<String> {
    let mut lines = Vec::new();
    for (offset, statements) in runs.iter().enumerate() {
        lines.extend(statements.iter().flatten().cloned());
        if offset + 1 < runs.len() {
            lines.push(format!("Write-Output '{CHAIN_MARKER} {}'", first + offset));
        }
    }
    let rendered = PowerShellScript::from_statements(&lines).render().ok()?;
    rendered.script_file.is_none().then_some(rendered.line)
}

/// What a chain's run says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainReport {
    /// How many commands succeeded (the first `completed` of the chain).
    pub completed: usize,
    /// The standard output of each command that succeeded, in order.
    pub outputs: Vec<String>,
    /// The command that failed (none ran after it).
    pub failure: Option<ChainFailure>,
}

/// The command of a chain that failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainFailure {
    /// Its index in the chain.
    pub index: usize,
    /// Its exit code (cmd.exe returns the code of the last command it ran).
    pub exit_code: u32,
    /// What it printed on standard output.
    pub stdout: String,
}

/// A chain's output that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainReadError {
    /// A marker names another command than the next one.
    #[error("the chain printed marker {found:?} where marker {expected} was due")]
    Marker {
        /// The marker's index text.
        found: String,
        /// The index due.
        expected: usize,
    },
    /// The exit code contradicts the markers.
    #[error("{completed} of {count} chained commands reported success, yet the chain exited with code {exit_code}")]
    ExitCode {
        /// Markers seen.
        completed: usize,
        /// Commands in the chain.
        count: usize,
        /// The chain's exit code.
        exit_code: u32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PowerShellScript, ScCommand, ServiceName, WinPath};

    fn start(name: &str) -> RenderedCommand {
        ScCommand::Start(ServiceName::new(name).unwrap()).render().unwrap()
    }

    #[test]
    fn every_command_succeeding_gives_each_ones_output() {
        let chain = CommandChain::new(vec![start("a"), start("b")]).unwrap();
        let report = chain.read("A started\r\n##wmco-done 0 \r\nB started\r\n##wmco-done 1\r\n", 0).unwrap();
        assert_eq!(report.completed, 2);
        assert_eq!(report.outputs, ["A started\r\n", "B started\r\n"]);
        assert_eq!(report.failure, None);
    }

    #[test]
    fn the_first_failure_is_named_with_its_output() {
        let chain = CommandChain::new(vec![start("a"), start("b"), start("c")]).unwrap();
        let report = chain.read("##wmco-done 0\r\n\r\n[SC] StartService FAILED 2:\r\n", 2).unwrap();
        let failure = report.failure.unwrap();
        assert_eq!((report.completed, failure.index, failure.exit_code), (1, 1, 2));
        assert_eq!(failure.stdout, "[SC] StartService FAILED 2:\r\n");
    }

    #[test]
    fn contradictions_are_errors() {
        let chain = CommandChain::new(vec![start("a"), start("b")]).unwrap();
        assert!(matches!(chain.read("##wmco-done 0\r\n", 0), Err(ChainReadError::ExitCode { completed: 1, .. })));
        assert!(matches!(chain.read("##wmco-done 0\r\n##wmco-done 1\r\n", 5), Err(ChainReadError::ExitCode { .. })));
        assert!(matches!(chain.read("##wmco-done 1\r\n", 1), Err(ChainReadError::Marker { expected: 0, .. })));
    }

    #[test]
    fn powershell_commands_join_and_script_files_or_odd_quotes_do_not() {
        let directories = PowerShellScript::ensure_directories(&[WinPath::parse(r"C:\k").unwrap()]).unwrap();
        let rendered = directories.render().unwrap();
        assert!(CommandChain::accepts(&rendered));
        let chain = CommandChain::new(vec![rendered.clone(), start("a")]).unwrap();
        assert!(chain.command().line.starts_with(&rendered.line));
        let odd = RenderedCommand { line: "echo \"".into(), ..start("a") };
        assert!(!CommandChain::accepts(&odd));
        assert!(matches!(CommandChain::new(vec![odd]), Err(CommandError::NotChainable { .. })));
    }

    #[test]
    fn neighbouring_powershell_commands_share_one_process_that_marks_each() {
        let path = |text: &str| WinPath::parse(text).unwrap();
        let directories = PowerShellScript::ensure_directories(&[path(r"C:\k")]).unwrap().render().unwrap();
        let exclusion = PowerShellScript::add_defender_exclusion(&path(r"C:\k\c.exe")).render().unwrap();
        let chain = CommandChain::new(vec![start("a"), directories, exclusion, start("b")]).unwrap();
        let line = &chain.command().line;
        assert_eq!(line.matches("powershell.exe").count(), 1, "{line}");
        assert_eq!(chain.len(), 4);
        let parts: Vec<&str> = line.split(" && ").collect();
        assert_eq!(parts[1], "echo ##wmco-done 0");
        assert_eq!(parts[3], "echo ##wmco-done 2", "the merged script's last command is marked by the chain");
        let encoded = parts[2].rsplit(' ').next().unwrap();
        assert_eq!(
            crate::decode_encoded_command(encoded).unwrap(),
            "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n\
             New-Item -ItemType Directory -Force -Path 'C:\\k' | Out-Null\nWrite-Output '##wmco-done 1'\n\
             Add-MpPreference -ExclusionProcess 'C:\\k\\c.exe'\nexit 0"
        );
        // The exclusion failed inside the shared process: the chain names it, not the directories before it.
        let report = chain.read("##wmco-done 0\r\n##wmco-done 1\r\nAdd-MpPreference : denied\r\n", 1).unwrap();
        assert_eq!(report.failure.map(|failure| failure.index), Some(2));
    }

    #[test]
    fn a_script_that_may_exit_early_keeps_its_own_process() {
        let early = PowerShellScript::from_statements(&["if ($x) { exit 3 }".to_owned()]).render().unwrap();
        let directories =
            PowerShellScript::ensure_directories(&[WinPath::parse(r"C:\k").unwrap()]).unwrap().render().unwrap();
        let chain = CommandChain::new(vec![early, directories]).unwrap();
        assert_eq!(chain.command().line.matches("powershell.exe").count(), 2);
    }

    #[test]
    fn a_chain_longer_than_a_command_line_is_refused() {
        let many: Vec<RenderedCommand> = (0..400).map(|index| start(&format!("service-{index}"))).collect();
        assert!(matches!(CommandChain::new(many), Err(CommandError::TooLong { .. })));
    }
}
