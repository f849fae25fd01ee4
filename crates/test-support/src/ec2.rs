//! An emulated EC2 on a real node's network (moto, the one stand-in the project allows: for a cloud
//! API), the AWS account OpenShift's installer leaves in it, and what its instances look like. See
//! docs/maintainers/machines.md.
//!
//! Pods cannot reach this process's loopback, so moto runs inside the node's namespaces (network,
//! mount, pid), listening on the node's own address [`control_plane::node::NODE_IP`] at [`PORT`]:
//! the provider managers reach it as they reach the API server, and the node's teardown (its pid 1
//! killed) ends it with everything else of the node. The test process talks to it through
//! `tools/moto/ec2.py` run in the same namespaces. moto itself is installed from PyPI by
//! `tools/moto/build.sh` into a cached venv (`~/.cache/capi-installer/moto/...`; env
//! `CAPI_MOTO_BIN_DIR` names another venv's `bin`).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use control_plane::ControlPlane;
use control_plane::node::NODE_IP;
use serde_json::Value;

/// The emulated EC2's port on the node's address: an AWS endpoint's port, so that a NetworkPolicy
/// allowing the provider managers' egress to a cloud endpoint (443) covers it. Plain HTTP: the AWS
/// SDK takes the endpoint URL it is given, and a certificate the managers trust would need an edit of
/// the release's Deployment.
pub const PORT: u16 = 443;

/// A running emulated EC2 in a node's namespaces.
pub struct Ec2 {
    child: Child,
    venv_bin: PathBuf,
    node_pid: i32,
    log: PathBuf,
    region: String,
}

/// What [`Ec2::seed`] made: the ids the AWS provider will find by name and tag.
#[derive(Clone, Debug)]
pub struct Account {
    pub vpc: String,
    pub dhcp_options: String,
    /// Subnet id by `Name` tag (`<infraID>-subnet-private-<az>`).
    pub subnets: Vec<(String, String)>,
    /// Security group id by `Name` tag (`<infraID>-node`, `-lb`, `-controlplane`).
    pub security_groups: Vec<(String, String)>,
    /// `<infraID>-worker-profile`.
    pub instance_profile: String,
    pub ami: String,
}

impl Account {
    pub fn subnet(&self, name: &str) -> &str {
        lookup(&self.subnets, name, "subnet")
    }

    pub fn security_group(&self, name: &str) -> &str {
        lookup(&self.security_groups, name, "security group")
    }
}

fn lookup<'a>(pairs: &'a [(String, String)], name: &str, what: &str) -> &'a str {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, id)| id.as_str())
        .unwrap_or_else(|| panic!("no {what} named {name} was seeded: {pairs:?}"))
}

/// One instance as `DescribeInstances` and `DescribeInstanceAttribute userData` report it.
#[derive(Clone, Debug)]
pub struct Instance {
    pub id: String,
    /// `pending`, `running`, `shutting-down`, `terminated`, ...
    pub state: String,
    pub zone: String,
    pub image: String,
    pub instance_type: String,
    pub subnet: Option<String>,
    pub security_groups: Vec<String>,
    /// The instance profile's ARN.
    pub instance_profile: Option<String>,
    pub tags: Vec<(String, String)>,
    /// Base64, as EC2 returns it.
    pub user_data: String,
}

impl Instance {
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl Ec2 {
    /// Installs moto when missing (`tools/moto/build.sh`), starts it in the node of `cp` (which must
    /// have one) for `region`, and waits until it answers.
    pub fn start(cp: &ControlPlane, region: &str) -> Ec2 {
        let node_pid = cp.node_pid().expect("the emulated EC2 needs a real node");
        let venv_bin = venv_bin();
        let log = cp.dir().join("logs/moto.log");
        let out =
            std::fs::File::create(&log).unwrap_or_else(|e| panic!("create {}: {e}", log.display()));
        let err = out.try_clone().expect("duplicate the log's descriptor");
        let mut command = Command::new("/usr/bin/nsenter");
        command
            .args(enter(node_pid))
            .arg(venv_bin.join("moto_server"))
            .args(["-H", &NODE_IP.to_string(), "-p", &PORT.to_string()])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            // Its own process group, so that the stop reaches moto too (nsenter forks it into the
            // node's pid namespace); and a test process that dies takes nsenter along.
            .process_group(0);
        // SAFETY: prctl in the child between fork and exec, async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("start moto_server in the node: {e}"));
        let ec2 = Ec2 {
            child,
            venv_bin,
            node_pid,
            log,
            region: region.to_string(),
        };
        ec2.helper(&["wait", "--timeout", "120"]);
        ec2
    }

    /// The endpoint URL as pods and the provider managers use it.
    pub fn endpoint(&self) -> String {
        format!("http://{NODE_IP}:{PORT}")
    }

    /// A shared credentials file as the cloud-credential operator writes it for the AWS provider
    /// (Secret `capa-manager-bootstrap-credentials`, key `credentials`), its profile pointing the AWS
    /// SDK at this endpoint (`endpoint_url`, which aws-sdk-go-v2 reads from the shared files).
    pub fn credentials_file(&self, access_key_id: &str, secret_access_key: &str) -> String {
        format!(
            "[default]\naws_access_key_id = {access_key_id}\naws_secret_access_key = {secret_access_key}\nendpoint_url = {}\n",
            self.endpoint()
        )
    }

    /// The AWS account OpenShift's installer leaves for cluster `infra_id`: see `tools/moto/ec2.py`.
    pub fn seed(&self, infra_id: &str, zones: &[&str]) -> Account {
        let v = self.helper(&["seed", "--infra-id", infra_id, "--zones", &zones.join(",")]);
        let pairs = |v: &Value| -> Vec<(String, String)> {
            v.as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        };
        let s = |key: &str| v[key].as_str().unwrap_or_default().to_string();
        Account {
            vpc: s("vpc"),
            dhcp_options: s("dhcp_options"),
            subnets: pairs(&v["subnets"]),
            security_groups: pairs(&v["security_groups"]),
            instance_profile: s("instance_profile"),
            ami: s("ami"),
        }
    }

    /// Every instance the emulated EC2 knows, terminated ones included.
    pub fn instances(&self) -> Vec<Instance> {
        let v = self.helper(&["instances"]);
        let s = |v: &Value| v.as_str().map(str::to_string);
        v.as_array()
            .into_iter()
            .flatten()
            .map(|i| Instance {
                id: s(&i["id"]).unwrap_or_default(),
                state: s(&i["state"]).unwrap_or_default(),
                zone: s(&i["zone"]).unwrap_or_default(),
                image: s(&i["image"]).unwrap_or_default(),
                instance_type: s(&i["type"]).unwrap_or_default(),
                subnet: s(&i["subnet"]),
                security_groups: i["security_groups"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(s)
                    .collect(),
                instance_profile: s(&i["instance_profile"]),
                tags: i["tags"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect(),
                user_data: s(&i["user_data"]).unwrap_or_default(),
            })
            .collect()
    }

    /// The emulated EC2's log (its requests, one line each).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `tools/moto/ec2.py <args>` in the node's namespaces; its JSON answer.
    fn helper(&self, args: &[&str]) -> Value {
        let output = Command::new("/usr/bin/nsenter")
            .args(enter(self.node_pid))
            .arg(self.venv_bin.join("python"))
            .arg(tools_dir().join("ec2.py"))
            .args(args)
            .args(["--endpoint", &self.endpoint(), "--region", &self.region])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run tools/moto/ec2.py: {e}"));
        if !output.status.success() {
            panic!(
                "tools/moto/ec2.py {args:?}: {}\n{}\nmoto's log:\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr),
                crate::last_lines(&self.log(), 40)
            );
        }
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "tools/moto/ec2.py {args:?} printed no JSON ({e}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    }
}

impl Drop for Ec2 {
    fn drop(&mut self) {
        // SAFETY: kill(2) of the process group we made for nsenter and its child.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// nsenter's arguments into the node's network, mount and pid namespaces.
fn enter(node_pid: i32) -> Vec<String> {
    vec![
        format!("--target={node_pid}"),
        "--net".into(),
        "--mount".into(),
        "--pid".into(),
        "--".into(),
    ]
}

fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/moto")
}

/// The venv's `bin`: env `CAPI_MOTO_BIN_DIR`, else what `tools/moto/build.sh` prints (it installs
/// moto on first use, a minute or two, and is a quick lookup afterwards).
fn venv_bin() -> PathBuf {
    if let Some(dir) = std::env::var_os("CAPI_MOTO_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let script = tools_dir().join("build.sh");
    let output = Command::new(&script)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    assert!(
        output.status.success(),
        "{} failed ({})",
        script.display(),
        output.status
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let dir = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_else(|| panic!("{} printed no folder", script.display()));
    PathBuf::from(dir.trim())
}
