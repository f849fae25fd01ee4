use serde_json::json;

use super::*;
use capi_bundle::source::ProfileRef;

const T0: &str = "2026-11-30T18:00:00Z";
const T1: &str = "2026-11-30T18:05:00Z";

fn log_with(digests: &[&str]) -> RevisionLog {
    let mut log = RevisionLog::new("ConfigMap aws", "aws");
    for d in digests {
        let n = log.begin(d, Some("v1"), T0);
        log.rolled_out(n, T0);
    }
    log
}

#[test]
fn an_upgrade_becomes_current_only_once_rolled_out() {
    let mut log = log_with(&["a"]);
    assert_eq!(
        log.begin("a", Some("v1"), T1),
        1,
        "same content, same revision"
    );
    let n = log.begin("b", Some("v2"), T1);
    assert_eq!(n, 2);
    assert_eq!(log.current, Some(1), "not rolled out yet");
    assert_eq!(log.get(2).unwrap().outcome, RevisionOutcome::Progressing);
    log.rolled_out(2, T1);
    assert_eq!(log.current, Some(2));
    let r = log.get(2).unwrap();
    assert_eq!(
        (r.outcome, r.rolled_out_at.as_deref()),
        (RevisionOutcome::RolledOut, Some(T1))
    );
}

#[test]
fn a_failed_upgrade_holds_the_last_good_revision_until_the_content_changes() {
    let mut log = log_with(&["a"]);
    let n = log.begin("b", Some("v2"), T1);
    let hold = log.failed(n, "Deployment d not Available", T1).unwrap();
    assert_eq!(
        hold,
        Hold {
            digest: "b".into(),
            serving: 1,
            failed: Some(2),
            since: T1.into()
        }
    );
    assert_eq!(log.get(2).unwrap().outcome, RevisionOutcome::Failed);
    assert_eq!(log.choose("b", None), Ok(Choice::Serve(hold.clone())));
    log.served(&hold);
    assert_eq!(log.current, Some(1));
    // Changed content is tried: a new revision, and the hold ends.
    assert_eq!(log.choose("c", None), Ok(Choice::Source));
    assert_eq!(log.begin("c", Some("v3"), T1), 3);
    assert_eq!(log.hold, None);
}

#[test]
fn a_first_install_has_nothing_to_roll_back_to() {
    let mut log = RevisionLog::new("ConfigMap aws", "aws");
    let n = log.begin("a", None, T0);
    assert_eq!(log.failed(n, "not Available", T1), None);
    assert_eq!(log.get(1).unwrap().outcome, RevisionOutcome::Progressing);
    assert_eq!(log.choose("a", None), Ok(Choice::Source));
}

#[test]
fn a_rollback_by_hand_serves_while_the_content_it_was_asked_for_stays() {
    let mut log = log_with(&["a", "b"]);
    let request = RollbackRequest {
        to: 1,
        from: "b".into(),
        requested_at: T1.into(),
    };
    let Ok(Choice::Serve(hold)) = log.choose("b", Some(&request)) else {
        panic!("a valid request is served");
    };
    assert_eq!((hold.serving, hold.failed), (1, None));
    log.served(&hold);
    assert_eq!(log.choose("b", Some(&request)), Ok(Choice::Serve(hold)));
    assert_eq!(
        log.choose("c", Some(&request)),
        Ok(Choice::Source),
        "new content ends it"
    );
    let unknown = RollbackRequest {
        to: 7,
        ..request.clone()
    };
    assert_eq!(
        log.choose("b", Some(&unknown)).unwrap_err().to_string(),
        "ConfigMap aws: no revision 7 (known: 1, 2)"
    );
    let mut evicted = log_with(&["a", "b"]);
    evicted.revisions[0].content = false;
    assert_eq!(
        evicted.choose("b", Some(&request)).unwrap_err().to_string(),
        "ConfigMap aws: the content of revision 1 is no longer kept; only the last revisions' content is"
    );
}

#[test]
fn records_are_bounded_and_the_current_one_is_never_dropped() {
    let mut log = log_with(&["first"]);
    for i in 0..MAX_RECORDS + 5 {
        log.begin(&format!("d{i}"), None, T1);
    }
    assert_eq!(log.revisions.len(), MAX_RECORDS);
    assert_eq!(log.revisions[0].revision, 1, "the current one stays");
    assert_eq!(log.newest().unwrap().revision, MAX_RECORDS as u32 + 6);
}

#[test]
fn content_is_kept_for_the_current_and_the_newest_revisions_within_the_budget() {
    let mut log = log_with(&["a", "b", "c"]);
    log.current = Some(1);
    for d in ["d", "e"] {
        log.begin(d, None, T1);
    }
    let sizes: BTreeMap<u32, usize> = (1..=5).map(|n| (n, 100)).collect();
    let pick = |kept, budget| {
        select_contents(&log, &sizes, kept, budget)
            .into_iter()
            .collect::<Vec<_>>()
    };
    assert_eq!(pick(3, 10_000), [1, 3, 4, 5]);
    assert_eq!(pick(3, 250), [1, 5], "the budget ends it");
    assert_eq!(pick(0, 10_000), [1]);
    let mut uneven = sizes.clone();
    uneven.insert(5, 1_000);
    assert_eq!(
        select_contents(&log, &uneven, 3, 400)
            .into_iter()
            .collect::<Vec<_>>(),
        [1, 3, 4],
        "a revision too large is skipped, older ones still fit"
    );
}

#[test]
fn the_stored_form_round_trips_and_stays_under_the_configmap_limit() {
    let mut log = log_with(&["a", "b"]);
    log.begin("c", Some("v3"), T1);
    // Incompressible contents of 400 KB each: three do not fit in 1 MiB.
    let noise = |seed: u8| -> Vec<u8> {
        let mut x = seed as u32 | 1;
        (0..400_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    };
    let mut stored = Stored {
        log,
        contents: [(1, noise(1)), (2, noise(2)), (3, noise(3))].into(),
        request: None,
    };
    let (data, binary) = stored.encode(DEFAULT_KEPT);
    let total: usize = data.values().map(String::len).sum::<usize>()
        + binary.values().map(Vec::len).sum::<usize>();
    assert!(total <= CONFIGMAP_LIMIT, "{total}");
    assert_eq!(
        binary.keys().collect::<Vec<_>>(),
        ["revision-2", "revision-3"],
        "current (2) and the newest fit"
    );
    let flags: Vec<bool> = stored.log.revisions.iter().map(|r| r.content).collect();
    assert_eq!(flags, [false, true, true]);
    let mut data = data;
    data.insert(
        KEY_ROLLBACK.into(),
        json!({"to": 2, "from": "c", "requestedAt": T1}).to_string(),
    );
    let back = Stored::decode("capi-installer-revisions-aws", &data, &binary).unwrap();
    assert_eq!(back.log, stored.log);
    assert_eq!(back.contents, stored.contents);
    assert_eq!(back.request.map(|r| r.to), Some(2));

    data.insert(KEY_LOG.into(), "{not json".into());
    let err = Stored::decode("capi-installer-revisions-aws", &data, &binary).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("ConfigMap capi-installer-revisions-aws, revisions: "),
        "{err}"
    );
}

#[test]
fn content_compresses_and_reads_back_within_a_budget() {
    let objects = vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "a", "namespace": "ns"}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}, "spec": {"replicas": 1}}),
    ];
    let bytes = compress(&objects);
    assert_eq!(decompress("revision 1", &bytes).unwrap(), objects);
    let err = decompress("revision 1", b"not zstd").unwrap_err();
    assert!(err.contains("zstd"), "{err}");
}

#[test]
fn configmap_names_are_dns_subdomains_and_distinct() {
    assert_eq!(
        configmap_name(&SourceId::ConfigMap("aws".into())),
        "capi-installer-revisions-aws"
    );
    let a = configmap_name(&SourceId::Profile(ProfileRef {
        image: "aws-img".into(),
        profile: "tech_Preview".into(),
    }));
    let b = configmap_name(&SourceId::Profile(ProfileRef {
        image: "aws-img".into(),
        profile: "tech-preview".into(),
    }));
    assert_ne!(a, b);
    for name in [&a, &b] {
        assert!(name.starts_with("capi-installer-revisions-profile-aws-img-tech-preview-"));
        assert!(
            name.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'),
            "{name}"
        );
    }
}

#[test]
fn a_rollback_request_names_a_kept_older_revision_of_one_source() {
    let aws = log_with(&["a", "b", "c"]);
    let mut gcp = log_with(&["x"]);
    gcp.provider = "gcp".into();
    gcp.source = "ConfigMap gcp".into();
    let logs = vec![
        ("capi-installer-revisions-aws".to_string(), aws.clone()),
        ("capi-installer-revisions-gcp".to_string(), gcp),
    ];
    let (cm, request) = rollback_request(&logs, "aws", 2, T1).unwrap();
    assert_eq!(cm, "capi-installer-revisions-aws");
    assert_eq!(
        request,
        RollbackRequest {
            to: 2,
            from: "c".into(),
            requested_at: T1.into()
        }
    );
    let refused = |provider: &str, to: u32| {
        rollback_request(&logs, provider, to, T1)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused("azure", 1),
        "no revisions of provider azure are recorded (recorded: aws, gcp)"
    );
    assert_eq!(
        refused("aws", 3),
        "ConfigMap aws: revision 3 is the newest; there is nothing to roll back"
    );
    assert_eq!(
        refused("aws", 9),
        "ConfigMap aws: no revision 9 (known: 1, 2, 3)"
    );
    let twice = vec![logs[0].clone(), ("other".to_string(), aws)];
    assert!(
        rollback_request(&twice, "aws", 1, T1)
            .unwrap_err()
            .to_string()
            .contains("several sources")
    );

    let mut log = logs[0].1.clone();
    assert!(!carried_out(&log, &request));
    let Ok(Choice::Serve(hold)) = log.choose("c", Some(&request)) else {
        panic!("served");
    };
    log.served(&hold);
    assert!(carried_out(&log, &request));
}

#[test]
fn a_rollback_keeps_the_newest_crds_and_the_target_s_other_objects() {
    let crd = |name: &str, version: &str| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name}, "spec": {"versions": [{"name": version}]}})
    };
    let deployment = |image: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns"}, "spec": {"image": image}})
    };
    let old = vec![
        crd("a.x.io", "v1"),
        crd("gone.x.io", "v1"),
        deployment("old"),
    ];
    let new = vec![
        crd("a.x.io", "v2"),
        crd("added.x.io", "v1"),
        deployment("new"),
    ];
    let objects = rollback_objects(old, &new);
    assert_eq!(
        objects,
        [
            crd("a.x.io", "v2"),
            crd("added.x.io", "v1"),
            crd("gone.x.io", "v1"),
            deployment("old")
        ]
    );
}

#[test]
fn the_last_good_revision_is_the_held_one_else_the_current_one_while_it_can_be_applied() {
    assert_eq!(
        RevisionLog::new("ConfigMap aws", "aws").last_good(),
        None,
        "a first install"
    );
    let mut log = log_with(&["a", "b"]);
    assert_eq!(log.last_good(), Some(2));
    let n = log.begin("c", Some("v3"), T1);
    assert_eq!(
        log.last_good(),
        Some(2),
        "a content not rolled out yet is not good"
    );
    let hold = log
        .failed(n, "Deployment did not become Available", T1)
        .expect("a hold");
    assert_eq!(log.last_good(), Some(hold.serving));
    for r in &mut log.revisions {
        r.content = false;
    }
    assert_eq!(log.last_good(), None, "its content was not kept");
}
