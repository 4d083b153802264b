//! The `wmco` binary: parses the command line, sets up logging, dispatches to a subcommand and maps its outcome to
//! the exit-code convention (0 ok, 1 findings, 2 unusable input or usage error).

mod cli_support;
mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::cli_support::{LogFormat, OutputFormat};

/// Turns Windows Server hosts into worker nodes of a Kubernetes or OpenShift cluster, over SSH.
#[derive(Debug, Parser)]
#[command(name = "wmco", version, about, long_about = None)]
struct Cli {
    /// How log lines are written to standard error. The level comes from `RUST_LOG` (default `info`).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "WMCO_LOG_FORMAT")]
    log_format: LogFormat,

    /// How results are written to standard output: `human` for people, `json` for programs.
    #[arg(long, global = true, value_enum, default_value_t = OutputFormat::Human)]
    output: OutputFormat,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the version and the git commit this binary was built from.
    Version,
    /// Check SSH access to a Windows host: host key, authentication, and a command round trip.
    Ssh(cmd::ssh::SshArgs),
    /// Print the WindowsInstance CustomResourceDefinition generated from the Rust type (YAML; JSON with --output json).
    Crd,
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
    Run(cmd::run::RunArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli_support::init_logging(cli.log_format);
    let result = match cli.command {
        Command::Version => cmd::version::run(cli.output),
        Command::Ssh(args) => cmd::ssh::run(&args, cli.output),
        Command::Crd => cmd::crd::run(cli.output),
        Command::Plan(args) => cmd::plan::run(&args, cli.output),
        Command::Csr(args) => cmd::csr::run(&args, cli.output),
        Command::Payload(args) => cmd::payload::run(&args, cli.output),
        Command::Instances(args) => cmd::instances::run(&args, cli.output),
        Command::MachineSet(args) => cmd::machineset::run(&args, cli.output),
        Command::UserData(args) => cmd::user_data::run(&args, cli.output),
        Command::Run(args) => cmd::run::run(&args, cli.output),
    };
    cli_support::finish(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli_support::Outcome;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn outcome_maps_to_exit_codes() {
        assert_eq!(Outcome::Clean.exit_code(), 0);
        assert_eq!(Outcome::Findings.exit_code(), 1);
    }
}
