//! `wmco completion bash|zsh|fish|powershell|elvish`: prints the shell completion script for `wmco`, generated from
//! the command-line definition by clap_complete (kubectl's `completion` habit).

use clap_complete::Shell;

use crate::cli_support::{Outcome, print_stdout};

/// Arguments of `wmco completion`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "Examples:\n  \
    source <(wmco completion bash)                                   # bash, this shell only\n  \
    wmco completion bash > /etc/bash_completion.d/wmco                # bash, every shell\n  \
    wmco completion zsh > \"${fpath[1]}/_wmco\"                          # zsh\n  \
    wmco completion fish > ~/.config/fish/completions/wmco.fish       # fish\n  \
    wmco completion powershell | Out-String | Invoke-Expression        # PowerShell")]
pub struct CompletionArgs {
    /// The shell to print the completion script for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

/// The completion script of `command` for `shell`.
pub fn script(shell: Shell, mut command: clap::Command) -> String {
    let name = command.get_name().to_owned();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, name, &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// Prints the completion script of `command` for the requested shell.
pub fn run(args: &CompletionArgs, command: clap::Command) -> anyhow::Result<Outcome> {
    print_stdout(&script(args.shell, command))?;
    Ok(Outcome::Clean)
}
