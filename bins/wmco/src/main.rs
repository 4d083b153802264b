//! The `wmco` binary: parses the command line, sets up logging, dispatches to a subcommand and maps its outcome to
//! the exit-code convention (0 ok, 1 findings, 2 unusable input or usage error).

mod cli_support;
mod cmd;
mod redacting_log;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::cli_support::{LogFormat, OutputFormat};

/// Turns Windows Server hosts into worker nodes of a Kubernetes or OpenShift cluster, over SSH.
#[derive(Debug, Parser)]
#[command(name = "wmco", version, about, long_about = None)]
struct Cli {
    /// How log lines are written to standard error. The level comes from `RUST_LOG` (default `info`).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "WMCO_LOG_FORMAT")]
    log_format: LogFormat,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the version and the git commit this binary was built from.
    Version(cmd::version::VersionArgs),
    /// Check SSH access to a Windows host: host key, authentication, and a command round trip.
    Ssh(cmd::ssh::SshArgs),
    /// Run the operator's preflight checks on a Windows host before listing it; changes nothing.
    ///
    /// `wmco preflight ADDRESS --user USER --key FILE` runs the checks the operator runs on first contact with a
    /// host, with one command on the host. The checks, by the names Events, conditions and `-o json` give them:
    ///   Identity           the host name gives an RFC 1123 Node name and the host has an IPv4 default route
    ///   WindowsBuild       Windows build: Windows Server 2019 (17763), 2022 (20348) or 2025 (26100);
    ///                      2019 with a custom VXLAN port refused; 2022 needs 20348.681 or later (KB5012637)
    ///   ContainersFeature  the Windows feature Containers is enabled, or can be installed (one reboot)
    ///   DiskSpace          C: has room for the payload (--payload-mib) and 2 GiB more for logs and images
    ///   ContainerRuntime   no Docker service: the node runs the payload's containerd
    ///   DefaultShell       OpenSSH's default shell is cmd.exe or PowerShell
    #[command(verbatim_doc_comment)]
    Preflight(cmd::preflight::PreflightArgs),
    /// Print the WindowsInstance CustomResourceDefinition generated from the Rust type (YAML; JSON with -o json).
    Crd(cmd::crd::CrdArgs),
    /// Plan what to do to each Windows instance (configure, upgrade, rekey, deconfigure, wait) from a fleet and a
    /// policy read from a YAML or JSON file.
    Plan(cmd::plan::PlanArgs),
    /// Explain kubelet CSR approval offline (`wmco csr check --csr FILE --world FILE`).
    Csr(cmd::csr::CsrArgs),
    /// Work with the Windows node payload (`wmco payload verify DIR`).
    Payload(cmd::payload::PayloadArgs),
    /// Validate a `windows-instances` ConfigMap offline (`wmco instances validate FILE`).
    Instances(cmd::instances::InstancesArgs),
    /// Generate a Windows MachineSet (`wmco machineset generate --platform P --name NAME [flags]`).
    #[command(name = "machineset")]
    MachineSet(cmd::machineset::MachineSetArgs),
    /// Print the `windows-user-data` script for the operator's key (`wmco user-data --public-key FILE
    /// [--platform P]`); exit 1 naming the weakness for a weak key.
    UserData(cmd::user_data::UserDataArgs),
    /// Run the operator: serve /healthz, /readyz and /metrics, take part in leader election, and run the
    /// controllers while leading (the Deployment runs `wmco run --payload-dir=/payload`).
    Run(Box<cmd::run::RunArgs>),
    /// Show the fleet from the cluster: each WindowsInstance's address, phase, Ready/Progressing/Degraded with
    /// reasons, Node, version, last error and last Event (`wmco status [-n NAMESPACE]`).
    Status(cmd::status::StatusArgs),
    /// Gather what an admin or support needs about one host: the record, its Node, Events, the node's CSRs with the
    /// approver's verdict, the operator's log lines about it, and with --ssh-key its services (`wmco diagnose
    /// INSTANCE [--archive FILE.tar.gz]`).
    Diagnose(Box<cmd::diagnose::DiagnoseArgs>),
    /// Print the shell completion script for bash, zsh, fish, powershell or elvish.
    Completion(cmd::completion::CompletionArgs),
    /// Write the man pages (wmco.1 and one per subcommand) into a directory; `cargo xtask man` runs it.
    #[command(hide = true)]
    GenerateManPages(cmd::man::ManArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli_support::init_logging(cli.log_format);
    let result = match cli.command {
        Command::Version(args) => cmd::version::run(&args),
        Command::Ssh(args) => cmd::ssh::run(&args),
        Command::Preflight(args) => cmd::preflight::run(&args),
        Command::Crd(args) => cmd::crd::run(&args),
        Command::Plan(args) => cmd::plan::run(&args),
        Command::Csr(args) => cmd::csr::run(&args),
        Command::Payload(args) => cmd::payload::run(&args),
        Command::Instances(args) => cmd::instances::run(&args),
        Command::MachineSet(args) => cmd::machineset::run(&args),
        Command::UserData(args) => cmd::user_data::run(&args),
        Command::Run(args) => cmd::run::run(&args, OutputFormat::Human),
        Command::Status(args) => cmd::status::run(&args),
        Command::Diagnose(args) => cmd::diagnose::run(&args),
        Command::Completion(args) => cmd::completion::run(&args, Cli::command()),
        Command::GenerateManPages(args) => cmd::man::run(&args, Cli::command()),
    };
    cli_support::finish(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli_support::Outcome;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The leaf subcommands of `command`, by their full name (`wmco ssh check`).
    fn leaves(command: &clap::Command, prefix: &str, found: &mut Vec<(String, clap::Command)>) {
        let name = format!("{prefix} {}", command.get_name()).trim().to_owned();
        let subcommands: Vec<_> = command.get_subcommands().filter(|sub| sub.get_name() != "help").collect();
        if subcommands.is_empty() {
            found.push((name.clone(), command.clone()));
        }
        for subcommand in subcommands {
            leaves(subcommand, &name, found);
        }
    }

    #[test]
    fn every_subcommand_that_prints_data_takes_dash_o_and_the_others_do_not() {
        let mut found = Vec::new();
        leaves(&Cli::command(), "", &mut found);
        let without_output = ["wmco run", "wmco completion", "wmco generate-man-pages"];
        for (name, command) in found {
            let output = command.get_arguments().find(|argument| argument.get_long() == Some("output"));
            if without_output.contains(&name.as_str()) {
                assert!(output.is_none(), "{name} must not take --output");
            } else {
                let output = output.unwrap_or_else(|| panic!("{name} takes no --output"));
                assert_eq!(output.get_short(), Some('o'), "{name}");
                let values: Vec<String> =
                    output.get_possible_values().iter().map(|value| value.get_name().to_owned()).collect();
                assert_eq!(values, ["human", "json", "yaml"], "{name}");
            }
        }
    }

    #[test]
    fn a_man_page_for_every_visible_subcommand() {
        let dir = tempfile::tempdir().unwrap();
        let pages = cmd::man::write_pages(Cli::command(), dir.path()).unwrap();
        let mut found = Vec::new();
        leaves(&Cli::command(), "", &mut found);
        for (name, command) in found.iter().filter(|(_, command)| !command.is_hide_set()) {
            let page = dir.path().join(format!("{}.1", name.replace(' ', "-")));
            assert!(pages.contains(&page), "no page for {name}: {pages:?}");
            let text = std::fs::read_to_string(&page).unwrap();
            assert!(text.contains(".TH") && text.contains(command.get_name()), "{name}: {text}");
        }
        assert!(pages.iter().all(|page| page.is_file()), "{pages:?}");
        assert!(pages.iter().all(|page| !page.to_string_lossy().contains("generate-man-pages")), "{pages:?}");
    }

    #[test]
    fn completion_scripts_are_not_empty() {
        use clap_complete::Shell;
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::PowerShell] {
            let script = cmd::completion::script(shell, Cli::command());
            assert!(script.contains("machineset"), "{shell}: {script}");
        }
    }

    #[test]
    fn outcome_maps_to_exit_codes() {
        assert_eq!(Outcome::Clean.exit_code(), 0);
        assert_eq!(Outcome::Findings.exit_code(), 1);
    }
}
