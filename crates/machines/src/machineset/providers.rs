//! The `providerSpec.value` of a Windows Machine per platform, after the Go operator's MachineSet examples: the
//! platform's Windows image, sizes, placement, the cluster's credentials Secret and the `windows-user-data` Secret.

use serde_json::{Value, json};

use super::error::MachineSetError;
use super::options::{Field, MachineSetOptions, MachineSetPlatform};
use crate::names::{MACHINE_API_NAMESPACE, USER_DATA_SECRET};

/// AWS instance type unless `--instance-type` says otherwise.
const AWS_INSTANCE_TYPE: &str = "m5a.large";
/// Azure VM size unless `--vm-size` says otherwise.
const AZURE_VM_SIZE: &str = "Standard_D2s_v3";
/// Azure Marketplace image (`publisher:offer:sku:version`) unless `--image` says otherwise.
const AZURE_IMAGE: &str = "MicrosoftWindowsServer:WindowsServer:2022-datacenter:latest";
/// GCP machine type unless `--machine-type` says otherwise.
const GCP_MACHINE_TYPE: &str = "n1-standard-4";

/// What the provider specs are built from.
pub(super) struct Inputs<'a> {
    /// Every field given.
    pub options: &'a MachineSetOptions,
    /// The infrastructure ID (required on every platform).
    pub infrastructure_id: &'a str,
}

impl Inputs<'_> {
    /// A field the platform requires ([`MachineSetOptions::missing`] was empty, so it is there).
    fn required(&self, field: Field) -> &str {
        self.options.get(field).unwrap_or_default()
    }

    /// A field with a default.
    fn or<'a>(&'a self, field: Field, default: &'a str) -> &'a str {
        self.options.get(field).unwrap_or(default)
    }
}

/// The provider spec for `platform`.
pub(super) fn provider_spec(platform: MachineSetPlatform, inputs: &Inputs<'_>) -> Result<Value, MachineSetError> {
    match platform {
        MachineSetPlatform::Aws => Ok(aws(inputs)),
        MachineSetPlatform::Azure => azure(inputs),
        MachineSetPlatform::Gcp => Ok(gcp(inputs)),
        MachineSetPlatform::VSphere => Ok(vsphere(inputs)),
        MachineSetPlatform::Nutanix => Ok(nutanix(inputs)),
    }
}

fn aws(inputs: &Inputs<'_>) -> Value {
    let id = inputs.infrastructure_id;
    let zone = inputs.required(Field::Zone);
    json!({
        "ami": {"id": inputs.required(Field::Ami)},
        "apiVersion": "awsproviderconfig.openshift.io/v1beta1",
        "blockDevices": [{"ebs": {"iops": 0, "volumeSize": 120, "volumeType": "gp2"}}],
        "credentialsSecret": {"name": "aws-cloud-credentials"},
        "deviceIndex": 0,
        "iamInstanceProfile": {"id": format!("{id}-worker-profile")},
        "instanceType": inputs.or(Field::InstanceType, AWS_INSTANCE_TYPE),
        "kind": "AWSMachineProviderConfig",
        "placement": {"availabilityZone": zone, "region": inputs.required(Field::Region)},
        "securityGroups": [{"filters": [{"name": "tag:Name", "values": [format!("{id}-worker-sg")]}]}],
        "subnet": {"filters": [{"name": "tag:Name", "values": [format!("{id}-private-{zone}")]}]},
        "tags": [{"name": format!("kubernetes.io/cluster/{id}"), "value": "owned"}],
        "userDataSecret": {"name": USER_DATA_SECRET, "namespace": MACHINE_API_NAMESPACE},
    })
}

fn azure(inputs: &Inputs<'_>) -> Result<Value, MachineSetError> {
    let id = inputs.infrastructure_id;
    let urn = inputs.or(Field::Image, AZURE_IMAGE);
    let [publisher, offer, sku, version] = split_urn(urn)?;
    let default_resource_group = format!("{id}-rg");
    let resource_group = inputs.or(Field::ResourceGroup, &default_resource_group);
    let mut spec = json!({
        "apiVersion": "azureproviderconfig.openshift.io/v1beta1",
        "credentialsSecret": {"name": "azure-cloud-credentials", "namespace": MACHINE_API_NAMESPACE},
        "image": {"offer": offer, "publisher": publisher, "resourceID": "", "sku": sku, "version": version},
        "kind": "AzureMachineProviderSpec",
        "location": inputs.required(Field::Location),
        "managedIdentity": format!("{id}-identity"),
        "networkResourceGroup": inputs.or(Field::NetworkResourceGroup, resource_group),
        "osDisk": {"diskSizeGB": 128, "managedDisk": {"storageAccountType": "Premium_LRS"}, "osType": "Windows"},
        "publicIP": false,
        "resourceGroup": resource_group,
        "subnet": format!("{id}-worker-subnet"),
        "userDataSecret": {"name": USER_DATA_SECRET, "namespace": MACHINE_API_NAMESPACE},
        "vmSize": inputs.or(Field::VmSize, AZURE_VM_SIZE),
        "vnet": format!("{id}-vnet"),
    });
    if let (Some(zone), Some(object)) = (inputs.options.get(Field::Zone), spec.as_object_mut()) {
        object.insert("zone".to_owned(), Value::from(zone));
    }
    Ok(spec)
}

/// `publisher:offer:sku:version`, each part non-empty.
fn split_urn(urn: &str) -> Result<[&str; 4], MachineSetError> {
    let parts: Vec<&str> = urn.split(':').collect();
    match parts.as_slice() {
        [publisher, offer, sku, version] if parts.iter().all(|part| !part.trim().is_empty()) => {
            Ok([publisher, offer, sku, version])
        }
        _ => Err(MachineSetError::InvalidField {
            field: Field::Image,
            value: urn.to_owned(),
            reason: "an Azure image is a Marketplace URN publisher:offer:sku:version, \
                     e.g. MicrosoftWindowsServer:WindowsServer:2022-datacenter:latest",
        }),
    }
}

fn gcp(inputs: &Inputs<'_>) -> Value {
    let id = inputs.infrastructure_id;
    let project = inputs.required(Field::ProjectId);
    json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "canIPForward": false,
        "credentialsSecret": {"name": "gcp-cloud-credentials"},
        "deletionProtection": false,
        "disks": [{"autoDelete": true, "boot": true, "image": inputs.required(Field::Image), "sizeGb": 128, "type": "pd-ssd"}],
        "kind": "GCPMachineProviderSpec",
        "machineType": inputs.or(Field::MachineType, GCP_MACHINE_TYPE),
        "networkInterfaces": [{"network": format!("{id}-network"), "subnetwork": format!("{id}-worker-subnet")}],
        "projectID": project,
        "region": inputs.required(Field::Region),
        "serviceAccounts": [{
            "email": format!("{id}-w@{project}.iam.gserviceaccount.com"),
            "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
        }],
        "tags": [format!("{id}-worker")],
        "userDataSecret": {"name": USER_DATA_SECRET},
        "zone": inputs.required(Field::Zone),
    })
}

fn vsphere(inputs: &Inputs<'_>) -> Value {
    let datacenter = inputs.required(Field::Datacenter);
    let default_folder = format!("/{datacenter}/vm/{}", inputs.infrastructure_id);
    json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "credentialsSecret": {"name": "vsphere-cloud-credentials"},
        "diskGiB": 128,
        "kind": "VSphereMachineProviderSpec",
        "memoryMiB": 16384,
        "network": {"devices": [{"networkName": inputs.required(Field::Network)}]},
        "numCPUs": 4,
        "numCoresPerSocket": 1,
        "snapshot": "",
        "template": inputs.required(Field::Template),
        "userDataSecret": {"name": USER_DATA_SECRET},
        "workspace": {
            "datacenter": datacenter,
            "datastore": inputs.required(Field::Datastore),
            "folder": inputs.or(Field::Folder, &default_folder),
            "resourcePool": inputs.required(Field::ResourcePool),
            "server": inputs.required(Field::Server),
        },
    })
}

fn nutanix(inputs: &Inputs<'_>) -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1",
        "bootType": "",
        "cluster": {"type": "uuid", "uuid": inputs.required(Field::Cluster)},
        "credentialsSecret": {"name": "nutanix-credentials"},
        "image": {"name": inputs.required(Field::Image), "type": "name"},
        "kind": "NutanixMachineProviderConfig",
        "memorySize": "16Gi",
        "project": {"type": ""},
        "subnets": [{"name": inputs.required(Field::Subnet), "type": "name"}],
        "systemDiskSize": "120Gi",
        "userDataSecret": {"name": USER_DATA_SECRET},
        "vcpuSockets": 4,
        "vcpusPerSocket": 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_image_urns_need_four_parts() {
        assert_eq!(split_urn("a:b:c:d").unwrap(), ["a", "b", "c", "d"]);
        for bad in ["a:b:c", "a:b:c:d:e", "a::c:d", ""] {
            assert!(matches!(split_urn(bad), Err(MachineSetError::InvalidField { field: Field::Image, .. })), "{bad}");
        }
    }
}
