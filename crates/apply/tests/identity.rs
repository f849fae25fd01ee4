//! Writing as the owner against a real kube-apiserver: with [`Identities`], every write of an owner
//! impersonates the user assigned to it, so the API server authorizes it, and checks the escalation of
//! a role it writes, by that user's RBAC alone; an owner without an identity writes nothing.

mod common;

use capi_apply::{Applier, ApplyAction, ApplyError, Identities, IdentityError, Inventory};
use common::*;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};

const NS: &str = "identity-test";
const USER: &str = "system:serviceaccount:identity-test:writer";

#[tokio::test]
async fn each_owner_writes_as_its_identity_and_an_owner_without_one_writes_nothing() {
    let cp = control_plane(false).await;
    let admin = cp.admin_client().await.unwrap();
    // The identity may write ConfigMaps in its namespace and ClusterRoles, and holds nothing else:
    // a ClusterRole granting Secrets is beyond it.
    let setup = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: identity-test-writer}}\nrules:\n- {{apiGroups: [''], resources: [configmaps], verbs: [get, create, patch, delete]}}\n- {{apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], verbs: [get, create, patch, delete]}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: identity-test-writer}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: identity-test-writer}}\nsubjects: [{{kind: ServiceAccount, name: writer, namespace: {NS}}}]\n"
    );
    for object in docs(&setup) {
        let key = capi_apply::key_of(&object).unwrap();
        let types = object.types.clone().unwrap();
        let (group, version) = types
            .api_version
            .split_once('/')
            .unwrap_or(("", types.api_version.as_str()));
        let plural = format!("{}s", types.kind.to_lowercase());
        let resource = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: types.api_version.clone(),
            kind: types.kind.clone(),
            plural,
        };
        Api::<DynamicObject>::all_with(admin.clone(), &resource)
            .patch(
                &key.name,
                &PatchParams::apply("test").force(),
                &Patch::Apply(&object),
            )
            .await
            .unwrap();
    }

    let client = engine_client(&cp);
    let identities = Identities::new({
        let mut config = cp.admin_config();
        config
            .headers
            .push((http::header::USER_AGENT, http::HeaderValue::from_static(UA)));
        config
    });
    let applier =
        Applier::new(client.clone(), MANAGER, policy()).with_identities(identities.clone());
    let desired = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: mine, namespace: {NS}}}\ndata: {{a: b}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: identity-test-secrets}}\nrules: [{{apiGroups: [''], resources: [secrets], verbs: [get]}}]\n"
    );
    let plan = plan_of(&client, &desired).await;
    let record = recorded(&plan);
    let configmap = plan.objects().find(|o| o.key.kind == "ConfigMap").unwrap();
    let role = plan
        .objects()
        .find(|o| o.key.kind == "ClusterRole")
        .unwrap();

    // No identity assigned to the owner: nothing is sent.
    let mark = cp.audit_events().unwrap().len();
    let err = applier.apply(configmap, None, &record).await.unwrap_err();
    assert!(
        matches!(
            &err,
            ApplyError::Identity {
                source: IdentityError::Unassigned { owner },
                ..
            } if owner == "test"
        ),
        "{err}"
    );
    assert!(
        describe(&our_writes(&cp, mark)).is_empty(),
        "written without an identity"
    );

    // Assigned: the write is the identity's, impersonated.
    identities.assign("test", USER);
    let out = applier.apply(configmap, None, &record).await.unwrap();
    assert_eq!(out.action, ApplyAction::Created);
    let writes = our_writes(&cp, mark);
    let write = writes
        .iter()
        .find(|e| e.object_ref.as_ref().and_then(|o| o.name.as_deref()) == Some("mine"))
        .expect("the ConfigMap's write in the audit log");
    assert_eq!(
        write
            .impersonated_user
            .as_ref()
            .map(|u| u.username.as_str()),
        Some(USER)
    );

    // A role granting what the identity does not hold: the API server refuses it at the dry-run,
    // naming the object and the identity, though the engine's own client (cluster-admin) could write it.
    let err = applier
        .dry_run(role, None, &record)
        .await
        .expect_err("the escalation check refuses the identity");
    let text = err.to_string();
    assert!(
        text.contains("ClusterRole identity-test-secrets")
            && text.contains(USER)
            && text.contains("attempting to grant RBAC permissions not currently held"),
        "{text}"
    );
    let roles: Api<DynamicObject> = Api::all_with(admin.clone(), &role.resource);
    assert!(
        roles
            .get_opt("identity-test-secrets")
            .await
            .unwrap()
            .is_none()
    );

    // Prune deletes through the owner's writer too.
    let writer = applier.writer("test").unwrap();
    let resolver = capi_apply::KindResolver::discover(&client).await.unwrap();
    let mark = cp.audit_events().unwrap().len();
    let gone = capi_apply::prune(
        &writer,
        record.prune_targets(&Inventory::new("test"), &resolver),
        applier.ownership(),
        None,
    )
    .await;
    assert!(gone.deleted.iter().any(|k| k.name == "mine"), "{gone:?}");
    let delete = our_writes(&cp, mark)
        .into_iter()
        .find(|e| e.verb == "delete")
        .expect("the ConfigMap's DELETE in the audit log");
    assert_eq!(
        delete
            .impersonated_user
            .as_ref()
            .map(|u| u.username.as_str()),
        Some(USER)
    );
}
