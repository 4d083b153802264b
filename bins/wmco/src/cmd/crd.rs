//! `wmco crd`: prints the `WindowsInstance` CustomResourceDefinition generated from the Rust type — YAML by default
//! (exactly what `manifests/base/crds/windowsinstances.yaml` holds), one JSON document with `--output json`.

use wmco_cluster_client::crd::{windows_instance_crd, windows_instance_crd_yaml};

use crate::cli_support::{Outcome, OutputFormat};

/// Prints the CRD in the requested format.
pub fn run(output: OutputFormat) -> anyhow::Result<Outcome> {
    match output {
        OutputFormat::Human => print!("{}", windows_instance_crd_yaml()?),
        OutputFormat::Json => println!("{}", serde_json::to_string(&windows_instance_crd())?),
    }
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
}
