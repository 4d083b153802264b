//! `wmco plan --input FILE`: reads a fleet and a policy (YAML or JSON, schema in `docs/upgrades.md`), runs the
//! upgrade planner and prints what the fleet executor would do to each instance (upgrade, rekey, restart, reboot,
//! wait or nothing) and why.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use wmco_upgrade_planner::{Fleet, Plan, Policy};

use crate::cli_support::{Outcome, OutputArgs, UnusableInput, parse_document, print_stdout, render};

/// The `kind` of the document `wmco plan -o json|yaml` prints.
pub const KIND: &str = "Plan";

/// Arguments of `wmco plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// A YAML or JSON document with `fleet` and `policy` (see docs/upgrades.md). JSON is recognised by a `.json`
    /// extension or a leading `{`.
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The document `wmco plan` reads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanInput {
    /// The instances and the facts about them.
    pub fleet: Fleet,
    /// The rules to plan by.
    pub policy: Policy,
}

/// Reads the input file, plans and prints the plan. A plan that was produced exits 0, whatever it says.
pub fn run(args: &PlanArgs) -> anyhow::Result<Outcome> {
    let text = std::fs::read_to_string(&args.input)
        .map_err(|error| UnusableInput(format!("cannot read plan input {}: {error}", args.input.display())))?;
    let input = parse_input(&text, &args.input)?;
    let plan = wmco_upgrade_planner::plan(&input.fleet, &input.policy);
    print_stdout(&render(args.output.format, KIND, &plan, || render_human(&plan))?)?;
    Ok(Outcome::Clean)
}

/// Parses `text` (read from `source`) as JSON when `source` ends in `.json` or the text starts with `{`, as YAML
/// otherwise.
pub fn parse_input(text: &str, source: &Path) -> Result<PlanInput, UnusableInput> {
    parse_document(text, source, "plan input", "schema in docs/upgrades.md")
}

/// One line per instance (name, kind, action, reason), then one line per warning, then the summary.
pub fn render_human(plan: &Plan) -> String {
    let mut text = String::new();
    for decision in &plan.decisions {
        text.push_str(&format!("{decision}\n"));
    }
    for warning in &plan.warnings {
        text.push_str(&format!("warning: {warning}\n"));
    }
    text.push_str(&format!("summary: {}\n", plan.summary));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use wmco_upgrade_planner::Action;

    const DOC: &str = include_str!("../../../../docs/upgrades.md");

    /// The fenced block of `language` that follows the line `marker` in docs/upgrades.md.
    fn doc_block(marker: &str, language: &str) -> String {
        let after_marker = DOC.split_once(marker).map(|(_, rest)| rest).expect("marker is in docs/upgrades.md");
        let fence = format!("```{language}\n");
        let block = after_marker.split_once(&fence).map(|(_, rest)| rest).expect("block follows the marker");
        block.split_once("```").map(|(body, _)| body.to_owned()).expect("block is closed")
    }

    #[test]
    fn the_documented_example_parses_and_plans_as_documented() {
        let input = parse_input(&doc_block("<!-- example-input -->", "yaml"), Path::new("docs/upgrades.md"))
            .expect("the example in docs/upgrades.md is a valid plan input");
        let plan = wmco_upgrade_planner::plan(&input.fleet, &input.policy);
        assert_eq!(render_human(&plan), doc_block("<!-- example-output -->", "text"));
    }

    #[test]
    fn json_input_parses() {
        let json = r#"{
            "fleet": {"now": "2026-11-22T01:00:00Z", "currentPubKeyHash": "k", "instances": [
                {"name": "10.0.0.5", "kind": "BYOH"}
            ]},
            "policy": {"operatorVersion": "1.0.0", "clusterKubernetesVersion": "1.33.0",
                       "payloadKubeletVersion": "1.33.0"}
        }"#;
        let input = parse_input(json, Path::new("input.txt")).expect("JSON input parses");
        let plan = wmco_upgrade_planner::plan(&input.fleet, &input.policy);
        assert_eq!(plan.decisions.len(), 1);
        assert_eq!(plan.decisions[0].action, Action::None);
        assert_eq!(
            render_human(&plan),
            "10.0.0.5 (BYOH): none — not configured yet (the instances controller configures it)\n\
             summary: 1 instances: 0 upgrade, 0 rekey, 0 restart or reboot, 0 wait, 1 none; unavailable because of \
             the operator: 0 now (0 Machines away), 0 after this plan (max 1); key checks: 0 (max 8)\n"
        );
    }

    #[test]
    fn an_older_input_with_rebooting_and_max_concurrent_configurations_still_plans() {
        let yaml = "fleet:\n  now: 2026-11-22T01:00:00Z\n  currentPubKeyHash: k\n  instances:\n  - name: 10.0.0.5\n    \
                    kind: BYOH\n    phase: Configuring\n    rebooting: true\n  - name: 10.0.0.6\n    kind: BYOH\n    \
                    phase: Ready\n    node: {ready: true, configuredVersion: 0.9.0, pubKeyHash: k}\npolicy:\n  \
                    operatorVersion: 1.0.0\n  maxConcurrentConfigurations: 4\n  clusterKubernetesVersion: 1.33.0\n  \
                    payloadKubeletVersion: 1.33.0\n";
        let input = parse_input(yaml, Path::new("old.yaml")).expect("an older input parses");
        let plan = wmco_upgrade_planner::plan(&input.fleet, &input.policy);
        assert_eq!(
            render_human(&plan),
            "10.0.0.5 (BYOH): reboot (drained first) — reboot in progress\n\
             10.0.0.6 (BYOH): wait (budget exhausted: 1 of at most 1 unavailable) — configured at 0.9.0, operator is \
             1.0.0\n\
             summary: 2 instances: 0 upgrade, 0 rekey, 1 restart or reboot, 1 wait, 0 none; unavailable because of \
             the operator: 1 now (0 Machines away), 1 after this plan (max 1); key checks: 0 (max 4)\n"
        );
    }

    #[test]
    fn a_misspelled_field_is_unusable_input_naming_the_file_and_field() {
        let yaml = "fleet:\n  now: 2026-11-22T01:00:00Z\n  currentPubKeyHash: k\npolicy:\n  operatorVersion: 1.0.0\n  \
                    maxUnavailabel: 2\n  clusterKubernetesVersion: 1.33.0\n  payloadKubeletVersion: 1.33.0\n";
        let error = parse_input(yaml, Path::new("fleet.yaml")).expect_err("unknown field is rejected");
        assert!(
            error.0.starts_with("fleet.yaml is not a valid plan input (YAML, schema in docs/upgrades.md): "),
            "{}",
            error.0
        );
        assert!(error.0.contains("maxUnavailabel"), "{}", error.0);
    }

    #[test]
    fn a_yaml_syntax_error_says_error_once() {
        let error = parse_input("fleet: [\n", Path::new("fleet.yaml")).expect_err("broken YAML is rejected");
        assert!(!error.0.contains("error:"), "{}", error.0);
        assert!(error.0.starts_with("fleet.yaml is not a valid plan input (YAML, "), "{}", error.0);
    }

    #[test]
    fn an_invalid_version_is_unusable_input() {
        let json = r#"{"fleet": {"now": "2026-11-22T01:00:00Z", "currentPubKeyHash": "k"},
                       "policy": {"operatorVersion": "one", "clusterKubernetesVersion": "1.33.0",
                                  "payloadKubeletVersion": "1.33.0"}}"#;
        let error = parse_input(json, Path::new("input.json")).expect_err("bad version is rejected");
        assert!(
            error.0.starts_with("input.json is not a valid plan input (JSON, schema in docs/upgrades.md): "),
            "{}",
            error.0
        );
    }
}
