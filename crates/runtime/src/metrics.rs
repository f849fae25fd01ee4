//! The series of one component (the installer, the controllers): all named `<prefix>_…`, with the
//! component's build info among them, so every binary exports `<prefix>_build_info{version}`.

use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// The sub-registry of a component's series, each named `<prefix>_<name>`, with
/// `<prefix>_build_info{version="<version>"}` registered in it.
pub fn component<'a>(registry: &'a mut Registry, prefix: &str, version: &str) -> &'a mut Registry {
    let sub = registry.sub_registry_with_prefix(prefix);
    sub.register(
        "build",
        "Build information: the binary's version",
        Info::new(vec![("version".to_string(), version.to_string())]),
    );
    sub
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;

    use super::*;

    #[test]
    fn series_carry_the_prefix_and_build_info_the_version() {
        let mut registry = Registry::default();
        let counter = Counter::<u64>::default();
        component(&mut registry, "capi_test", "1.2.3").register(
            "things",
            "Things",
            counter.clone(),
        );
        counter.inc();
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("capi_test_build_info{version=\"1.2.3\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("capi_test_things_total 1\n"), "{text}");
    }
}
