//! Startup time of the control plane, measured over several runs (not asserted anywhere).
//!
//! cargo run --release -p control-plane --example startup -- [RUNS] [plain|crds|workloads]
//!
//! `plain`: etcd + kube-apiserver serving (/readyz ok); `crds` (default): plus the OpenShift CRDs
//! Established; `workloads`: plus controller-manager, scheduler, KWOK and the fake node Ready.

use std::time::{Duration, Instant};

use control_plane::{ControlPlane, ControlPlaneOptions, OpenShiftCrds};

#[tokio::main]
async fn main() -> Result<(), control_plane::Error> {
    let mut args = std::env::args().skip(1);
    let runs: usize = args
        .next()
        .map_or(5, |n| n.parse().expect("RUNS is a number"));
    let mode = args.next().unwrap_or_else(|| "crds".into());
    let options = || ControlPlaneOptions {
        dir: None,
        with_workloads: mode == "workloads",
        node: None,
        openshift_crds: match mode.as_str() {
            "plain" => OpenShiftCrds::Skip,
            _ => OpenShiftCrds::Default,
        },
    };
    // Resolve (and if needed build) the binaries outside the measurement.
    control_plane::bin_dir()?;

    let mut starts = Vec::new();
    for run in 1..=runs {
        let start = Instant::now();
        let cp = ControlPlane::start(options()).await?;
        let started = start.elapsed();
        let stop = Instant::now();
        cp.stop();
        let stopped = stop.elapsed();
        println!("run {run}: start {started:.2?}, stop {stopped:.2?}");
        starts.push(started);
    }
    starts.sort();
    let mean = starts.iter().sum::<Duration>() / runs as u32;
    println!(
        "{mode}: {runs} runs, start min {:.2?} median {:.2?} mean {mean:.2?} max {:.2?}",
        starts[0],
        starts[runs / 2],
        starts[runs - 1]
    );
    Ok(())
}
