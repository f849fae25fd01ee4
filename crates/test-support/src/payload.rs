//! The release payload: the fixtures' transport ConfigMaps and the core CRD manifest, edits of them as
//! a new release would ship, small synthetic providers for tests that need many installs, and the
//! release's images.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::{CVO, NS, apply_as_release_payload, ensure_namespaces, install_crds, read_documents};

pub const CORE_CM: &str = "0000_30_cluster-api_04_cm.core-cluster-api.yaml";
/// The core CRD manifest, which the release payload applies itself.
pub const CORE_CRDS: &str = "0000_30_cluster-api_04_crd.core-cluster-api.yaml";
pub const AWS_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-aws.yaml";
pub const GCP_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-gcp.yaml";
pub const AZURE_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-azure.yaml";
pub const VSPHERE_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-vsphere.yaml";
/// The PowerVS provider, published as `ibmcloud`. The fixtures have none: [`ibmcloud_configmap`]
/// generates it from the stand-in in `examples/providers/ibmcloud`.
pub const IBMCLOUD_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-ibmcloud.yaml";

/// The release the tests install.
pub const RELEASE_VERSION: &str = "4.21.0-test";

/// A file or folder of `../shared/fixtures`; `None` (with the reason printed) when it is missing
/// outside CI; with `CI=true` a missing fixture fails.
pub fn fixture(relative: &str) -> Option<PathBuf> {
    control_plane::shared_fixture(relative)
}

/// The transport ConfigMap of a fixture file (`transport-configmaps/<file>`), as a JSON value.
pub fn fixture_configmap(file: &str) -> Value {
    read_documents(&fixture(&format!("transport-configmaps/{file}")).expect("fixture present"))
        .remove(0)
}

/// The decoded components text of a fixture transport ConfigMap.
pub fn fixture_components(file: &str) -> String {
    capi_manifests::TransportConfigMap::decode(&fixture_configmap(file))
        .expect("fixture decodes")
        .content
        .components
}

/// Every object of a fixture transport ConfigMap, decoded with the data model as the installer does.
pub fn fixture_component_objects(file: &str) -> Vec<capi_manifests::yaml::Object> {
    capi_manifests::yaml::parse_objects(file, &fixture_components(file)).expect("components parse")
}

/// The identity of every object of a fixture transport ConfigMap.
pub fn fixture_objects(file: &str) -> Vec<capi_manifests::ObjectKey> {
    fixture_component_objects(file)
        .into_iter()
        .map(|o| o.id)
        .collect()
}

/// The CRDs a fixture transport ConfigMap installs.
pub fn crds_of_transport(file: &str) -> Vec<Value> {
    fixture_component_objects(file)
        .into_iter()
        .map(|o| o.value)
        .filter(|v| v["kind"] == "CustomResourceDefinition")
        .collect()
}

/// The CRDs of a provider's transport ConfigMap, installed (as the installer would) and Established.
pub async fn install_provider_crds(client: &Client, file: &str) {
    install_crds(client, crds_of_transport(file)).await;
}

/// What the release payload applies before the installer runs: the namespaces, the core CRD manifest
/// and the transport ConfigMaps named. `None` when a fixture is missing outside CI.
pub async fn load_payload(client: &Client, configmaps: &[&str]) -> Option<()> {
    ensure_namespaces(client).await;
    let crds = fixture(&format!("transport-configmaps/{CORE_CRDS}"))?;
    apply_as_release_payload(client, &read_documents(&crds)).await;
    for name in configmaps {
        apply_as_release_payload(client, &[payload_configmap(name)?]).await;
    }
    Some(())
}

/// The transport ConfigMap of the example provider in `examples/providers/<folder>`, generated with the
/// data model as `manifests-gen` would from its `components.yaml`, `metadata.yaml` and `provider.env`.
pub fn example_configmap(folder: &str) -> Value {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/providers")
        .join(folder);
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()))
    };
    let env = read("provider.env");
    let var = |key: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{folder}/provider.env has no {key}"))
            .to_string()
    };
    let cli_name = var("NAME");
    let (flavor, name) = capi_manifests::customize::Flavor::for_cli_name(&cli_name);
    let provider_type: capi_manifests::ProviderType = var("TYPE").parse().expect("provider type");
    let provider = capi_manifests::Provider::new(name, provider_type, &var("VERSION"))
        .expect("example provider identity");
    let generated = capi_manifests::customize::generate(
        &provider,
        flavor,
        "components.yaml",
        &read("components.yaml"),
        "metadata.yaml",
        &read("metadata.yaml"),
    )
    .unwrap_or_else(|e| panic!("examples/providers/{folder}: {e}"));
    capi_manifests::yaml::parse_documents("ConfigMap", &generated.configmap_yaml)
        .expect("generated ConfigMap parses")
        .remove(0)
        .value
}

/// The transport ConfigMap of the PowerVS provider (`ibmcloud`), from its stand-in.
pub fn ibmcloud_configmap() -> Value {
    example_configmap("ibmcloud")
}

/// A transport ConfigMap of the release payload by file name: from the fixtures, or, for
/// [`IBMCLOUD_CM`], from its stand-in.
pub fn payload_configmap(file: &str) -> Option<Value> {
    if file == IBMCLOUD_CM {
        return Some(ibmcloud_configmap());
    }
    let path = fixture(&format!("transport-configmaps/{file}"))?;
    Some(read_documents(&path).remove(0))
}

/// Applies a ConfigMap in the providers' namespace as the release payload would.
pub async fn put_configmap(client: &Client, cm: &Value) {
    let name = cm["metadata"]["name"].as_str().unwrap().to_string();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    api.patch(&name, &PatchParams::apply(CVO).force(), &Patch::Apply(cm))
        .await
        .unwrap_or_else(|e| panic!("ConfigMap {name}: {e}"));
}

/// A transport ConfigMap of the release payload ([`payload_configmap`]) with other components, encoded
/// as manifests-gen would (zstd when large), keeping its labels and metadata.
pub fn with_components(file: &str, components: &str) -> Value {
    let cm = payload_configmap(file).expect("fixture present");
    let mut content = capi_manifests::TransportConfigMap::decode(&cm)
        .unwrap()
        .content;
    content.components = components.to_string();
    content.encode().expect("edited ConfigMap encodes")
}

/// The transport ConfigMap `file` with `extra` (YAML documents) after its own components: a provider
/// version with more objects, as a hostile or newer bundle would bring.
pub fn components_plus(file: &str, extra: &str) -> Value {
    let documents = |name: &str, text: &str| {
        capi_manifests::yaml::parse_documents(name, text)
            .unwrap()
            .into_iter()
            .map(|d| d.value)
    };
    let objects: Vec<Value> = documents(file, &fixture_components(file))
        .chain(documents("extra", extra))
        .collect();
    with_components(
        file,
        &capi_manifests::yaml::to_multi_yaml(&objects).unwrap(),
    )
}

/// Replaces a transport ConfigMap's components in place (an edit, as a new release payload would apply
/// it).
pub async fn put_components(client: &Client, file: &str, components: &str) {
    put_configmap(client, &with_components(file, components)).await;
}

/// `root/<provider>-img/capi-operator-manifests/default/{metadata,manifests}.yaml` for each fixture
/// profile of `profiles/` (links to the fixture files), laid out as the reference mounts provider
/// images; `None` when the fixtures are missing outside CI.
pub fn profiles_as_images(root: &std::path::Path, providers: &[&str]) -> Option<PathBuf> {
    let folders: Vec<(&str, String)> = providers
        .iter()
        .map(|p| (*p, format!("{p}-img/capi-operator-manifests/default")))
        .collect();
    lay_out_profiles(root, &folders)
}

/// `root/<folder>/{metadata,manifests}.yaml` linked to the fixture profile of each
/// `(provider, folder)`.
fn lay_out_profiles(root: &std::path::Path, folders: &[(&str, String)]) -> Option<PathBuf> {
    for (p, folder) in folders {
        let fixture = fixture(&format!("profiles/{p}"))?;
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        for file in ["metadata.yaml", "manifests.yaml"] {
            std::os::unix::fs::symlink(fixture.join(file), dir.join(file)).unwrap();
        }
    }
    Some(root.to_path_buf())
}

/// Fixture profiles of `profiles/` in the folders of the image volumes of release images, as the
/// reference mounts them: `(provider, key of [`images`], profile)` lays out
/// `root/<volume>/capi-operator-manifests/<profile>/...`, the volume named as the reference names it
/// (so that the installer knows each profile's image by digest); several profiles may share an image.
/// `None` when the fixtures are missing outside CI.
pub fn profiles_as_volumes(
    root: &std::path::Path,
    profiles: &[(&str, &str, &str)],
) -> Option<PathBuf> {
    let images = images();
    let folders: Vec<(&str, String)> = profiles
        .iter()
        .map(|(p, key, profile)| {
            let volume = capi_installer_controller::source::images::volume_name(&images[*key]);
            (*p, format!("{volume}/capi-operator-manifests/{profile}"))
        })
        .collect();
    lay_out_profiles(root, &folders)
}

/// Release image references, as the images JSON of a release would hold them.
pub fn images() -> BTreeMap<String, String> {
    [
        "cluster-capi-controllers",
        "aws-cluster-api-controllers",
        "gcp-cluster-api-controllers",
        "azure-cluster-api-controllers",
        "vsphere-cluster-api-controllers",
        "ibmcloud-cluster-api-controllers",
        "kube-rbac-proxy",
    ]
    .into_iter()
    .map(|k| {
        (
            k.to_string(),
            format!(
                "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}",
                digest(k)
            ),
        )
    })
    .collect()
}

fn digest(key: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for (i, b) in key.bytes().cycle().take(32).enumerate() {
        let _ = write!(out, "{:02x}", b.wrapping_add(i as u8));
    }
    out
}

/// [`images`] written to `dir/images.json`, for a binary's `--images-json`.
pub fn images_file(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("images.json");
    std::fs::write(&path, serde_json::to_string(&images()).unwrap()).unwrap();
    path
}

/// The API group of the synthetic providers' CRDs ([`Tiny`]): a Cluster API group no real provider uses,
/// so their grants on it are outside the release's RBAC ceiling (the tests' configuration extends it).
pub const TINY_GROUP: &str = "test.cluster.x-k8s.io";

/// A small provider in the shape manifests-gen emits (CRD, ServiceAccount, ClusterRole, Deployment, plus
/// `extra` documents), for tests that need many installs and must stay short.
pub struct Tiny<'a> {
    /// `cluster-api`, `aws`, `gcp`, ...
    pub provider: &'a str,
    pub version: &'a str,
    /// Prefix of its object names, e.g. `capt`.
    pub prefix: &'a str,
    /// A nodeSelector no node matches: its Deployment never becomes Available.
    pub unschedulable: bool,
    /// One more container argument (to change the Deployment).
    pub arg: Option<&'a str>,
    /// Without its CRD / its ClusterRole (a version that dropped them).
    pub crd: bool,
    pub cluster_role: bool,
    /// The container image, default the placeholder manifests-gen writes.
    pub image: &'a str,
    pub extra: Vec<String>,
}

impl<'a> Tiny<'a> {
    pub fn new(provider: &'a str, prefix: &'a str) -> Self {
        Tiny {
            provider,
            version: "v1.0.0",
            prefix,
            unschedulable: false,
            arg: None,
            crd: true,
            cluster_role: true,
            image: "to.be/replaced:v99",
            extra: Vec::new(),
        }
    }

    /// The name of its CRD.
    pub fn crd_name(&self) -> String {
        format!("{}tests.{TINY_GROUP}", self.prefix)
    }

    pub fn provider_type(&self) -> capi_manifests::ProviderType {
        if self.provider == "cluster-api" {
            capi_manifests::ProviderType::Core
        } else {
            capi_manifests::ProviderType::Infrastructure
        }
    }

    pub fn deployment(&self) -> String {
        format!("{}-controller-manager", self.prefix)
    }

    pub fn cluster_role(&self) -> String {
        format!("{}-manager-role", self.prefix)
    }

    pub fn components(&self) -> String {
        let p = self.prefix;
        let kind = format!("{}Test", p[..1].to_uppercase() + &p[1..]);
        let plural = format!("{p}tests");
        let node_selector = if self.unschedulable {
            "\n      nodeSelector: {test.capi-installer/no-such-node: \"true\"}"
        } else {
            ""
        };
        let arg = self.arg.map(|a| format!(", {a}")).unwrap_or_default();
        let image = self.image;
        let mut docs = vec![
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.{TINY_GROUP}\nspec:\n  group: {TINY_GROUP}\n  names: {{kind: {kind}, listKind: {kind}List, plural: {plural}, singular: {p}test}}\n  scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}"
            ),
            format!(
                "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {p}-manager\n  namespace: {NS}"
            ),
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {p}-manager-role\nrules:\n- apiGroups: [{TINY_GROUP}]\n  resources: [{plural}]\n  verbs: [get, list, watch]"
            ),
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {p}-controller-manager\n  namespace: {NS}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {p}}}\n  template:\n    metadata:\n      labels: {{app: {p}}}\n    spec:\n      serviceAccountName: {p}-manager{node_selector}\n      containers:\n      - name: manager\n        image: {image}\n        args: [--leader-elect{arg}]"
            ),
        ];
        if !self.cluster_role {
            docs.remove(2);
        }
        if !self.crd {
            docs.remove(0);
        }
        docs.extend(self.extra.iter().cloned());
        docs.join("\n---\n") + "\n"
    }

    /// The transport ConfigMap, encoded as manifests-gen would, named `configmap`.
    pub fn configmap(&self, configmap: &str) -> Value {
        let provider =
            capi_manifests::Provider::new(self.provider, self.provider_type(), self.version)
                .expect("valid test provider");
        let content = capi_manifests::TransportConfigMap {
            provider,
            metadata: "apiVersion: clusterctl.cluster.x-k8s.io/v3\nkind: Metadata\nreleaseSeries:\n- major: 1\n  minor: 0\n  contract: v1beta1\n".into(),
            components: self.components(),
        };
        let mut cm = content.encode().expect("test ConfigMap encodes");
        cm["metadata"]["name"] = json!(configmap);
        cm
    }

    /// Applies the transport ConfigMap (named after the provider) as the release payload would.
    pub async fn put(&self, client: &Client) {
        put_configmap(client, &self.configmap(self.provider)).await;
    }
}

/// An upgrade of the aws provider, as a new release would ship it: one RoleBinding dropped, `--v=4`
/// added to the Deployment's first container, and (when asked) a new served version `v1beta3` of one
/// CRD (a copy of its storage version's schema, not stored).
pub struct Upgrade {
    pub components: String,
    pub dropped_rolebinding: String,
    pub deployment: String,
    /// The CRD that got the new version, when asked for.
    pub crd: Option<String>,
}

pub fn aws_upgrade(new_crd_version: bool) -> Upgrade {
    let components = fixture_components(AWS_CM);
    let docs: Vec<&str> = components.split("\n---\n").collect();
    let dropped_index = docs
        .iter()
        .position(|d| d.contains("kind: RoleBinding"))
        .expect("aws has a RoleBinding");
    let parse = |doc: &str| {
        capi_manifests::yaml::parse_documents("doc", doc)
            .unwrap()
            .remove(0)
            .value
    };
    let to_yaml = |v: &Value| {
        capi_manifests::yaml::to_yaml("doc", v)
            .unwrap()
            .trim_end()
            .to_string()
    };
    let dropped_rolebinding = parse(docs[dropped_index])["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let (mut deployment, mut crd) = (String::new(), None);
    let mut kept: Vec<String> = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        if i == dropped_index {
            continue;
        }
        if doc.contains("kind: Deployment") {
            let mut v = parse(doc);
            deployment = v["metadata"]["name"].as_str().unwrap().to_string();
            v.pointer_mut("/spec/template/spec/containers/0/args")
                .and_then(Value::as_array_mut)
                .unwrap()
                .push(json!("--v=4"));
            kept.push(to_yaml(&v));
        } else if new_crd_version && crd.is_none() && doc.contains("kind: CustomResourceDefinition")
        {
            let mut v = parse(doc);
            let versions = v
                .pointer_mut("/spec/versions")
                .and_then(Value::as_array_mut)
                .unwrap();
            let mut added = versions
                .iter()
                .find(|v| v["storage"] == true)
                .unwrap()
                .clone();
            added["name"] = json!("v1beta3");
            added["storage"] = json!(false);
            versions.push(added);
            crd = Some(v["metadata"]["name"].as_str().unwrap().to_string());
            kept.push(to_yaml(&v));
        } else {
            kept.push(doc.to_string());
        }
    }
    Upgrade {
        components: kept.join("\n---\n"),
        dropped_rolebinding,
        deployment,
        crd,
    }
}
