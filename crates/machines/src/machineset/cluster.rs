//! The MachineSet fields a cluster's `Infrastructure cluster` object supplies: the infrastructure ID, the platform
//! type, and per platform the region, project, resource groups or vCenter placement the installer recorded.

use std::collections::BTreeMap;

use serde::Serialize;
use wmco_cluster_client::types::Infrastructure;

use super::options::{Field, MachineSetOptions, MachineSetPlatform};

/// Where in the Infrastructure object (JSON pointer) each field is, per platform.
fn pointers(platform: MachineSetPlatform) -> &'static [(Field, &'static str)] {
    match platform {
        MachineSetPlatform::Aws => &[(Field::Region, "/status/platformStatus/aws/region")],
        MachineSetPlatform::Gcp => &[
            (Field::ProjectId, "/status/platformStatus/gcp/projectID"),
            (Field::Region, "/status/platformStatus/gcp/region"),
        ],
        MachineSetPlatform::Azure => &[
            (Field::ResourceGroup, "/status/platformStatus/azure/resourceGroupName"),
            (Field::NetworkResourceGroup, "/status/platformStatus/azure/networkResourceGroupName"),
        ],
        MachineSetPlatform::VSphere => &[
            (Field::Server, "/spec/platformSpec/vsphere/failureDomains/0/server"),
            (Field::Server, "/spec/platformSpec/vsphere/vcenters/0/server"),
            (Field::Datacenter, "/spec/platformSpec/vsphere/failureDomains/0/topology/datacenter"),
            (Field::Datastore, "/spec/platformSpec/vsphere/failureDomains/0/topology/datastore"),
            (Field::Network, "/spec/platformSpec/vsphere/failureDomains/0/topology/networks/0"),
            (Field::ResourcePool, "/spec/platformSpec/vsphere/failureDomains/0/topology/resourcePool"),
            (Field::Folder, "/spec/platformSpec/vsphere/failureDomains/0/topology/folder"),
        ],
        MachineSetPlatform::Nutanix => &[(Field::Cluster, "/spec/platformSpec/nutanix/failureDomains/0/cluster/uuid")],
    }
}

/// What the cluster says about itself for MachineSet generation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDefaults {
    /// `status.platformStatus.type`, e.g. `AWS`.
    pub platform_type: Option<String>,
    /// The fields found, for the platform asked about.
    pub fields: BTreeMap<Field, String>,
}

impl ClusterDefaults {
    /// Reads the fields `platform` can take from `infrastructure` (first found wins; blank values are skipped).
    ///
    /// ```
    /// use wmco_cluster_client::types::Infrastructure;
    /// use wmco_machines::{ClusterDefaults, Field, MachineSetPlatform};
    /// let infrastructure: Infrastructure = serde_json::from_value(serde_json::json!({
    ///     "apiVersion": "config.openshift.io/v1", "kind": "Infrastructure", "metadata": {"name": "cluster"},
    ///     "spec": {},
    ///     "status": {"infrastructureName": "ci-4xk2p", "platformStatus": {"type": "AWS", "aws": {"region": "us-east-2"}}}
    /// }))?;
    /// let defaults = ClusterDefaults::from_infrastructure(&infrastructure, MachineSetPlatform::Aws);
    /// assert_eq!(defaults.platform_type.as_deref(), Some("AWS"));
    /// assert_eq!(defaults.fields[&Field::InfrastructureId], "ci-4xk2p");
    /// assert_eq!(defaults.fields[&Field::Region], "us-east-2");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn from_infrastructure(infrastructure: &Infrastructure, platform: MachineSetPlatform) -> ClusterDefaults {
        let json = serde_json::to_value(infrastructure).unwrap_or_default();
        let text = |pointer: &str| {
            json.pointer(pointer).and_then(serde_json::Value::as_str).map(str::trim).filter(|value| !value.is_empty())
        };
        let mut fields = BTreeMap::new();
        let wanted = [(Field::InfrastructureId, "/status/infrastructureName")]
            .into_iter()
            .chain(pointers(platform).iter().copied());
        for (field, pointer) in wanted {
            if let Some(value) = text(pointer) {
                fields.entry(field).or_insert_with(|| value.to_owned());
            }
        }
        ClusterDefaults { platform_type: text("/status/platformStatus/type").map(str::to_owned), fields }
    }

    /// Fills every field `options` lacks from these defaults.
    pub fn fill(&self, options: &mut MachineSetOptions) {
        for (field, value) in &self.fields {
            options.set_if_missing(*field, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn infrastructure(status: serde_json::Value, spec: serde_json::Value) -> Infrastructure {
        serde_json::from_value(json!({
            "apiVersion": "config.openshift.io/v1", "kind": "Infrastructure", "metadata": {"name": "cluster"},
            "spec": spec, "status": status
        }))
        .unwrap()
    }

    #[test]
    fn reads_each_platforms_fields() {
        let gcp = infrastructure(
            json!({"infrastructureName": "c-1", "platformStatus": {"type": "GCP", "gcp": {"projectID": "p-7", "region": "us-central1"}}}),
            json!({}),
        );
        let defaults = ClusterDefaults::from_infrastructure(&gcp, MachineSetPlatform::Gcp);
        assert_eq!(
            defaults.fields,
            BTreeMap::from([
                (Field::InfrastructureId, "c-1".to_owned()),
                (Field::ProjectId, "p-7".to_owned()),
                (Field::Region, "us-central1".to_owned()),
            ])
        );
        let azure = infrastructure(
            json!({"infrastructureName": "c-2", "platformStatus": {"type": "Azure",
                   "azure": {"resourceGroupName": "c-2-rg", "networkResourceGroupName": "net-rg"}}}),
            json!({}),
        );
        let defaults = ClusterDefaults::from_infrastructure(&azure, MachineSetPlatform::Azure);
        assert_eq!(defaults.fields.get(&Field::NetworkResourceGroup).map(String::as_str), Some("net-rg"));
        assert_eq!(defaults.fields.get(&Field::ResourceGroup).map(String::as_str), Some("c-2-rg"));
    }

    #[test]
    fn vsphere_placement_comes_from_the_first_failure_domain_and_the_vcenter_list() {
        let vsphere = infrastructure(
            json!({"infrastructureName": "c-3", "platformStatus": {"type": "VSphere"}}),
            json!({"platformSpec": {"type": "VSphere", "vsphere": {
                "vcenters": [{"server": "vc.example"}],
                "failureDomains": [{"name": "fd", "server": "", "topology": {
                    "datacenter": "dc1", "datastore": "/dc1/datastore/ds1", "networks": ["vm-net"],
                    "resourcePool": "/dc1/host/c1/Resources", "folder": "/dc1/vm/c-3"}}]}}}),
        );
        let defaults = ClusterDefaults::from_infrastructure(&vsphere, MachineSetPlatform::VSphere);
        let mut options = MachineSetOptions::new("win", 1).with(Field::Datacenter, "dc-given");
        defaults.fill(&mut options);
        assert_eq!(options.get(Field::Server), Some("vc.example"));
        assert_eq!(options.get(Field::Datacenter), Some("dc-given"));
        assert_eq!(options.get(Field::Network), Some("vm-net"));
        assert_eq!(options.get(Field::Folder), Some("/dc1/vm/c-3"));
        assert_eq!(options.missing(MachineSetPlatform::VSphere), [Field::Template]);
    }

    #[test]
    fn another_platforms_fields_are_not_taken() {
        let aws = infrastructure(
            json!({"infrastructureName": "c-4", "platformStatus": {"type": "AWS", "aws": {"region": "eu-west-1"}}}),
            json!({}),
        );
        let defaults = ClusterDefaults::from_infrastructure(&aws, MachineSetPlatform::Gcp);
        assert_eq!(defaults.fields, BTreeMap::from([(Field::InfrastructureId, "c-4".to_owned())]));
        assert_eq!(defaults.platform_type.as_deref(), Some("AWS"));
    }
}
