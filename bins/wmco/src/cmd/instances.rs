//! `wmco instances validate FILE`: reads a `windows-instances` ConfigMap manifest offline and reports, entry by
//! entry, what the operator would make of it (the same validation, with the system resolver).

use std::path::PathBuf;

use serde::Serialize;
use wmco_instance_inventory::{
    DesiredInstance, EntryProblem, Inventory, ManifestError, Severity, SystemResolver, build_inventory, load_config_map,
};

use crate::cli_support::{Outcome, OutputArgs, UnusableInput, print_stdout, render};

/// The `kind` of the document `wmco instances validate -o json|yaml` prints.
pub const KIND: &str = "InstancesValidation";

/// Arguments of `wmco instances`.
#[derive(Debug, clap::Args)]
pub struct InstancesArgs {
    /// What to do with the instances list.
    #[command(subcommand)]
    pub command: InstancesCommand,
}

/// The `wmco instances` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum InstancesCommand {
    /// Validate a `windows-instances` ConfigMap manifest (YAML or JSON, as `kubectl get cm windows-instances -o
    /// yaml` prints it): one line per entry, OK, ERROR or WARNING. DNS names are resolved with this machine's
    /// resolver. Exits 0 when no entry is refused (warnings, such as an IP and a DNS name for the same host, are
    /// printed but still exit 0), 1 when some entry is refused, 2 when the file is unreadable or not a ConfigMap.
    Validate(ValidateArgs),
}

/// Arguments of `wmco instances validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The ConfigMap manifest.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// One valid entry, as printed with `-o json|yaml`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct InstanceReport<'a> {
    /// The name its `WindowsInstance` gets.
    instance_name: String,
    #[serde(flatten)]
    instance: &'a DesiredInstance,
}

/// The result of `wmco instances validate`, as printed with `-o json|yaml`.
#[derive(Debug, Serialize)]
struct ValidateReport<'a> {
    file: &'a PathBuf,
    valid: bool,
    instances: Vec<InstanceReport<'a>>,
    problems: &'a [EntryProblem],
}

/// Runs the subcommand.
pub fn run(args: &InstancesArgs) -> anyhow::Result<Outcome> {
    match &args.command {
        InstancesCommand::Validate(validate_args) => validate(validate_args),
    }
}

fn validate(args: &ValidateArgs) -> anyhow::Result<Outcome> {
    let inventory = validate_file(args)?;
    let report = json_report(&args.file, &inventory);
    print_stdout(&render(args.output.format, KIND, &report, || render_human(&inventory))?)?;
    Ok(if inventory.has_errors() { Outcome::Findings } else { Outcome::Clean })
}

/// Reads the manifest (unusable input when that fails) and validates its entries with the system resolver.
fn validate_file(args: &ValidateArgs) -> anyhow::Result<Inventory> {
    let config_map = load_config_map(&args.file).map_err(|error| {
        let message = match error {
            ManifestError::Unreadable { .. } => error.to_string(),
            _ => format!("{}: {error}", args.file.display()),
        };
        anyhow::Error::new(UnusableInput(message))
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    Ok(runtime.block_on(build_inventory(&config_map.data, &SystemResolver)))
}

fn json_report<'a>(file: &'a PathBuf, inventory: &'a Inventory) -> ValidateReport<'a> {
    ValidateReport {
        file,
        valid: !inventory.has_errors(),
        instances: inventory
            .instances
            .iter()
            .map(|instance| InstanceReport { instance_name: instance.instance_name(), instance })
            .collect(),
        problems: &inventory.problems,
    }
}

/// One line per entry, sorted by key, then a summary line.
fn render_human(inventory: &Inventory) -> String {
    let mut lines: Vec<(&str, String)> = Vec::new();
    for instance in &inventory.instances {
        lines.push((
            &instance.key,
            format!(
                "OK {} username={} → ipv4 {} (WindowsInstance {})",
                instance.key,
                instance.username,
                instance.resolved_ipv4,
                instance.instance_name()
            ),
        ));
    }
    for problem in &inventory.problems {
        lines.push((&problem.key, format!("{} {problem}", problem.severity)));
    }
    lines.sort();
    let errors = inventory.problems.iter().filter(|problem| problem.severity == Severity::Error).count();
    let warnings = inventory.problems.len() - errors;
    let mut text: String = lines.into_iter().map(|(_, line)| line + "\n").collect();
    text.push_str(&format!(
        "{} entries: {} ok, {errors} error(s), {warnings} warning(s)\n",
        inventory.instances.len() + inventory.problems.len(),
        inventory.instances.len()
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli_support::{OutputFormat, UnusableInput};

    fn write_manifest(text: &str) -> (tempfile::TempDir, ValidateArgs) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("windows-instances.yaml");
        std::fs::write(&file, text).unwrap();
        (dir, ValidateArgs { file, output: OutputArgs { format: OutputFormat::Json } })
    }

    fn run_validate(args: ValidateArgs) -> anyhow::Result<Outcome> {
        let args = InstancesArgs { command: InstancesCommand::Validate(args) };
        run(&args)
    }

    const GOOD: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: windows-instances\ndata:\n  \
                        10.1.2.3: |-\n    username=Administrator\n  localhost: username=capi\n";

    #[test]
    fn all_good_entries_exit_0_and_resolve_localhost() {
        let (_dir, args) = write_manifest(GOOD);
        let inventory = validate_file(&args).unwrap();
        assert!(inventory.problems.is_empty(), "{inventory:?}");
        let text = render_human(&inventory);
        assert_eq!(
            text,
            "OK 10.1.2.3 username=Administrator → ipv4 10.1.2.3 (WindowsInstance byoh-10-1-2-3)\n\
             OK localhost username=capi → ipv4 127.0.0.1 (WindowsInstance byoh-localhost)\n\
             2 entries: 2 ok, 0 error(s), 0 warning(s)\n"
        );
        assert_eq!(run_validate(args).unwrap(), Outcome::Clean);
    }

    #[test]
    fn a_duplicate_host_is_a_warning_and_still_exits_0() {
        let (_dir, args) = write_manifest(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: windows-instances}\n\
             data: {127.0.0.1: username=a, localhost: username=a}\n",
        );
        let inventory = validate_file(&args).unwrap();
        assert_eq!(
            render_human(&inventory),
            "OK 127.0.0.1 username=a → ipv4 127.0.0.1 (WindowsInstance byoh-127-0-0-1)\n\
             WARNING localhost: same host as \"127.0.0.1\" (both reach 127.0.0.1); only \"127.0.0.1\" is used\n\
             2 entries: 1 ok, 0 error(s), 1 warning(s)\n"
        );
        assert_eq!(run_validate(args).unwrap(), Outcome::Clean);
    }

    #[test]
    fn a_bad_entry_exits_1_and_the_good_one_is_still_listed() {
        let (_dir, args) = write_manifest(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"windows-instances"},
                "data":{"10.1.2.3":"username=Administrator","10.1.2.4":"username=a,password=x"}}"#,
        );
        let inventory = validate_file(&args).unwrap();
        assert_eq!(
            render_human(&inventory),
            "OK 10.1.2.3 username=Administrator → ipv4 10.1.2.3 (WindowsInstance byoh-10-1-2-3)\n\
             ERROR 10.1.2.4: unknown field \"password\"; the value must be exactly `username=<name>`\n\
             2 entries: 1 ok, 1 error(s), 0 warning(s)\n"
        );
        let json = serde_json::to_value(json_report(&args.file, &inventory)).unwrap();
        assert_eq!(json["valid"], false);
        assert_eq!(json["instances"][0]["instanceName"], "byoh-10-1-2-3");
        assert_eq!(json["instances"][0]["resolvedIpv4"], "10.1.2.3");
        assert_eq!(json["instances"][0]["username"], "Administrator");
        assert_eq!(json["problems"][0]["key"], "10.1.2.4");
        assert_eq!(json["problems"][0]["severity"], "error");
        assert_eq!(run_validate(args).unwrap(), Outcome::Findings);
    }

    #[test]
    fn unreadable_or_wrong_files_exit_2() {
        let missing = ValidateArgs {
            file: PathBuf::from("/nonexistent/windows-instances.yaml"),
            output: OutputArgs { format: OutputFormat::Json },
        };
        let error = run_validate(missing).unwrap_err();
        assert!(error.is::<UnusableInput>(), "{error:#}");
        assert!(error.to_string().starts_with("cannot read /nonexistent/windows-instances.yaml: "), "{error}");

        let (_dir, args) = write_manifest("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\ndata: {}\n");
        let error = run_validate(args).unwrap_err();
        assert!(error.is::<UnusableInput>(), "{error:#}");
        let message = error.to_string();
        assert!(message.ends_with("found apiVersion \"v1\" and kind \"Secret\""), "{message}");
        assert!(message.contains("windows-instances.yaml: expected apiVersion v1 and kind ConfigMap"), "{message}");

        let (_dir, args) = write_manifest("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: windows-instances}\n");
        let error = run_validate(args).unwrap_err();
        assert!(error.is::<UnusableInput>(), "{error:#}");
    }
}
