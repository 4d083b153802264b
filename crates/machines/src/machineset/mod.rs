//! Windows MachineSet generation for AWS, Azure, GCP, vSphere and Nutanix: [`generate`] turns a platform and
//! [`MachineSetOptions`] into the MachineSet the product needs — labelled `machine.openshift.io/os-id: Windows`,
//! with the worker role and type labels, the Node worker role label, the `windows-user-data` Secret and the
//! platform's Windows image — following the Go operator's published MachineSet examples.
//!
//! Names: on AWS, GCP and Nutanix the MachineSet is `<infrastructure ID>-<name>`; on vSphere and Azure, where
//! Machine names become Windows computer names (at most 15 characters), it is `<name>`, at most 9 characters.

mod cluster;
mod error;
mod options;
mod providers;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use crate::names::{
    CLUSTER_LABEL, MACHINE_API_NAMESPACE, MACHINE_ROLE_LABEL, MACHINE_TYPE_LABEL, MACHINESET_LABEL,
    MAX_WINDOWS_MACHINESET_NAME, OS_ID_LABEL, WINDOWS_OS_ID, WORKER_NODE_ROLE_LABEL, WORKER_ROLE,
};
use crate::node_name::is_dns_label;

pub use cluster::ClusterDefaults;
pub use error::MachineSetError;
pub use options::{Field, MachineSetOptions, MachineSetPlatform, NoMachineSets};

/// A generated Windows MachineSet.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct MachineSetDocument {
    object: Value,
}

impl MachineSetDocument {
    /// The MachineSet's name.
    pub fn name(&self) -> &str {
        self.object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()
    }

    /// The MachineSet as a JSON value (keys sorted, as `kubectl` prints them).
    pub fn as_json(&self) -> &Value {
        &self.object
    }

    /// The MachineSet as one YAML document.
    ///
    /// # Errors
    /// [`MachineSetError::Render`] if the YAML serializer fails.
    pub fn to_yaml(&self) -> Result<String, MachineSetError> {
        serde_saphyr::to_string(&self.object).map_err(MachineSetError::Render)
    }
}

/// The full MachineSet name for `options.name` on `platform`, checked: `<infrastructure ID>-<name>` on AWS, GCP and
/// Nutanix, `<name>` of at most 9 characters on vSphere and Azure.
///
/// ```
/// use wmco_machines::{Field, MachineSetError, MachineSetOptions, MachineSetPlatform, machineset_name};
/// let options = MachineSetOptions::new("windows-worker", 1).with(Field::InfrastructureId, "ci-4xk2p");
/// assert_eq!(machineset_name(MachineSetPlatform::Aws, &options)?, "ci-4xk2p-windows-worker");
/// assert!(matches!(
///     machineset_name(MachineSetPlatform::VSphere, &options),
///     Err(MachineSetError::NameTooLong { length: 14, .. })
/// ));
/// # Ok::<(), MachineSetError>(())
/// ```
///
/// # Errors
/// [`MachineSetError::NameTooLong`] for a vSphere or Azure name longer than 9 characters,
/// [`MachineSetError::InvalidName`] when the name is not a valid label value, and
/// [`MachineSetError::MissingFields`] when a prefixing platform has no infrastructure ID.
pub fn machineset_name(platform: MachineSetPlatform, options: &MachineSetOptions) -> Result<String, MachineSetError> {
    let name = options.name.as_str();
    let full_name = if platform.names_windows_computers() {
        let length = name.chars().count();
        if length > MAX_WINDOWS_MACHINESET_NAME {
            return Err(MachineSetError::NameTooLong { platform, name: name.to_owned(), length });
        }
        name.to_owned()
    } else {
        let infrastructure_id = options
            .get(Field::InfrastructureId)
            .ok_or(MachineSetError::MissingFields { platform, fields: vec![Field::InfrastructureId] })?;
        format!("{infrastructure_id}-{name}")
    };
    if name.is_empty() || !is_dns_label(&full_name) {
        return Err(MachineSetError::InvalidName { full_name });
    }
    Ok(full_name)
}

/// Generates the Windows MachineSet for `platform` from `options` (fields with defaults may be left out).
///
/// ```
/// use wmco_machines::{Field, MachineSetOptions, MachineSetPlatform, generate};
/// let options = MachineSetOptions::new("windows", 2)
///     .with(Field::InfrastructureId, "ci-4xk2p")
///     .with(Field::Region, "us-east-1")
///     .with(Field::Zone, "us-east-1a")
///     .with(Field::Ami, "ami-0a1b2c3d");
/// let machineset = generate(MachineSetPlatform::Aws, &options)?;
/// assert_eq!(machineset.name(), "ci-4xk2p-windows");
/// let json = machineset.as_json();
/// assert_eq!(json["spec"]["template"]["metadata"]["labels"]["machine.openshift.io/os-id"], "Windows");
/// assert_eq!(json["spec"]["template"]["spec"]["providerSpec"]["value"]["userDataSecret"]["name"], "windows-user-data");
/// assert!(machineset.to_yaml()?.contains("id: ami-0a1b2c3d"));
/// # Ok::<(), wmco_machines::MachineSetError>(())
/// ```
///
/// # Errors
/// The name errors of [`machineset_name`]; [`MachineSetError::MissingFields`] listing every required field not
/// given; [`MachineSetError::InvalidField`] for a value of the wrong shape (such as an Azure image URN).
pub fn generate(
    platform: MachineSetPlatform,
    options: &MachineSetOptions,
) -> Result<MachineSetDocument, MachineSetError> {
    let missing = options.missing(platform);
    if !missing.is_empty() {
        return Err(MachineSetError::MissingFields { platform, fields: missing });
    }
    let name = machineset_name(platform, options)?;
    let inputs =
        providers::Inputs { options, infrastructure_id: options.get(Field::InfrastructureId).unwrap_or_default() };
    let provider_spec = providers::provider_spec(platform, &inputs)?;
    Ok(MachineSetDocument { object: envelope(&name, inputs.infrastructure_id, options.replicas, provider_spec) })
}

/// The MachineSet around a provider spec: the labels and selector the machine API and the operator rely on.
fn envelope(name: &str, infrastructure_id: &str, replicas: u32, provider_spec: Value) -> Value {
    let selector = BTreeMap::from([(CLUSTER_LABEL, infrastructure_id), (MACHINESET_LABEL, name)]);
    let mut machine_labels = selector.clone();
    machine_labels.extend([
        (MACHINE_ROLE_LABEL, WORKER_ROLE),
        (MACHINE_TYPE_LABEL, WORKER_ROLE),
        (OS_ID_LABEL, WINDOWS_OS_ID),
    ]);
    json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {
            "labels": {CLUSTER_LABEL: infrastructure_id},
            "name": name,
            "namespace": MACHINE_API_NAMESPACE,
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": machine_labels},
                "spec": {
                    "metadata": {"labels": {WORKER_NODE_ROLE_LABEL: ""}},
                    "providerSpec": {"value": provider_spec},
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(name: &str) -> MachineSetOptions {
        MachineSetOptions::new(name, 1).with(Field::InfrastructureId, "ci-4xk2p")
    }

    #[test]
    fn names_are_prefixed_on_aws_gcp_and_nutanix_and_bare_on_vsphere_and_azure() {
        let cases = [
            (MachineSetPlatform::Aws, "ci-4xk2p-winworker"),
            (MachineSetPlatform::Gcp, "ci-4xk2p-winworker"),
            (MachineSetPlatform::Nutanix, "ci-4xk2p-winworker"),
            (MachineSetPlatform::VSphere, "winworker"),
            (MachineSetPlatform::Azure, "winworker"),
        ];
        for (platform, expected) in cases {
            assert_eq!(machineset_name(platform, &options("winworker")).unwrap(), expected, "{platform}");
        }
    }

    #[test]
    fn a_vsphere_or_azure_name_of_ten_characters_is_refused_nine_pass() {
        for platform in [MachineSetPlatform::VSphere, MachineSetPlatform::Azure] {
            let error = machineset_name(platform, &options("winworker1")).unwrap_err();
            assert!(
                matches!(&error, MachineSetError::NameTooLong { name, length: 10, .. } if name == "winworker1"),
                "{error:?}"
            );
            assert!(error.to_string().contains("Windows machine names are limited to 15 characters"));
        }
        assert_eq!(machineset_name(MachineSetPlatform::VSphere, &options("winworke1")).unwrap(), "winworke1");
        assert_eq!(
            machineset_name(MachineSetPlatform::Aws, &options("a-long-windows-worker-name")).unwrap(),
            "ci-4xk2p-a-long-windows-worker-name"
        );
    }

    #[test]
    fn invalid_names_are_refused_with_the_full_name() {
        for (platform, name, full_name) in [
            (MachineSetPlatform::VSphere, "Win", "Win"),
            (MachineSetPlatform::VSphere, "", ""),
            (MachineSetPlatform::Aws, "win_1", "ci-4xk2p-win_1"),
            (MachineSetPlatform::Gcp, &"w".repeat(55), &format!("ci-4xk2p-{}", "w".repeat(55))),
        ] {
            let error = machineset_name(platform, &options(name)).unwrap_err();
            assert!(matches!(&error, MachineSetError::InvalidName { full_name: got } if got == full_name), "{error:?}");
        }
        let no_id = MachineSetOptions::new("win", 1);
        assert!(matches!(
            machineset_name(MachineSetPlatform::Aws, &no_id),
            Err(MachineSetError::MissingFields { fields, .. }) if fields == [Field::InfrastructureId]
        ));
        assert_eq!(machineset_name(MachineSetPlatform::VSphere, &no_id).unwrap(), "win");
    }

    #[test]
    fn every_missing_field_is_named_at_once() {
        let error = generate(MachineSetPlatform::Gcp, &MachineSetOptions::new("win", 1)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "GCP MachineSets need infrastructure-id, project-id, region, zone, image: pass --infrastructure-id VALUE \
             --project-id VALUE --region VALUE --zone VALUE --image VALUE"
        );
    }
}
