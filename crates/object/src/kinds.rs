//! The one table of well-known kinds and their scope.
//!
//! Two readers need it: the build-time namespace rewrite (`capi-manifests`: a namespace on a
//! cluster-scoped object is rejected by server-side apply), and planning without a cluster
//! (`capi-apply`'s `KindResolver::builtin`, used by `capi-installer render` and tests). They used to keep
//! one table each, and the tables disagreed (e.g. on `MutatingAdmissionPolicy` and `RuntimeClass`).

/// Where a kind comes from, which decides whether planning without a cluster may assume it is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindOrigin {
    /// Served by every kube-apiserver the project targets (GA, enabled by default).
    Kubernetes,
    /// A Kubernetes kind behind a feature gate or a beta API that is off by default: its scope is known,
    /// but it may not be served.
    KubernetesOptional,
    /// Served on OpenShift only.
    OpenShift,
    /// Defined by cert-manager's CRDs.
    CertManager,
}

/// A kind with the resource that serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    pub origin: KindOrigin,
}

const fn k(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    origin: KindOrigin,
) -> KnownKind {
    KnownKind {
        group,
        version,
        kind,
        plural,
        namespaced,
        origin,
    }
}

use KindOrigin::{CertManager, Kubernetes, KubernetesOptional, OpenShift};

const NS: bool = true;
const CLUSTER: bool = false;

/// Kinds a provider could plausibly ship, or that the namespace rewrite must recognise as
/// cluster-scoped. Anything else must come with its CRD.
pub const KNOWN_KINDS: &[KnownKind] = &[
    k("", "v1", "Namespace", "namespaces", CLUSTER, Kubernetes),
    k(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        NS,
        Kubernetes,
    ),
    k("", "v1", "ConfigMap", "configmaps", NS, Kubernetes),
    k("", "v1", "Secret", "secrets", NS, Kubernetes),
    k("", "v1", "Service", "services", NS, Kubernetes),
    k("", "v1", "Endpoints", "endpoints", NS, Kubernetes),
    k(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        NS,
        Kubernetes,
    ),
    k("", "v1", "LimitRange", "limitranges", NS, Kubernetes),
    k("", "v1", "ResourceQuota", "resourcequotas", NS, Kubernetes),
    k("", "v1", "Pod", "pods", NS, Kubernetes),
    k("", "v1", "Node", "nodes", CLUSTER, Kubernetes),
    k(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "",
        "v1",
        "ComponentStatus",
        "componentstatuses",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        NS,
        Kubernetes,
    ),
    k(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        NS,
        Kubernetes,
    ),
    k(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        CLUSTER,
        Kubernetes,
    ),
    k("apps", "v1", "Deployment", "deployments", NS, Kubernetes),
    k("apps", "v1", "StatefulSet", "statefulsets", NS, Kubernetes),
    k("apps", "v1", "DaemonSet", "daemonsets", NS, Kubernetes),
    k("batch", "v1", "Job", "jobs", NS, Kubernetes),
    k("batch", "v1", "CronJob", "cronjobs", NS, Kubernetes),
    k(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "admissionregistration.k8s.io",
        "v1beta1",
        "MutatingAdmissionPolicy",
        "mutatingadmissionpolicies",
        CLUSTER,
        KubernetesOptional,
    ),
    k(
        "admissionregistration.k8s.io",
        "v1beta1",
        "MutatingAdmissionPolicyBinding",
        "mutatingadmissionpolicybindings",
        CLUSTER,
        KubernetesOptional,
    ),
    k(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        NS,
        Kubernetes,
    ),
    k(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        NS,
        Kubernetes,
    ),
    k(
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        NS,
        Kubernetes,
    ),
    k(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "networking.k8s.io",
        "v1",
        "IPAddress",
        "ipaddresses",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "networking.k8s.io",
        "v1",
        "ServiceCIDR",
        "servicecidrs",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        NS,
        Kubernetes,
    ),
    k(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        NS,
        Kubernetes,
    ),
    k(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        "csidrivers",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "storage.k8s.io",
        "v1",
        "CSINode",
        "csinodes",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "node.k8s.io",
        "v1",
        "RuntimeClass",
        "runtimeclasses",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "certificates.k8s.io",
        "v1beta1",
        "ClusterTrustBundle",
        "clustertrustbundles",
        CLUSTER,
        KubernetesOptional,
    ),
    k(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "FlowSchema",
        "flowschemas",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
        CLUSTER,
        Kubernetes,
    ),
    k(
        "cert-manager.io",
        "v1",
        "ClusterIssuer",
        "clusterissuers",
        CLUSTER,
        CertManager,
    ),
    k(
        "security.openshift.io",
        "v1",
        "SecurityContextConstraints",
        "securitycontextconstraints",
        CLUSTER,
        OpenShift,
    ),
];

/// Groups whose every kind is cluster-scoped (OpenShift's cluster configuration: `Infrastructure`,
/// `ClusterOperator`, `Proxy`, ...), so the table need not list each.
pub(crate) const CLUSTER_SCOPED_GROUPS: &[&str] = &["config.openshift.io"];

/// The table entry of `group`/`kind`, any version.
pub fn known(group: &str, kind: &str) -> Option<&'static KnownKind> {
    KNOWN_KINDS
        .iter()
        .find(|k| k.group == group && k.kind == kind)
}

/// Whether a kind is known to be cluster-scoped. Custom kinds not known here count as namespaced, as
/// clusterctl assumes; a caller that has the defining CRD should ask it instead.
pub fn is_cluster_scoped(group: &str, kind: &str) -> bool {
    CLUSTER_SCOPED_GROUPS.contains(&group) || known(group, kind).is_some_and(|k| !k.namespaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_table() {
        for (group, kind) in [
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            (
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicyBinding",
            ),
            ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
            ("", "Namespace"),
            ("node.k8s.io", "RuntimeClass"),
            ("config.openshift.io", "Infrastructure"),
            ("cert-manager.io", "ClusterIssuer"),
        ] {
            assert!(is_cluster_scoped(group, kind), "{group}/{kind}");
        }
        for (group, kind) in [
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("", "Service"),
            ("infrastructure.cluster.x-k8s.io", "AWSCluster"),
        ] {
            assert!(!is_cluster_scoped(group, kind), "{group}/{kind}");
        }
    }

    #[test]
    fn each_kind_is_listed_once() {
        let mut seen = std::collections::BTreeSet::new();
        for k in KNOWN_KINDS {
            assert!(
                seen.insert((k.group, k.kind)),
                "{}/{} twice",
                k.group,
                k.kind
            );
        }
    }
}
