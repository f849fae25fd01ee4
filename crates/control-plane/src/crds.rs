//! CustomResourceDefinitions from a folder of YAML files (the OpenShift API module's, or a folder given).

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::future::try_join_all;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};

use crate::error::{Error, io, kube as kube_err};

pub(crate) const FIELD_MANAGER: &str = "control-plane";

/// Every CRD of every `*.yaml`/`*.yml` file in `dir`, in file name order.
pub(crate) fn read_dir(dir: &Path) -> Result<Vec<CustomResourceDefinition>, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(format!("read CRD folder {}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for file in files {
        crds.extend(read_file(&file)?);
    }
    Ok(crds)
}

fn read_file(file: &Path) -> Result<Vec<CustomResourceDefinition>, Error> {
    let text = std::fs::read_to_string(file).map_err(io(format!("read {}", file.display())))?;
    let manifest_err = |index: usize, message: String| Error::Manifest {
        file: file.to_path_buf(),
        index,
        message,
    };
    let docs: Vec<Option<serde_json::Value>> =
        serde_saphyr::from_multiple(&text).map_err(|e| manifest_err(0, e.to_string()))?;
    let mut crds = Vec::new();
    for (index, doc) in docs.into_iter().enumerate() {
        let Some(doc) = doc.filter(|d| !d.is_null()) else {
            continue;
        };
        let mut crd: CustomResourceDefinition = serde_json::from_value(doc)
            .map_err(|e| manifest_err(index, format!("not a v1 CustomResourceDefinition: {e}")))?;
        // Generated CRD files carry a placeholder status; the API server owns it.
        crd.status = None;
        crds.push(crd);
    }
    Ok(crds)
}

/// Server-side applies the CRDs and waits until every one is Established.
pub(crate) async fn apply_and_wait(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    timeout: Duration,
) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    try_join_all(crds.iter().map(|crd| {
        let api = api.clone();
        let params = params.clone();
        async move {
            let name = crd.metadata.name.clone().unwrap_or_default();
            api.patch(&name, &params, &Patch::Apply(crd))
                .await
                .map_err(kube_err(format!("apply CustomResourceDefinition {name}")))?;
            let established = await_condition(api, &name, conditions::is_crd_established());
            match tokio::time::timeout(timeout, established).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(Error::Other {
                    context: format!("watch CustomResourceDefinition {name}"),
                    message: e.to_string(),
                }),
                Err(_) => Err(Error::Timeout {
                    what: format!("CustomResourceDefinition {name} to be Established"),
                    seconds: timeout.as_secs(),
                    log: None,
                    tail: String::new(),
                }),
            }
        }
    }))
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_multi_document_files_and_drops_the_status() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.yaml"),
            "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object}}
status:
  acceptedNames: {kind: '', plural: ''}
  conditions: null
  storedVersions: null
---
",
        )
        .unwrap();
        std::fs::write(dir.path().join("b.txt"), "not yaml: [").unwrap();
        let crds = read_dir(dir.path()).unwrap();
        assert_eq!(crds.len(), 1);
        assert_eq!(
            crds[0].metadata.name.as_deref(),
            Some("widgets.example.com")
        );
        assert!(crds[0].status.is_none());
    }

    #[test]
    fn names_file_and_document_of_a_non_crd() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.yaml");
        std::fs::write(
            &file,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
        )
        .unwrap();
        let err = read_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("x.yaml document 0"), "{err}");
    }
}
