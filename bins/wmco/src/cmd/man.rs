//! `wmco generate-man-pages DIR` (hidden; `cargo xtask man` runs it): writes the man pages of `wmco` generated from
//! the command-line definition by clap_mangen — `wmco.1`, and one page per subcommand (`wmco-ssh-check.1`, …).
//! The binary writes them itself because its clap definition is built from library types (the operator's flags
//! among them), which xtask should not compile.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::cli_support::Outcome;

/// Arguments of `wmco generate-man-pages`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// The directory to write the pages into (created when missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Writes the page of `command` and of each of its visible subcommands into `dir`; returns the files written.
pub fn write_pages(command: clap::Command, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let names = page_names(&command);
    clap_mangen::generate_to(command, dir).with_context(|| format!("cannot write man pages into {}", dir.display()))?;
    Ok(names.into_iter().map(|name| dir.join(name)).collect())
}

/// The file name of the page of `command` and of each visible subcommand, as clap_mangen names them
/// (`wmco.1`, `wmco-ssh.1`, `wmco-ssh-check.1`, …), parents first.
pub fn page_names(command: &clap::Command) -> Vec<String> {
    fn collect(command: &clap::Command, names: &mut Vec<String>) {
        names.push(format!("{}.1", command.get_display_name().unwrap_or_else(|| command.get_name())));
        for subcommand in command.get_subcommands().filter(|subcommand| !subcommand.is_hide_set()) {
            collect(subcommand, names);
        }
    }
    let mut built = command.clone().disable_help_subcommand(true);
    built.build();
    let mut names = Vec::new();
    collect(&built, &mut names);
    names
}

/// Writes the pages and names each on standard output.
pub fn run(args: &ManArgs, command: clap::Command) -> anyhow::Result<Outcome> {
    for page in write_pages(command, &args.dir)? {
        println!("{}", page.display());
    }
    Ok(Outcome::Clean)
}
