//! The shape of each kind a provider bundle may contain, read from the Kubernetes types of
//! `k8s-openapi` (the API's own OpenAPI definitions, generated): which fields a struct has, which
//! fields are lists, which are maps with free keys (labels, `data`, selectors), which are opaque
//! (a CRD's `openAPIV3Schema`, raw JSON). The field bound ([`super::fields`]) uses it to write a
//! path with map keys collapsed (`metadata.labels.*`), and its property test to list every field a
//! kind has.
//!
//! There is no schema object in the types, so the shape is probed: a deserializer that answers every
//! request of a type's `Deserialize` with a placeholder records the field names the type asks for
//! (`deserialize_struct` names them all), the lists and maps, and recurses into each field's type.
//! Recursive types are cut at [`MAX_DEPTH`]; JSON schemas and raw JSON are opaque.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// How deep the probe follows nested fields (a Deployment's deepest real field is 9 levels down:
/// `spec.template.spec.containers[].env[].valueFrom.secretKeyRef.name` and its siblings).
pub const MAX_DEPTH: usize = 14;

/// The shape of one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A string, number, boolean (or a string-or-integer, a quantity, a time).
    Scalar,
    /// An object with named fields.
    Struct(BTreeMap<&'static str, Node>),
    /// A list of one shape.
    List(Box<Node>),
    /// A map with free keys (labels, `data`, a selector).
    Map(Box<Node>),
    /// Anything: raw JSON, a JSON schema, or a field below [`MAX_DEPTH`].
    Opaque,
}

impl Node {
    /// The shape of field `name` of a struct; `None` when the struct has no such field (or this is
    /// no struct).
    pub fn field(&self, name: &str) -> Option<&Node> {
        match self {
            Node::Struct(fields) => fields.get(name),
            _ => None,
        }
    }

    /// Every path of this shape down to `depth` levels, as the field bound writes them (lists `[]`,
    /// map keys `*`), each with its shape.
    pub fn paths(&self, depth: usize) -> Vec<(String, &Node)> {
        let mut out = Vec::new();
        self.walk(String::new(), depth, &mut out);
        out
    }

    fn walk<'a>(&'a self, at: String, depth: usize, out: &mut Vec<(String, &'a Node)>) {
        if !at.is_empty() {
            out.push((at.clone(), self));
        }
        if depth == 0 {
            return;
        }
        match self {
            Node::Struct(fields) => {
                for (name, node) in fields {
                    node.walk(join(&at, name), depth - 1, out);
                }
            }
            Node::List(item) => item.walk(format!("{at}[]"), depth, out),
            Node::Map(value) => value.walk(join(&at, "*"), depth - 1, out),
            Node::Scalar | Node::Opaque => {}
        }
    }
}

/// `a.b`, or `b` at the top.
pub fn join(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_string()
    } else {
        format!("{at}.{name}")
    }
}

/// The shape of a kind a bundle may contain, by API group and kind; `None` for any other kind.
pub fn of_kind(group: &str, kind: &str) -> Option<&'static Node> {
    use k8s_openapi::api::admissionregistration::v1 as adm;
    use k8s_openapi::api::apps::v1 as apps;
    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::api::rbac::v1 as rbac;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ext;
    static SHAPES: OnceLock<Vec<((&'static str, &'static str), Node)>> = OnceLock::new();
    let shapes = SHAPES.get_or_init(|| {
        Vec::from([
            (("apps", "Deployment"), probe::<apps::Deployment>()),
            (("", "Service"), probe::<core::Service>()),
            (("", "ServiceAccount"), probe::<core::ServiceAccount>()),
            (("", "ConfigMap"), probe::<core::ConfigMap>()),
            (
                ("rbac.authorization.k8s.io", "ClusterRole"),
                probe::<rbac::ClusterRole>(),
            ),
            (("rbac.authorization.k8s.io", "Role"), probe::<rbac::Role>()),
            (
                ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
                probe::<rbac::ClusterRoleBinding>(),
            ),
            (
                ("rbac.authorization.k8s.io", "RoleBinding"),
                probe::<rbac::RoleBinding>(),
            ),
            (
                ("apiextensions.k8s.io", "CustomResourceDefinition"),
                probe::<ext::CustomResourceDefinition>(),
            ),
            (
                (
                    "admissionregistration.k8s.io",
                    "MutatingWebhookConfiguration",
                ),
                probe::<adm::MutatingWebhookConfiguration>(),
            ),
            (
                (
                    "admissionregistration.k8s.io",
                    "ValidatingWebhookConfiguration",
                ),
                probe::<adm::ValidatingWebhookConfiguration>(),
            ),
            (
                ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
                probe::<adm::ValidatingAdmissionPolicy>(),
            ),
            (
                (
                    "admissionregistration.k8s.io",
                    "ValidatingAdmissionPolicyBinding",
                ),
                probe::<adm::ValidatingAdmissionPolicyBinding>(),
            ),
        ])
    });
    shapes
        .iter()
        .find(|((g, k), _)| *g == group && *k == kind)
        .map(|(_, node)| node)
}

/// The shape of `T`, probed through its `Deserialize`.
pub fn probe<T: de::DeserializeOwned>() -> Node {
    let mut node = Node::Opaque;
    // The placeholders may not satisfy every type (the probe only needs the requests, not a value).
    let _ = T::deserialize(Probe {
        slot: Some(&mut node),
        depth: 0,
    });
    node
}

/// Types whose content is data, not fields: a JSON schema (its `properties` are the CRD's, not the
/// API's) and raw JSON.
const OPAQUE_TYPES: [&str; 3] = ["JSONSchemaProps", "JSON", "RawExtension"];

/// A timestamp every time type accepts.
const TIME: &str = "1970-01-01T00:00:00Z";

#[derive(Debug)]
struct ProbeError(String);

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProbeError {}

impl de::Error for ProbeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ProbeError(msg.to_string())
    }
}

/// Answers one value's requests; records its shape into `slot`. Without a slot (below an opaque
/// type or the depth limit) it answers with the emptiest value: no option, no item, no entry, so
/// that recursive types end.
struct Probe<'a> {
    slot: Option<&'a mut Node>,
    depth: usize,
}

impl Probe<'_> {
    fn set(&mut self, node: Node) {
        if let Some(slot) = self.slot.as_deref_mut() {
            *slot = node;
        }
    }
}

macro_rules! scalar {
    ($de:lifetime; $($method:ident => $visit:ident($($value:expr)?)),* $(,)?) => {$(
        fn $method<V: Visitor<$de>>(mut self, visitor: V) -> Result<V::Value, ProbeError> {
            self.set(Node::Scalar);
            visitor.$visit($($value)?)
        }
    )*};
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = ProbeError;

    scalar! {
        'de;
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i8(0),
        deserialize_i16 => visit_i16(0),
        deserialize_i32 => visit_i32(0),
        deserialize_i64 => visit_i64(0),
        deserialize_u8 => visit_u8(0),
        deserialize_u16 => visit_u16(0),
        deserialize_u32 => visit_u32(0),
        deserialize_u64 => visit_u64(0),
        deserialize_f32 => visit_f32(0.0),
        deserialize_f64 => visit_f64(0.0),
        deserialize_char => visit_char('a'),
        // A string-or-integer and a quantity take a string; so does raw JSON (opaque anyway).
        deserialize_any => visit_str("0"),
        deserialize_str => visit_str(""),
        deserialize_string => visit_str(""),
        deserialize_identifier => visit_str(""),
        deserialize_bytes => visit_bytes(b""),
        deserialize_byte_buf => visit_bytes(b""),
        deserialize_unit => visit_unit(),
        deserialize_ignored_any => visit_unit(),
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        if self.slot.is_none() {
            return visitor.visit_none();
        }
        visitor.visit_some(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        match name {
            "Time" | "MicroTime" => {
                self.set(Node::Scalar);
                visitor.visit_newtype_struct(de::value::StrDeserializer::<ProbeError>::new(TIME))
            }
            _ if OPAQUE_TYPES.contains(&name) => {
                self.set(Node::Opaque);
                visitor.visit_newtype_struct(Probe {
                    slot: None,
                    depth: self.depth,
                })
            }
            _ => visitor.visit_newtype_struct(self),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, ProbeError> {
        if self.slot.is_none() {
            return visitor.visit_seq(Items(None));
        }
        let mut item = Node::Opaque;
        let value = visitor.visit_seq(Items(Some(Probe {
            slot: Some(&mut item),
            depth: self.depth,
        })));
        self.set(Node::List(Box::new(item)));
        value
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, ProbeError> {
        if self.slot.is_none() {
            return visitor.visit_map(Entries::empty());
        }
        let mut value_shape = Node::Opaque;
        let value = visitor.visit_map(Entries {
            keys: vec![Key::Free],
            value: Some(ValueProbe::Map(&mut value_shape, self.depth + 1)),
        });
        self.set(Node::Map(Box::new(value_shape)));
        value
    }

    fn deserialize_struct<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        let opaque = OPAQUE_TYPES.contains(&name) || self.depth > MAX_DEPTH;
        // `apiVersion` and `kind` last: a resource refuses the placeholder values there, which ends
        // the probe of this type; every other field has been probed by then.
        let keys = || {
            let (identity, mut rest): (Vec<&'static str>, Vec<&'static str>) = fields
                .iter()
                .partition(|f| matches!(**f, "apiVersion" | "kind"));
            rest.extend(identity);
            rest.into_iter().map(Key::Field).collect::<Vec<_>>()
        };
        if self.slot.is_none() || opaque {
            self.set(Node::Opaque);
            // Every field, each as empty as it gets: required fields are there, optional ones absent.
            return visitor.visit_map(Entries {
                keys: keys(),
                value: Some(ValueProbe::Empty),
            });
        }
        let mut shapes: BTreeMap<&'static str, Node> =
            fields.iter().map(|f| (*f, Node::Opaque)).collect();
        let value = visitor.visit_map(Entries {
            keys: keys(),
            value: Some(ValueProbe::Fields(&mut shapes, self.depth + 1)),
        });
        self.set(Node::Struct(shapes));
        value
    }

    fn deserialize_enum<V: Visitor<'de>>(
        mut self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, ProbeError> {
        // The Kubernetes types have no Rust enums (their enumerations are strings).
        self.set(Node::Opaque);
        Err(ProbeError("enum".into()))
    }
}

/// A list of one item (probed), or none.
struct Items<'a>(Option<Probe<'a>>);

impl<'de> SeqAccess<'de> for Items<'_> {
    type Error = ProbeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ProbeError> {
        match self.0.take() {
            Some(probe) => seed.deserialize(probe).map(Some),
            None => Ok(None),
        }
    }
}

enum Key {
    Field(&'static str),
    /// One entry of a map, under a key the value's type does not constrain.
    Free,
}

/// Where the probes of the entries' values record their shapes.
enum ValueProbe<'a> {
    Fields(&'a mut BTreeMap<&'static str, Node>, usize),
    Map(&'a mut Node, usize),
    Empty,
}

struct Entries<'a> {
    keys: Vec<Key>,
    value: Option<ValueProbe<'a>>,
}

impl Entries<'_> {
    fn empty() -> Self {
        Entries {
            keys: Vec::new(),
            value: None,
        }
    }
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = ProbeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProbeError> {
        if self.keys.is_empty() {
            return Ok(None);
        }
        // Keys in order: the value probe reads the key of the entry it is at.
        let key = match self.keys[0] {
            Key::Field(f) => f,
            Key::Free => "key",
        };
        seed.deserialize(de::value::StrDeserializer::<ProbeError>::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ProbeError> {
        let key = self.keys.remove(0);
        match (self.value.as_mut(), key) {
            (Some(ValueProbe::Fields(shapes, depth)), Key::Field(f)) => {
                let depth = *depth;
                seed.deserialize(Probe {
                    slot: shapes.get_mut(f),
                    depth,
                })
            }
            (Some(ValueProbe::Map(shape, depth)), _) => {
                let depth = *depth;
                seed.deserialize(Probe {
                    slot: Some(&mut **shape),
                    depth,
                })
            }
            _ => seed.deserialize(Probe {
                slot: None,
                depth: MAX_DEPTH + 1,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_has_its_fields_lists_and_maps() {
        let d = of_kind("apps", "Deployment").unwrap();
        let pod = d
            .field("spec")
            .and_then(|s| s.field("template"))
            .and_then(|t| t.field("spec"))
            .unwrap();
        let Some(Node::List(container)) = pod.field("containers") else {
            panic!("containers is a list: {:?}", pod.field("containers"));
        };
        let sc = container.field("securityContext").unwrap();
        for f in ["runAsUser", "privileged", "allowPrivilegeEscalation"] {
            assert_eq!(sc.field(f), Some(&Node::Scalar), "{f}");
        }
        assert!(sc.field("seccompProfile").unwrap().field("type").is_some());
        assert!(matches!(pod.field("nodeSelector"), Some(Node::Map(_))));
        assert!(matches!(
            d.field("metadata").unwrap().field("labels"),
            Some(Node::Map(v)) if **v == Node::Scalar
        ));
        // A time, a quantity, a string-or-integer.
        assert_eq!(
            d.field("metadata").unwrap().field("creationTimestamp"),
            Some(&Node::Scalar)
        );
        let paths: Vec<String> = d.paths(MAX_DEPTH).into_iter().map(|(p, _)| p).collect();
        for p in [
            "spec.replicas",
            "spec.template.spec.volumes[].hostPath.path",
            "spec.template.spec.containers[].ports[].hostPort",
            "spec.template.spec.containers[].resources.limits.*",
            "spec.template.spec.containers[].livenessProbe.httpGet.port",
            "spec.template.spec.securityContext.appArmorProfile.type",
            "spec.template.spec.securityContext.seLinuxOptions.type",
            "spec.template.spec.priorityClassName",
            "metadata.labels.*",
        ] {
            assert!(
                paths.iter().any(|q| q == p),
                "{p} not among {} paths",
                paths.len()
            );
        }
    }

    #[test]
    fn a_crd_schema_is_opaque_and_every_bundle_kind_has_a_shape() {
        let crd = of_kind("apiextensions.k8s.io", "CustomResourceDefinition").unwrap();
        let version = match crd.field("spec").and_then(|s| s.field("versions")) {
            Some(Node::List(v)) => v,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            version
                .field("schema")
                .and_then(|s| s.field("openAPIV3Schema")),
            Some(&Node::Opaque)
        );
        let hook = of_kind(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        )
        .unwrap()
        .paths(MAX_DEPTH);
        assert!(
            hook.iter()
                .any(|(p, _)| p == "webhooks[].clientConfig.caBundle")
        );
        assert!(
            hook.iter()
                .any(|(p, _)| p == "webhooks[].clientConfig.service.port")
        );
        for (g, k) in [
            ("", "Service"),
            ("", "ServiceAccount"),
            ("", "ConfigMap"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
            (
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicyBinding",
            ),
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration",
            ),
        ] {
            assert!(
                matches!(of_kind(g, k), Some(Node::Struct(f)) if f.contains_key("metadata")),
                "{g}/{k}"
            );
        }
    }
}
