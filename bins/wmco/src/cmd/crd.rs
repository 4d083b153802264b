//! `wmco crd`: prints the `WindowsInstance` CustomResourceDefinition generated from the Rust type — YAML by default
//! and with `-o yaml` (exactly what `manifests/base/crds/windowsinstances.yaml` holds), one JSON document with
//! `-o json`. It prints the CRD itself (a Kubernetes object with its own `apiVersion` and `kind`), unwrapped.

use wmco_cluster_client::crd::{windows_instance_crd, windows_instance_crd_yaml};

use crate::cli_support::{Outcome, OutputArgs, OutputFormat, print_stdout, to_machine_text};

/// Arguments of `wmco crd`.
#[derive(Debug, clap::Args)]
pub struct CrdArgs {
    #[command(flatten)]
    output: OutputArgs,
}

/// Prints the CRD in the requested format.
pub fn run(args: &CrdArgs) -> anyhow::Result<Outcome> {
    let text = match args.output.format {
        OutputFormat::Human | OutputFormat::Yaml => windows_instance_crd_yaml()?,
        OutputFormat::Json => to_machine_text(OutputFormat::Json, &windows_instance_crd())?,
    };
    print_stdout(&text)?;
    Ok(Outcome::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_form_names_the_crd() {
        let json = serde_json::to_value(windows_instance_crd()).unwrap();
        assert_eq!(json["metadata"]["name"], "windowsinstances.windowsmachineconfig.openshift.io");
        assert_eq!(json["spec"]["scope"], "Namespaced");
    }

    #[test]
    fn yaml_and_json_forms_are_the_same_object() {
        let yaml: serde_json::Value = serde_saphyr::from_str(&windows_instance_crd_yaml().unwrap()).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&to_machine_text(OutputFormat::Json, &windows_instance_crd()).unwrap()).unwrap();
        assert_eq!(yaml, json);
    }
}
