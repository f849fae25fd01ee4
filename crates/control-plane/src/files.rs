//! The files a control plane keeps in its folder, and the small helpers its parts share to write
//! them and start processes.

use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::error::{Error, io};

/// The Service addresses; the `kubernetes` Service is the first.
pub(crate) const SERVICE_CIDR: &str = "10.0.0.0/24";

/// Paths of the files a control plane keeps in its folder.
pub(crate) struct Files {
    pub kubeconfig: PathBuf,
    pub ca_cert: PathBuf,
    pub ca_key: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub sa_key: PathBuf,
    pub sa_pub: PathBuf,
    pub admin_cert: PathBuf,
    pub admin_key: PathBuf,
    pub audit_policy: PathBuf,
    pub kwok_config: PathBuf,
}

impl Files {
    pub(crate) fn new(dir: &Path) -> Files {
        let pki = dir.join("pki");
        Files {
            kubeconfig: dir.join("kubeconfig"),
            ca_cert: pki.join("ca.crt"),
            ca_key: pki.join("ca.key"),
            serving_cert: pki.join("apiserver.crt"),
            serving_key: pki.join("apiserver.key"),
            sa_key: pki.join("sa.key"),
            sa_pub: pki.join("sa.pub"),
            admin_cert: pki.join("admin.crt"),
            admin_key: pki.join("admin.key"),
            audit_policy: dir.join("audit-policy.yaml"),
            kwok_config: dir.join("kwok.yaml"),
        }
    }
}

pub(crate) fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

pub(crate) fn ignore_exists<T>(result: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(()),
        Err(e) => Err(e),
    }
}

pub(crate) fn write_kubeconfig(
    path: &Path,
    server: &str,
    ca_pem: &str,
    user: &str,
    credentials: &[(&str, String)],
) -> Result<(), Error> {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let mut text = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: control-plane
  cluster:
    server: {server}
    certificate-authority-data: {ca}
users:
- name: {user:?}
  user:
"
    );
    for (key, value) in credentials {
        text.push_str(&format!("    {key}: {value}\n"));
    }
    text.push_str(&format!(
        "contexts:
- name: control-plane
  context:
    cluster: control-plane
    user: {user:?}
current-context: control-plane
"
    ));
    fs::write(path, text).map_err(io(format!("write {}", path.display())))
}

pub(crate) async fn config_from_kubeconfig(path: &Path) -> Result<kube::Config, Error> {
    let text = fs::read_to_string(path).map_err(io(format!("read {}", path.display())))?;
    let kubeconfig = Kubeconfig::from_yaml(&text).map_err(|source| Error::Kubeconfig {
        path: path.to_path_buf(),
        source,
    })?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|source| Error::Kubeconfig {
            path: path.to_path_buf(),
            source,
        })
}
